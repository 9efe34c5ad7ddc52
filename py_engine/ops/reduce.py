"""Reductions over axes (sum, mean, max, ... with keepdims), softmax, cumsum, top_k; their gradients."""

__all__ = [
    "all",
    "any",
    "argmax",
    "argmin",
    "cumprod",
    "cumsum",
    "euclidean_norm",
    "log_softmax",
    "logsumexp",
    "lower_bound",
    "max",
    "mean",
    "min",
    "moments",
    "multinomial",
    "prod",
    "search_sorted",
    "softmax",
    "sum",
    "top_k",
    "upper_bound",
]

import builtins
import operator

from .. import dtypes
from ..engine import ENGINE, TAPE
from ..errors import ShapeError
from ..tensor import Tensor
from .check import axes as normalize_axes
from .check import axis_index, dtype_in
from .creation import random_uniform, zeros
from .math import abs as absolute
from .math import cast, exp, less, less_equal, log, minimum, not_equal, sqrt, squared_difference, where
from .operands import as_temporary, release

F32, I32, BOOL = dtypes.float32, dtypes.int32, dtypes.bool_


def _kept_shape(shape, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _axes(op, axis, rank):
    """Sorted non-negative axes; a scalar has none to name (check.axes would let axis 0 through)."""
    if rank == 0 and axis is not None and (not isinstance(axis, (list, tuple)) or len(axis)):
        raise ShapeError(f"{op}: axis {axis} is out of range for a scalar (rank 0); use axis=None")
    return normalize_axes(op, axis, rank)


def _need_rank(op, x):
    if x.rank == 0:
        raise ShapeError(f"{op}: x must have rank >= 1, got a scalar")


def _reduce(op, kernel, allowed, convert_to=None, needs_elements=False):
    def fn(x, axis=None, keepdims=False) -> Tensor:
        temps = []
        try:
            x = as_temporary(x, op, temps)
            if convert_to and x.dtype not in allowed:
                x = as_temporary(x, op, temps, convert_to) if convert_to != BOOL else _nonzero(x, temps)
            dtype_in(op, x, allowed)
            ax = _axes(op, axis, x.rank)
            if needs_elements and builtins.any(x.shape[a] == 0 for a in ax):
                raise ShapeError(f"{op}: cannot reduce a size-0 axis of shape {x.shape} (axis {axis})")
            return ENGINE.run_kernel(kernel, (x,), {"axis": ax, "keepdims": bool(keepdims)})
        finally:
            release(temps)

    fn.__name__ = op
    return fn


def _nonzero(x, temps):
    t = not_equal(x, 0)
    temps.append(t)
    return t


sum = _reduce("sum", "Sum", (F32, I32), convert_to=I32)
mean = _reduce("mean", "Mean", (F32,), convert_to=F32)
prod = _reduce("prod", "Prod", (F32, I32), convert_to=I32)
max = _reduce("max", "Max", (F32, I32), needs_elements=True)
min = _reduce("min", "Min", (F32, I32), needs_elements=True)
all = _reduce("all", "All", (BOOL,), convert_to=BOOL)
any = _reduce("any", "Any", (BOOL,), convert_to=BOOL)


def _arg(op, kernel):
    def fn(x, axis=0) -> Tensor:
        """Index of the extreme value along `axis` (the first one on ties); axis=None: into the flattened x."""
        temps = []
        try:
            x = as_temporary(x, op, temps)
            dtype_in(op, x, (F32, I32))
            ax = None if axis is None else axis_index(op, axis, x.rank)
            if x.rank == 0:
                ax = None  # a scalar is its own extreme
            if (x.size if ax is None else x.shape[ax]) == 0:
                raise ShapeError(f"{op}: axis {axis} of shape {x.shape} is empty")
            return ENGINE.run_kernel(kernel, (x,), {"axis": ax})
        finally:
            release(temps)

    fn.__name__ = op
    return fn


argmax = _arg("argmax", "ArgMax")
argmin = _arg("argmin", "ArgMin")


def _composite(op, x, body):
    """body(x) with x as float32, in a scope so that the intermediate tensors of the ops it chains (and x, if
    converted here) go when it ends."""
    with ENGINE.scope(op) as scope:
        return scope.export(body(as_temporary(x, op, [], F32)))


def _shift(x, ax):
    """max over `ax` (kept dims; 0 where not finite or over an empty axis), made without recording it on the
    tape: subtracting it before exp only avoids overflow and changes no gradient."""
    token = TAPE.set(None)
    try:
        if builtins.any(x.shape[a] == 0 for a in ax):
            return zeros(_kept_shape(x.shape, ax))
        m = max(x, ax, keepdims=True)
        return where(absolute(m) < float("inf"), m, 0.0)
    finally:
        TAPE.reset(token)


def logsumexp(x, axis=None, keepdims=False) -> Tensor:
    """log(sum(exp(x))) over the axes, without overflow; -inf over an empty axis."""

    def body(x):
        ax = _axes("logsumexp", axis, x.rank)
        m = _shift(x, ax)
        out = log(sum(exp(x - m), ax, keepdims=True)) + m
        return out if keepdims else ENGINE.view(out, tuple(d for i, d in enumerate(x.shape) if i not in ax))

    return _composite("logsumexp", x, body)


def moments(x, axis=None, keepdims=False) -> tuple[Tensor, Tensor]:
    """(mean, variance) over the axes."""

    def body(x):
        ax = _axes("moments", axis, x.rank)
        m = mean(x, ax, keepdims=True)
        variance = mean(squared_difference(x, m), ax, keepdims=keepdims)
        return (m if keepdims else ENGINE.view(m, variance.shape)), variance

    return _composite("moments", x, body)


def softmax(logits, axis=-1) -> Tensor:
    """exp(x) / sum(exp(x)) along `axis`, without overflow."""
    temps = []
    try:
        x = as_temporary(logits, "softmax", temps, F32)
        _need_rank("softmax", x)
        return ENGINE.run_kernel("Softmax", (x,), {"axis": axis_index("softmax", axis, x.rank)})
    finally:
        release(temps)


def log_softmax(logits, axis=-1) -> Tensor:
    """x - logsumexp(x) along `axis`."""

    def body(x):
        _need_rank("log_softmax", x)
        ax = (axis_index("log_softmax", axis, x.rank),)
        shifted = x - _shift(x, ax)  # not x - logsumexp(x): that loses the digits of log(sum) next to a large max
        return shifted - log(sum(exp(shifted), ax, keepdims=True))

    return _composite("log_softmax", logits, body)


def _scan(op, kernel, x, axis, exclusive, reverse):
    temps = []
    try:
        x = as_temporary(x, op, temps)
        if x.dtype == BOOL:
            x = as_temporary(x, op, temps, I32)
        _need_rank(op, x)
        attrs = {"axis": axis_index(op, axis, x.rank), "exclusive": bool(exclusive), "reverse": bool(reverse)}
        return ENGINE.run_kernel(kernel, (x,), attrs)
    finally:
        release(temps)


def cumsum(x, axis=0, exclusive=False, reverse=False) -> Tensor:
    """Running sums along `axis`; exclusive leaves out the element itself, reverse runs from the end."""
    return _scan("cumsum", "Cumsum", x, axis, exclusive, reverse)


def cumprod(x, axis=0, exclusive=False, reverse=False) -> Tensor:
    """Running products along `axis` (exclusive starts from 1), as TF.js's cumprod."""
    return _scan("cumprod", "Cumprod", x, axis, exclusive, reverse)


def top_k(x, k=1, sorted=True) -> tuple[Tensor, Tensor]:
    """(values, indices) of the k largest entries along the last axis, largest first; ties: lower index first."""
    temps = []
    try:
        x = as_temporary(x, "top_k", temps)
        dtype_in("top_k", x, (F32, I32))
        _need_rank("top_k", x)
        try:
            k = operator.index(k)
        except TypeError:
            raise TypeError(f"top_k: k must be an int, got {type(k).__name__}") from None
        if not 0 <= k <= x.shape[-1]:
            raise ShapeError(f"top_k: k={k} must be between 0 and the last dimension {x.shape[-1]} of shape {x.shape}")
        return ENGINE.run_kernel("TopK", (x,), {"k": k})
    finally:
        release(temps)


def euclidean_norm(x, axis=None, keepdims=False) -> Tensor:
    """sqrt(sum(x^2)) over the axes (default all), as TF.js's euclideanNorm (TensorFlow's EuclideanNorm)."""
    return _composite("euclidean_norm", x, lambda x: sqrt(sum(x * x, axis, keepdims)))


def search_sorted(sorted_sequence, values, side="left") -> Tensor:
    """For each of values' last-axis entries, how many entries of sorted_sequence's last axis come before it (int32):
    those < value (side "left") or <= value ("right"), as TF.js's searchSorted. The leading axes of the two match
    (each row searches its own sequence); a 1-D sequence serves every row."""
    op = "search_sorted"
    if side not in ("left", "right"):
        raise ValueError(f"{op}: side must be 'left' or 'right', got {side!r}")
    with ENGINE.scope(op) as scope:
        seq, vals = as_temporary(sorted_sequence, op, []), as_temporary(values, op, [])
        if seq.dtype != vals.dtype:
            vals = as_temporary(vals, op, [], seq.dtype)
        if seq.rank == 0 or vals.rank == 0 or (seq.rank > 1 and seq.shape[:-1] != vals.shape[:-1]):
            raise ShapeError(
                f"{op}: sorted_sequence {seq.shape} and values {vals.shape} must have rank >= 1 and the same leading "
                "axes (or a 1-D sequence)"
            )
        seq = ENGINE.view(seq, seq.shape[:-1] + (1, seq.shape[-1]))
        vals = ENGINE.view(vals, vals.shape + (1,))
        before = (less if side == "left" else less_equal)(seq, vals)
        return scope.export(sum(cast(before, I32), -1))


def lower_bound(sorted_sequence, values) -> Tensor:
    """search_sorted(..., "left"): the first position where each value could go, as TF.js's lowerBound."""
    return search_sorted(sorted_sequence, values, "left")


def upper_bound(sorted_sequence, values) -> Tensor:
    """search_sorted(..., "right"): the last position where each value could go, as TF.js's upperBound."""
    return search_sorted(sorted_sequence, values, "right")


def multinomial(logits, num_samples, seed=None, normalized=False) -> Tensor:
    """num_samples class indices (int32) drawn for each row of logits [batch, classes] (or [classes]), each class
    with probability softmax(logits) (or logits itself, when normalized holds probabilities), as TF.js's multinomial.
    Drawn from the engine's generator (pe.set_seed, or seed), so the draws are not TF.js's."""
    op = "multinomial"
    n = operator.index(num_samples)
    if n < 0:
        raise ValueError(f"{op}: num_samples must be >= 0, got {num_samples}")
    with ENGINE.scope(op) as scope:
        x = as_temporary(logits, op, [], F32)
        if x.rank not in (1, 2) or x.shape[-1] == 0:
            raise ShapeError(f"{op}: logits must be [classes] or [batch, classes] with classes >= 1, got {x.shape}")
        rows = x if x.rank == 2 else ENGINE.view(x, (1,) + x.shape)
        cdf = cumsum(rows if normalized else softmax(rows), -1)
        total = ENGINE.view(cdf[:, -1:], (rows.shape[0], 1))
        draws = random_uniform((rows.shape[0], n), seed=seed) * total
        picks = minimum(search_sorted(cdf, draws, "right"), x.shape[-1] - 1)  # a draw rounding up to the total
        return scope.export(picks if x.rank == 2 else ENGINE.view(picks, (n,)))
