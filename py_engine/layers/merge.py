"""Merge layers: Add and Concatenate, which take a list of tensors."""

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


@register
class Add(_Merge):
    def compute_output_shape(self, input_shapes):
        rank = max(len(s) for s in input_shapes)
        padded = [(1,) * (rank - len(s)) + tuple(s) for s in input_shapes]
        return tuple(
            functools.reduce(lambda a, b: _broadcast_dim(self, input_shapes, a, b), dims) for dims in zip(*padded)
        )

    def call(self, inputs, training=False):
        return functools.reduce(ops.add, inputs)


@register
class Concatenate(_Merge):
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

    def layer_config(self):
        return {"axis": self.axis}
