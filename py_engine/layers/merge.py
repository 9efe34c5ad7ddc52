"""Merge layers, which take a list of tensors: Add, Multiply, Average, Maximum, Minimum, Concatenate and Dot.

The elementwise ones broadcast as TF.js does: an input of lower rank gets size-1 axes after its batch axis, so
[batch, 3] and [batch, 4, 3] merge to [batch, 4, 3]. They pass masks on: the output's mask is the AND of the
inputs' masks, as in Keras. (TF.js 4.22's Merge.computeMask skips the last input's mask, a loop-bound bug, and gives
the result an extra leading axis, so there an RNN after a masked Add or Multiply fails.)
"""

import functools

from .. import ops
from ..errors import ShapeError
from .base import Layer, register


class _Merge(Layer):
    takes_list = True


def _broadcast_dim(layer, shapes, a, b):
    if a == b or b == 1:
        return a
    if a == 1:
        return b
    if a is None or b is None:
        return a if b is None else b
    raise ShapeError(f"{layer.name} ({layer.class_name}): input shapes {shapes} do not match")


class _Elementwise(_Merge):
    supports_masking = True

    def compute_output_shape(self, input_shapes):
        batch = {s[0] for s in input_shapes} - {None}
        rank = max(len(s) for s in input_shapes)
        padded = [(1,) * (rank - len(s)) + tuple(s[1:]) for s in input_shapes]
        dims = (
            functools.reduce(lambda a, b: _broadcast_dim(self, input_shapes, a, b), column) for column in zip(*padded)
        )
        return (next(iter(batch)) if len(batch) == 1 else None, *dims)

    def call(self, inputs, training=False):
        rank = max(len(t.shape) for t in inputs)
        return self.merge([ops.reshape(t, (t.shape[0], *(1,) * (rank - len(t.shape)), *t.shape[1:])) for t in inputs])

    def compute_mask(self, inputs, mask=None):
        masks = [m for m in (mask or []) if m is not None]
        return functools.reduce(ops.logical_and, masks) if masks else None


@register
class Add(_Elementwise):
    def merge(self, inputs):
        return functools.reduce(ops.add, inputs)


@register
class Multiply(_Elementwise):
    def merge(self, inputs):
        return functools.reduce(ops.mul, inputs)


@register
class Average(_Elementwise):
    def merge(self, inputs):
        return functools.reduce(ops.add, inputs) * (1 / len(inputs))  # TF.js multiplies by 1/n


@register
class Maximum(_Elementwise):
    def merge(self, inputs):
        return functools.reduce(ops.maximum, inputs)


@register
class Minimum(_Elementwise):
    def merge(self, inputs):
        return functools.reduce(ops.minimum, inputs)


@register
class Concatenate(_Merge):
    supports_masking = True

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def compute_output_shape(self, input_shapes):
        rank = len(input_shapes[0])
        axis = self.axis + rank if self.axis < 0 else self.axis
        if not 0 < axis < rank or any(len(s) != rank for s in input_shapes):
            raise ShapeError(f"{self.name} (Concatenate): axis {self.axis} does not fit input shapes {input_shapes}")
        for d in range(rank):
            dims = {s[d] for s in input_shapes} - {None}
            if d != axis and len(dims) > 1:
                raise ShapeError(
                    f"{self.name} (Concatenate): input shapes {input_shapes} differ on axis {d}, not only on axis {axis}"
                )
        sizes = [s[axis] for s in input_shapes]
        total = None if None in sizes else sum(sizes)
        out = [next(iter({s[d] for s in input_shapes} - {None}), None) for d in range(rank)]
        out[axis] = total
        return tuple(out)

    def call(self, inputs, training=False):
        return ops.concat(list(inputs), self.axis)

    def compute_mask(self, inputs, mask=None):
        """As TF.js: the masks (all True for an input without one), given a last axis of 1 and concatenated like the
        inputs; a step is kept where every part of it is. With axis=-1 that is the AND of the masks; along time,
        the masks follow each other."""
        if mask is None or all(m is None for m in mask):
            return None
        parts = [
            ops.ones((*x.shape[:-1], 1))
            if m is None
            else ops.expand_dims(ops.cast(m, "float32"), -1)
            if m.ndim < x.ndim
            else ops.cast(m, "float32")
            for x, m in zip(inputs, mask)
        ]
        return ops.greater(ops.min(ops.concat(parts, self.axis), -1), 0.5)

    def layer_config(self):
        return {"axis": self.axis}


@register
class Dot(_Merge):
    """The dot product of two inputs of rank 2 or 3 along `axes` (one axis for both, or one each), per example
    (Keras's batch_dot); normalize=True first scales both to unit L2 norm along those axes (with TF.js's epsilon,
    1e-7, under the squared norm). The output has no mask."""

    supports_masking = True

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        valid = isinstance(axes, int) or (
            isinstance(axes, (list, tuple)) and len(axes) == 2 and all(isinstance(a, int) for a in axes)
        )
        if not valid or isinstance(axes, bool):
            raise ValueError(f"{self.name} (Dot): axes must be an int or a pair of ints, got {axes!r}")
        self.axes = list(axes) if isinstance(axes, (list, tuple)) else axes
        self.normalize = bool(normalize)

    def _axes(self, shapes):
        axes = self.axes if isinstance(self.axes, list) else [self.axes, self.axes]
        return [a % len(s) for a, s in zip(axes, shapes)]

    def compute_output_shape(self, input_shapes):
        if len(input_shapes) != 2 or any(len(s) not in (2, 3) for s in input_shapes):
            raise ShapeError(f"{self.name} (Dot): takes 2 inputs of rank 2 or 3, got shapes {input_shapes}")
        (a, b), (s1, s2) = self._axes(input_shapes), input_shapes
        if 0 in (a, b) or (s1[a] is not None and s2[b] is not None and s1[a] != s2[b]):
            raise ShapeError(f"{self.name} (Dot): axes {self.axes} do not pair up the input shapes {input_shapes}")
        out = (*(d for k, d in enumerate(s1) if k != a), *(d for k, d in enumerate(s2[1:], 1) if k != b))
        return out if len(out) > 1 else (*out, 1)

    def call(self, inputs, training=False):
        x, y = inputs
        a, b = self._axes([x.shape, y.shape])
        if self.normalize:
            x, y = _l2_normalize(x, a), _l2_normalize(y, b)
        # As [batch, free_x, k] @ [batch, k, free_y], a rank-2 input getting a size-1 free axis
        x3 = ops.expand_dims(x, 1) if x.ndim == 2 else x if a == 2 else ops.transpose(x, (0, 2, 1))
        y3 = ops.expand_dims(y, 2) if y.ndim == 2 else y if b == 1 else ops.transpose(y, (0, 2, 1))
        out = ops.matmul(x3, y3)
        squeezed = [axis for axis, rank in ((1, x.ndim), (2, y.ndim)) if rank == 2]
        if len(squeezed) == 2:
            return ops.reshape(out, (out.shape[0], 1))
        return ops.squeeze(out, squeezed) if squeezed else out

    def compute_mask(self, inputs, mask=None):
        return None

    def layer_config(self):
        return {"axes": self.axes, "normalize": self.normalize}


def _l2_normalize(x, axis):
    return x / ops.sqrt(ops.maximum(ops.sum(ops.square(x), axis, keepdims=True), 1e-7))
