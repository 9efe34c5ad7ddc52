"""An image classifier's GPU path, from an image's RGBA words to the logits: the page's Classify panel runs it, and
the server (app/classifier_pipelines.py) plans the pipelines it compiles, so both take their shaders from this one
definition."""

import numpy as np

from .engine import ENGINE
from .ops.fused import fused_conv2d
from .ops.image import resize_bilinear
from .ops.operands import tensor


class ImageClassifier:
    """`model` (NHWC float32 input) behind its preprocessing: metadata["input"] gives the input shape and the
    per-channel mean and std of pixels scaled to 0..1."""

    def __init__(self, model, metadata):
        self.model = model
        spec = metadata["input"]
        self.size = tuple(spec["shape"][1:3])
        mean, std = np.float32(spec["mean"]), np.float32(spec["std"])
        # (x / 255 - mean) / std per channel is a 1x1 convolution with a diagonal filter and a bias: the model's own
        # GEMM pipeline runs it, where two broadcast ops would compile two more (about 130 ms of warm-up on
        # SwiftShader). Its constants live on the device, so a classification uploads its pixels and nothing else.
        self.scale = tensor(np.diag(1 / (255 * std)).reshape(1, 1, 3, 3))
        self.shift = tensor(-mean / std)
        # The input's shape is fixed, so the forward pass is recorded at the first image and then replayed (one GPU
        # call; on wasm the recorded kernel calls), without Python per op (preprocessing stays uncaptured: image
        # sizes vary).
        self.forward = ENGINE.capture(self.logits)

    @property
    def is_disposed(self):
        return self.model.is_disposed or self.scale.is_disposed or self.shift.is_disposed

    def dispose(self):
        self.forward.dispose()
        self.model.dispose()
        ENGINE.dispose([self.scale, self.shift])

    def preprocess(self, pixels):
        """int32 [h, w, 3] -> the model's float32 [1, height, width, 3] input."""
        x = resize_bilinear(pixels.cast("float32"), self.size, half_pixel_centers=True)
        return fused_conv2d(x.expand_dims(0), self.scale, self.shift)

    def logits(self, x):
        """The forward pass uncaptured: float32 [1, classes]."""
        return self.model.predict(x)

    def run(self, packed):
        """The whole GPU path, from the uploaded RGBA words (int32 [h, w]) to the logits."""
        from .browser import unpack_pixels  # loads on first use, as py_engine.browser does

        return self.forward(self.preprocess(unpack_pixels(packed)))


async def load_outline(model_json):
    """The model at `model_json` without its weights (zeros on the host, nothing downloaded but model.json), folded as
    the classifier's model is: what a dry run of the path needs to compile, or list, the same pipelines."""
    from .models.loading import load_layers_model  # py_engine.models loads on first use

    with ENGINE.on_backend("numpy"):
        outline = await load_layers_model(model_json, weights=False)
        try:
            outline.fold_batch_norms(release_unfolded=True)  # the plan's fused kernels, as the model's will be
        except BaseException:
            outline.dispose()
            raise
    return outline
