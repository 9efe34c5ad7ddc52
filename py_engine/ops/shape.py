"""Shape ops. reshape, expand_dims, squeeze and flatten are views: they share the data buffer."""

__all__ = ["broadcast_to", "expand_dims", "flatten", "reshape", "squeeze"]

from ..autograd import register_gradient
from ..engine import ENGINE
from ..errors import ShapeError
from ..tensor import Tensor
from .check import axis_index, broadcast_shapes
from .math import unbroadcast


def _tensor(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    x._live_buffer()
    return x


def reshape(x, shape):
    """The same values in a new shape; one dimension may be -1 (inferred). Shares x's data."""
    x = _tensor("reshape", x)
    shape = (shape,) if isinstance(shape, int) else tuple(int(d) for d in shape)
    unknown = [i for i, d in enumerate(shape) if d == -1]
    known = 1
    for d in shape:
        if d != -1:
            if d < 0:
                raise ShapeError(f"reshape: shape {shape} has a negative dimension")
            known *= d
    if len(unknown) > 1:
        raise ShapeError(f"reshape: shape {shape} has more than one -1")
    if unknown:
        if known == 0 or x.size % known:
            raise ShapeError(f"reshape: cannot infer the -1 in {shape} for a tensor of {x.size} elements")
        shape = shape[: unknown[0]] + (x.size // known,) + shape[unknown[0] + 1 :]
    elif known != x.size:
        raise ShapeError(f"reshape: cannot reshape {x.shape} ({x.size} elements) into {shape} ({known} elements)")
    return ENGINE.view(x, shape)


def expand_dims(x, axis=0):
    x = _tensor("expand_dims", x)
    axis = axis_index("expand_dims", axis, x.rank + 1)
    return ENGINE.view(x, x.shape[:axis] + (1,) + x.shape[axis:])


def squeeze(x, axis=None):
    """Drop size-1 dimensions (all of them, or those in `axis`)."""
    x = _tensor("squeeze", x)
    if axis is None:
        drop = {i for i, d in enumerate(x.shape) if d == 1}
    else:
        drop = {axis_index("squeeze", a, x.rank) for a in (axis if isinstance(axis, (list, tuple)) else [axis])}
        for a in drop:
            if x.shape[a] != 1:
                raise ShapeError(f"squeeze: axis {a} of shape {x.shape} has size {x.shape[a]}, not 1")
    return ENGINE.view(x, tuple(d for i, d in enumerate(x.shape) if i not in drop))


def flatten(x):
    x = _tensor("flatten", x)
    return ENGINE.view(x, (x.size,))


def broadcast_to(x, shape):
    """x repeated along new leading axes and size-1 axes to fill `shape` (NumPy rules)."""
    x = _tensor("broadcast_to", x)
    shape = tuple(int(d) for d in shape)
    if len(shape) < x.rank or broadcast_shapes("broadcast_to", x.shape, shape) != shape:
        raise ShapeError(f"broadcast_to: cannot broadcast shape {x.shape} to {shape}")
    if shape == x.shape:
        return ENGINE.view(x, shape)
    return ENGINE.run_kernel("BroadcastTo", (x,), {"shape": shape})


register_gradient("BroadcastTo", lambda dy, ins, outs, attrs: unbroadcast(dy, ins[0].shape))
register_gradient("Reshape", lambda dy, ins, outs, attrs: reshape(dy, attrs["shape"]))
