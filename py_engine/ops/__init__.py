"""The public ops, and the Tensor methods and operators that call them."""

from ..tensor import Tensor
from . import creation, fused, gradients, image, indexing, linalg, math, nn, recurrent, reduce, sequence, shape  # noqa: F401
from .creation import *  # noqa: F403
from .fused import *  # noqa: F403
from .image import *  # noqa: F403
from .indexing import *  # noqa: F403
from .linalg import *  # noqa: F403
from .math import *  # noqa: F403
from .nn import *  # noqa: F403
from .reduce import *  # noqa: F403
from .sequence import *  # noqa: F403
from .shape import *  # noqa: F403

# recurrent's ops stay out of the package namespace: the recurrent layers are their users
__all__ = creation.__all__ + fused.__all__ + image.__all__ + indexing.__all__ + linalg.__all__ + math.__all__
__all__ += nn.__all__
__all__ += reduce.__all__ + sequence.__all__ + shape.__all__


def _reflected(fn):
    def reflected(self, other) -> Tensor:
        return fn(other, self)

    return reflected


def _comparison(fn):
    """== and != with a non-numeric value (None, a string) fall back to Python's identity test."""

    def compare(self, other) -> Tensor:
        if other is None or isinstance(other, (str, bytes)):
            return NotImplemented
        return fn(self, other)

    return compare


_OPERATORS = {
    "__add__": math.add,
    "__radd__": _reflected(math.add),
    "__sub__": math.sub,
    "__rsub__": _reflected(math.sub),
    "__mul__": math.mul,
    "__rmul__": _reflected(math.mul),
    "__truediv__": math.div,
    "__rtruediv__": _reflected(math.div),
    "__floordiv__": math.floor_div,
    "__rfloordiv__": _reflected(math.floor_div),
    "__mod__": math.mod,
    "__rmod__": _reflected(math.mod),
    "__pow__": math.pow,
    "__rpow__": _reflected(math.pow),
    "__matmul__": linalg.matmul,
    "__rmatmul__": _reflected(linalg.matmul),
    "__neg__": math.neg,
    "__abs__": math.abs,
    "__invert__": math.logical_not,
    "__and__": math.logical_and,
    "__rand__": _reflected(math.logical_and),
    "__or__": math.logical_or,
    "__ror__": _reflected(math.logical_or),
    "__lt__": math.less,
    "__le__": math.less_equal,
    "__gt__": math.greater,
    "__ge__": math.greater_equal,
    "__eq__": _comparison(math.equal),
    "__ne__": _comparison(math.not_equal),
}

# Methods: x.op(...) is op(x, ...), for every op that takes one tensor first.
_NOT_METHODS = {"tensor", "scalar", "fill", "zeros", "ones", "arange", "linspace", "eye", "set_seed", "where"}
_NOT_METHODS |= {"concat", "stack", "add_n", "einsum", "ragged_gather"}  # a list first (einsum: an equation)
_NOT_METHODS |= {"random_normal", "random_uniform", "truncated_normal"}
_NOT_METHODS |= {"non_max_suppression", "non_max_suppression_padded", "non_max_suppression_with_score"}  # of 2 inputs
_NOT_METHODS |= {"strided_slice"}  # x[...] is its method form
_NOT_METHODS |= {"ragged_tensor_to_tensor"}  # its first argument is a shape

for _name in __all__:
    if _name not in _NOT_METHODS:
        setattr(Tensor, _name, globals()[_name])
for _name, _fn in _OPERATORS.items():
    setattr(Tensor, _name, _fn)

from .indexing import getitem as _getitem  # noqa: E402

Tensor.__getitem__, Tensor.T = _getitem, property(transpose)  # noqa: F405
