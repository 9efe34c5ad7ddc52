"""Preprocessing layers, with TF.js 4.22's config keys: Rescaling, Resizing, CenterCrop, CategoryEncoding,
RandomWidth and RandomHeight (images are NHWC).

TF.js 4.22 cannot run Resizing, RandomWidth or RandomHeight inside a model (their output shapes lose the batch
axis); here they work in models too.
"""

import numpy as np

from .. import ops
from ..errors import ShapeError
from ..ops.creation import random_generator
from .base import Layer, register


def _images(layer, input_shape):
    if len(input_shape) != 4:
        raise ShapeError(
            f"{layer.name} ({layer.class_name}): expects images [batch, height, width, channels], got "
            f"{tuple(input_shape)}"
        )


def _positive(layer, value, what):
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{layer.name} ({layer.class_name}): {what} must be a positive int, got {value!r}")
    return value


def _interpolation(layer, value):
    if value not in ("bilinear", "nearest"):
        raise ValueError(
            f"{layer.name} ({layer.class_name}): interpolation must be 'bilinear' or 'nearest', got {value!r}"
        )
    return value


def _resize(x, size, interpolation, align_corners=False):
    resize = ops.resize_bilinear if interpolation == "bilinear" else ops.resize_nearest
    return resize(x, size, align_corners=align_corners)


@register
class Rescaling(Layer):
    """x * scale + offset (inputs cast to float32)."""

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale, self.offset = float(scale), float(offset)

    def call(self, x, training=False):
        return ops.cast(x, "float32") * self.scale + self.offset

    def layer_config(self):
        return {"scale": self.scale, "offset": self.offset}


@register
class Resizing(Layer):
    """Images resized to (height, width). As TF.js's layer computes it, without crop_to_aspect_ratio the resize maps
    corner pixels onto corner pixels (align_corners). With crop_to_aspect_ratio the largest centred window of the
    target's aspect ratio is cut out first and then resized without align_corners, as Keras does (TF.js 4.22 only
    switches align_corners off and never crops)."""

    def __init__(self, height, width, interpolation="bilinear", crop_to_aspect_ratio=False, **kwargs):
        super().__init__(**kwargs)
        self.height, self.width = _positive(self, height, "height"), _positive(self, width, "width")
        self.interpolation = _interpolation(self, interpolation)
        self.crop_to_aspect_ratio = bool(crop_to_aspect_ratio)

    def compute_output_shape(self, input_shape):
        _images(self, input_shape)
        return (input_shape[0], self.height, self.width, input_shape[3])

    def call(self, x, training=False):
        if not self.crop_to_aspect_ratio:
            return _resize(x, (self.height, self.width), self.interpolation, align_corners=True)
        h, w = x.shape[1:3]
        crop_h = min(h, round(w * self.height / self.width))
        crop_w = min(w, round(h * self.width / self.height))
        top, left = (h - crop_h) // 2, (w - crop_w) // 2
        window = ops.slice(x, (0, top, left, 0), (-1, crop_h, crop_w, -1))
        return _resize(window, (self.height, self.width), self.interpolation)

    def layer_config(self):
        return {
            "height": self.height,
            "width": self.width,
            "interpolation": self.interpolation,
            "crop_to_aspect_ratio": self.crop_to_aspect_ratio,
        }


def _nearest_crop_indices(size, start, crop):
    """The source rows (or columns) TF.js's cropAndResize(method 'nearest') picks for a box from start/size to
    (start + crop)/size (float32 box corners, double arithmetic, Math.round), as TF.js's CenterCrop asks it."""
    lo, hi = float(np.float32(start / size)), float(np.float32((start + crop) / size))
    if crop == 1:
        return [int(np.floor(0.5 * (lo + hi) * (size - 1) + 0.5))]
    scale = (hi - lo) * (size - 1) / (crop - 1)
    return [int(np.floor(lo * (size - 1) + k * scale + 0.5)) for k in range(crop)]


@register
class CenterCrop(Layer):
    """The centre (height, width) of each image, as TF.js 4.22 computes it: a nearest-neighbour crop whose window
    starts floor((size - target) / 2) in (TF.js starts a width 1 larger than the target at column 1); an image
    smaller than the target on either axis is instead resized to it, whole, by bilinear interpolation."""

    def __init__(self, height, width, **kwargs):
        super().__init__(**kwargs)
        self.height, self.width = _positive(self, height, "height"), _positive(self, width, "width")

    def compute_output_shape(self, input_shape):
        _images(self, input_shape)
        return (input_shape[0], self.height, self.width, input_shape[3])

    def call(self, x, training=False):
        h, w = x.shape[1:3]
        top = (h - self.height) // 2 if h != self.height else 0
        left = (w - self.width) // 2 if w != self.width else 0
        if w != self.width and left == 0:
            left = 1  # TF.js's quirk, kept so models predict as they do there
        if top < 0 or left < 0:
            return ops.resize_bilinear(x, (self.height, self.width))
        rows = _nearest_crop_indices(h, top, self.height)
        columns = _nearest_crop_indices(w, left, self.width)
        return ops.gather(ops.gather(x, rows, axis=1), columns, axis=2)

    def layer_config(self):
        return {"height": self.height, "width": self.width}


_OUTPUT_MODES = {
    "multi_hot": "multi_hot",
    "multiHot": "multi_hot",
    "one_hot": "one_hot",
    "oneHot": "one_hot",
    "count": "count",
}


@register
class CategoryEncoding(Layer):
    """Integer ids in [0, num_tokens) as vectors of num_tokens: "multi_hot" ([batch, k] ids -> 1 where an id
    occurs), "count" (how often each occurs) or "one_hot" ([batch] or [batch, 1] ids). TF.js's "tf_idf" needs
    per-call weights, which a model cannot pass, so it is refused."""

    def __init__(self, num_tokens, output_mode="multi_hot", **kwargs):
        super().__init__(**kwargs)
        self.num_tokens = _positive(self, num_tokens, "num_tokens")
        if output_mode not in _OUTPUT_MODES:
            raise ValueError(
                f"{self.name} (CategoryEncoding): output_mode must be 'multi_hot', 'one_hot' or 'count', "
                f"got {output_mode!r}"
            )
        self.output_mode = _OUTPUT_MODES[output_mode]

    def compute_output_shape(self, input_shape):
        one_hot = self.output_mode == "one_hot"
        if (one_hot and not (len(input_shape) == 1 or (len(input_shape) == 2 and input_shape[1] == 1))) or (
            not one_hot and len(input_shape) != 2
        ):
            wanted = "[batch] or [batch, 1]" if one_hot else "[batch, ids]"
            raise ShapeError(
                f"{self.name} (CategoryEncoding): {self.output_mode} takes ids of shape {wanted}, got "
                f"{tuple(input_shape)}"
            )
        return (input_shape[0], self.num_tokens)

    def call(self, x, training=False):
        ids = ops.cast(x, "int32")
        values = ids.numpy()  # read back, as TF.js does, so an id out of range is an error and not a silent zero row
        if values.size and (values.min() < 0 or values.max() >= self.num_tokens):
            raise ValueError(
                f"{self.name} (CategoryEncoding): ids must be in [0, {self.num_tokens}), got values "
                f"from {values.min()} to {values.max()}"
            )
        encoded = ops.one_hot(ops.reshape(ids, (ids.shape[0], -1)), self.num_tokens)  # [batch, ids, tokens]
        return ops.sum(encoded, 1) if self.output_mode == "count" else ops.max(encoded, 1)

    def layer_config(self):
        return {"num_tokens": self.num_tokens, "output_mode": self.output_mode}


class _RandomStretch(Layer):
    """What RandomWidth and RandomHeight share: while training, each batch is resized along one axis by a factor
    drawn uniformly from [1 + lower, 1 + upper]; at inference the images pass through (as Keras; TF.js 4.22 resizes
    at inference too)."""

    axis = None  # 1 (height) or 2 (width)

    def __init__(self, factor, interpolation="bilinear", seed=None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(factor, (list, tuple)) and len(factor) == 2:
            lower, upper = float(factor[0]), float(factor[1])
        elif isinstance(factor, (int, float)) and not isinstance(factor, bool) and factor > 0:
            lower, upper = -float(factor), float(factor)
        else:
            raise ValueError(
                f"{self.name} ({self.class_name}): factor must be a positive number or (lower, upper), got {factor!r}"
            )
        if lower < -1 or upper < -1 or upper < lower:
            raise ValueError(
                f"{self.name} ({self.class_name}): factor's bounds must be >= -1 and lower <= upper, got {factor!r}"
            )
        self.factor, self.bounds = factor, (lower, upper)
        self.interpolation = _interpolation(self, interpolation)
        self.seed = seed
        self._rng = None if seed is None else np.random.default_rng(seed)

    def compute_output_shape(self, input_shape):
        _images(self, input_shape)
        return tuple(None if k == self.axis else d for k, d in enumerate(input_shape))

    def call(self, x, training=False):
        if not training:
            return x
        rng = self._rng or random_generator(None)
        stretch = rng.uniform(1 + self.bounds[0], 1 + self.bounds[1])
        size = list(x.shape[1:3])
        size[self.axis - 1] = max(1, round(stretch * size[self.axis - 1]))
        return _resize(x, tuple(size), self.interpolation)

    def layer_config(self):
        factor = list(self.factor) if isinstance(self.factor, (list, tuple)) else self.factor
        return {"factor": factor, "interpolation": self.interpolation, "seed": self.seed}


@register
class RandomWidth(_RandomStretch):
    axis = 2


@register
class RandomHeight(_RandomStretch):
    axis = 1
