"""Matrix multiplication with broadcast batch dimensions, and its gradient."""

__all__ = ["matmul"]

from ..engine import ENGINE
from ..errors import ShapeError
from .check import broadcast_shapes, dtype_in
from .convert import binary_operands, release
from .math import NUMERIC


def matmul(a, b, transpose_a=False, transpose_b=False):
    """a @ b over the last two axes; leading (batch) axes broadcast. Both need rank >= 2."""
    a, b, temps = binary_operands("matmul", a, b)
    try:
        dtype_in("matmul", a, NUMERIC, "a")
        for name, t in (("a", a), ("b", b)):
            if t.rank < 2:
                raise ShapeError(
                    f"matmul: {name} must have rank >= 2, got shape {t.shape}; add an axis with expand_dims"
                )
        k_a = a.shape[-2] if transpose_a else a.shape[-1]
        k_b = b.shape[-1] if transpose_b else b.shape[-2]
        if k_a != k_b:
            raise ShapeError(
                f"matmul: inner dimensions differ: a {a.shape}{' (transposed)' if transpose_a else ''} has {k_a}, "
                f"b {b.shape}{' (transposed)' if transpose_b else ''} has {k_b}"
            )
        broadcast_shapes("matmul (batch dimensions)", a.shape[:-2], b.shape[:-2])
        attrs = {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)}
        return ENGINE.run_kernel("BatchMatMul", (a, b), attrs)
    finally:
        release(temps)
