"""Matrix multiplication with broadcast batch dimensions; einsum and matrix_band_part, written with it and other
ops."""

__all__ = ["einsum", "matmul", "matrix_band_part"]

import math
import operator

from ..engine import ENGINE
from ..errors import ShapeError
from ..tensor import Tensor
from .check import broadcast_shapes, dtype_in
from .math import NUMERIC, where
from .operands import as_temporary, binary_operands, release
from .operands import tensor as host_tensor
from .reduce import sum as reduce_sum
from .shape import reshape, transpose


def matmul(a, b, transpose_a=False, transpose_b=False) -> Tensor:
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


def matrix_band_part(x, num_lower, num_upper) -> Tensor:
    """x with the entries of its last two axes outside a band set to 0: those more than num_lower below the diagonal
    or num_upper above it (a negative number keeps that whole triangle), as TF.js's linalg.bandPart."""
    op = "matrix_band_part"
    lower, upper = operator.index(num_lower), operator.index(num_upper)
    with ENGINE.scope(op) as scope:
        x = as_temporary(x, op, [])
        if x.rank < 2:
            raise ShapeError(f"{op}: x must have rank >= 2, got shape {x.shape}")
        m, n = x.shape[-2:]
        band = [[(lower < 0 or i - j <= lower) and (upper < 0 or j - i <= upper) for j in range(n)] for i in range(m)]
        return scope.export(where(host_tensor(band, "bool", (m, n)), x, 0))


def _einsum_terms(equation, count):
    """([letters of each operand], output letters), checked."""
    if not isinstance(equation, str) or "->" not in equation:
        raise ValueError(f"einsum: the equation must name the output, as 'ij,jk->ik', got {equation!r}")
    given, output = equation.replace(" ", "").split("->")
    terms = given.split(",")
    if len(terms) != count or count not in (1, 2):
        raise ValueError(f"einsum: {equation!r} names {len(terms)} operands, {count} given (1 or 2 are supported)")
    for term in [*terms, output]:
        if not all(c.isalpha() for c in term) or len(set(term)) != len(term):
            raise ValueError(f"einsum: {term!r} in {equation!r} must be distinct letters (no '...', no repeats)")
    if set(output) - set("".join(terms)):
        raise ValueError(f"einsum: the output {output!r} names letters no operand has")
    return terms, output


def einsum(equation, *operands) -> Tensor:
    """Sums of products over the letters the output leaves out, as TF.js's einsum ('ij,jk->ik', 'bij->bji', ...):
    one or two operands, distinct letters in each. Two operands run as one batched matmul."""
    op = "einsum"
    terms, output = _einsum_terms(equation, len(operands))
    with ENGINE.scope(op) as scope:
        tensors = [as_temporary(t, op, []) for t in operands]
        sizes = {}
        for term, t in zip(terms, tensors):
            if len(term) != t.rank:
                raise ShapeError(f"einsum: {term!r} has {len(term)} letters for an operand of shape {t.shape}")
            for letter, d in zip(term, t.shape):
                if sizes.setdefault(letter, d) != d:
                    raise ShapeError(f"einsum: letter {letter!r} has sizes {sizes[letter]} and {d}")
        # a letter only one operand has and the output lacks is summed away first
        for k, (term, t) in enumerate(zip(terms, tensors)):
            others = "".join(terms[:k] + terms[k + 1 :]) + output
            gone = [a for a, letter in enumerate(term) if letter not in others]
            if gone:
                tensors[k] = reduce_sum(t, gone)
                terms[k] = "".join(letter for letter in term if letter in others)
        if len(tensors) == 1:
            result, letters = tensors[0], terms[0]
        else:
            (a, b), (ta, tb) = tensors, terms
            batch = [c for c in ta if c in tb and c in output]
            summed = [c for c in ta if c in tb and c not in output]
            free_a, free_b = [c for c in ta if c not in tb], [c for c in tb if c not in ta]

            def size(letters):
                return math.prod(sizes[c] for c in letters)

            a = reshape(transpose(a, [ta.index(c) for c in batch + free_a + summed]), (size(batch), size(free_a), -1))
            b = reshape(transpose(b, [tb.index(c) for c in batch + summed + free_b]), (size(batch), -1, size(free_b)))
            letters = "".join(batch + free_a + free_b)
            result = reshape(matmul(a, b), tuple(sizes[c] for c in letters))
        return scope.export(transpose(result, [letters.index(c) for c in output]))
