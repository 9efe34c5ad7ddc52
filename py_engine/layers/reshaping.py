"""Reshaping layers, as TF.js 4.22 runs them: RepeatVector, Permute, Masking, Cropping2D, UpSampling2D.

Cropping2D and UpSampling2D take `data_format` "channels_last" (NHWC, the default) or "channels_first" (NCHW), as
TF.js does; channels_first inputs are transposed to NHWC and back.
"""

from .. import ops
from ..errors import ShapeError
from .base import Layer, pair, register


def data_format_of(data_format, layer):
    """'channels_last' or 'channels_first' from a Keras/TF.js config value (None means channels_last)."""
    value = {None: "channels_last", "channelsLast": "channels_last", "channelsFirst": "channels_first"}.get(
        data_format, data_format
    )
    if value not in ("channels_last", "channels_first"):
        raise ValueError(f"{layer}: data_format must be 'channels_last' or 'channels_first', got {data_format!r}")
    return value


def rank_is(layer, shape, rank, what):
    if len(shape) != rank:
        raise ShapeError(f"{layer.name} ({layer.class_name}): expects inputs of rank {rank} ({what}), got {shape}")


@register
class RepeatVector(Layer):
    """[batch, features] -> [batch, n, features]: the input repeated n times."""

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            raise ValueError(f"{self.name} (RepeatVector): n must be a positive int, got {n!r}")
        self.n = n

    def compute_output_shape(self, input_shape):
        rank_is(self, input_shape, 2, "[batch, features]")
        return (input_shape[0], self.n, input_shape[1])

    def call(self, x, training=False):
        return ops.tile(ops.expand_dims(x, 1), (1, self.n, 1))

    def layer_config(self):
        return {"n": self.n}


@register
class Permute(Layer):
    """The non-batch axes reordered: dims is a permutation of 1..rank-1 (the batch axis, 0, stays first)."""

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        dims = list(dims) if isinstance(dims, (list, tuple)) else None
        if dims is None or sorted(dims) != list(range(1, len(dims) + 1)):
            raise ValueError(
                f"{self.name} (Permute): dims must be a permutation of 1..n (the batch axis 0 stays), got {dims!r}"
            )
        self.dims = tuple(dims)

    def compute_output_shape(self, input_shape):
        rank_is(self, input_shape, len(self.dims) + 1, f"dims {list(self.dims)} permute {len(self.dims)} axes")
        return (input_shape[0], *(input_shape[d] for d in self.dims))

    def call(self, x, training=False):
        return ops.transpose(x, (0, *self.dims))

    def layer_config(self):
        return {"dims": list(self.dims)}


@register
class Masking(Layer):
    """Masks the steps whose features all equal mask_value: they become zeros, and the output carries the mask
    [batch, time] (True where a step has a feature that differs), which masking layers downstream use."""

    supports_masking = True

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = float(mask_value)

    def _kept(self, x, keepdims):
        return ops.any(ops.not_equal(x, self.mask_value), -1, keepdims=keepdims)

    def call(self, x, training=False):
        return x * ops.cast(self._kept(x, True), x.dtype)

    def compute_mask(self, inputs, mask=None):
        return self._kept(inputs, False)

    def layer_config(self):
        return {"mask_value": self.mask_value}


def _count_pairs(value, layer, what):
    """An int, (rows, columns) or ((top, bottom), (left, right)) of non-negative ints as two pairs."""

    def count(v):
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    if count(value):
        return ((value, value), (value, value))
    if isinstance(value, (list, tuple)) and len(value) == 2:
        if all(count(v) for v in value):
            return ((value[0], value[0]), (value[1], value[1]))
        if all(isinstance(v, (list, tuple)) and len(v) == 2 and all(map(count, v)) for v in value):
            return tuple(tuple(v) for v in value)
    raise ValueError(
        f"{layer}: {what} must be an int, (rows, columns) or ((top, bottom), (left, right)) of non-negative ints, "
        f"got {value!r}"
    )


class _Image2D(Layer):
    """What Cropping2D and UpSampling2D share: NHWC or NCHW inputs, computed on NHWC."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format_of(data_format, self.name)

    def _hw_axes(self):
        return (2, 3) if self.data_format == "channels_first" else (1, 2)

    def compute_output_shape(self, input_shape):
        rank_is(self, input_shape, 4, "NCHW" if self.data_format == "channels_first" else "NHWC")
        out = list(input_shape)
        for axis, k in zip(self._hw_axes(), (0, 1)):
            out[axis] = None if input_shape[axis] is None else self.new_size(input_shape[axis], k)
        if any(d is not None and d <= 0 for d in out[1:]):
            raise ShapeError(f"{self.name} ({self.class_name}): leaves nothing of inputs of shape {input_shape}")
        return tuple(out)

    def call(self, x, training=False):
        if self.data_format == "channels_first":
            return ops.transpose(self.call_nhwc(ops.transpose(x, (0, 2, 3, 1))), (0, 3, 1, 2))
        return self.call_nhwc(x)


@register
class Cropping2D(_Image2D):
    """Rows and columns cut off each image's edges: cropping is an int, (rows, columns) or
    ((top, bottom), (left, right))."""

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        self.cropping = _count_pairs(cropping, self.name, "cropping")

    def new_size(self, size, k):
        return size - sum(self.cropping[k])

    def call_nhwc(self, x):
        (top, bottom), (left, right) = self.cropping
        _, h, w, _ = x.shape
        return ops.slice(x, (0, top, left, 0), (-1, h - top - bottom, w - left - right, -1))

    def layer_config(self):
        return {"cropping": [list(p) for p in self.cropping], "data_format": self.data_format}


@register
class UpSampling2D(_Image2D):
    """Each image enlarged size=(rows, columns) times: "nearest" repeats pixels; "bilinear" samples as TF.js
    (tf.image.resizeBilinear without align_corners or half-pixel centres, so the last rows and columns repeat the
    edge instead of blending it)."""

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(data_format, **kwargs)
        self.size = pair(size, "size", self.name)
        if interpolation not in ("nearest", "bilinear"):
            raise ValueError(
                f"{self.name} (UpSampling2D): interpolation must be 'nearest' or 'bilinear', got {interpolation!r}"
            )
        self.interpolation = interpolation

    def new_size(self, size, k):
        return size * self.size[k]

    def call_nhwc(self, x):
        resize = ops.resize_nearest if self.interpolation == "nearest" else ops.resize_bilinear
        return resize(x, (x.shape[1] * self.size[0], x.shape[2] * self.size[1]))

    def layer_config(self):
        return {"size": list(self.size), "data_format": self.data_format, "interpolation": self.interpolation}
