"""Conformance cases: conv2d_transpose (the Conv2DBackpropInput kernel run forwards, as Conv2DTranspose layers do)
and its gradients (Conv2D for the input, Conv2DBackpropFilter for the filter).
"""

from ...autograd import grads
from ...layers.convolutional_variants import conv2d_transpose, deconv_length
from .case import Case, rand

TOLERANCE = {"rtol": 1e-4, "atol": 1e-4}
# label -> (x shape, filter [h, w, out, in], strides, padding)
GEOMETRIES = {
    "stride2-same": ((2, 4, 5, 3), (3, 3, 4, 3), (2, 2), "same"),
    "stride2-valid": ((1, 3, 4, 2), (3, 3, 5, 2), (2, 2), "valid"),
    "window-below-stride": ((2, 3, 3, 3), (1, 2, 3, 3), (3, 3), "valid"),
    "uneven": ((1, 5, 3, 4), (2, 3, 6, 4), (1, 2), "same"),
    "many-channels": ((1, 6, 7, 9), (3, 3, 70, 9), (2, 2), "same"),
}
WITH_GRADIENTS = ["stride2-same", "window-below-stride", "uneven"]


def _output_hw(x_shape, f_shape, strides, padding):
    return tuple(deconv_length(n, s, k, padding) for n, s, k in zip(x_shape[1:3], strides, f_shape[:2]))


def _cases(seed):
    cases = []
    for k, (label, (x_shape, f_shape, strides, padding)) in enumerate(GEOMETRIES.items()):
        hw = _output_hw(x_shape, f_shape, strides, padding)
        x, f = rand(x_shape, seed + k, -1, 1), rand(f_shape, seed + 50 + k, -1, 1)

        def forward(x, f, hw=hw, strides=strides, padding=padding):
            return conv2d_transpose(x, f, hw, strides, padding)

        cases.append(Case(f"conv2d_transpose/{label}", forward, [x, f], **TOLERANCE))
        if label in WITH_GRADIENTS:
            w = rand((x_shape[0], *hw, f_shape[2]), seed + 100 + k, -1, 1)
            fn = grads(lambda x, f, w, forward=forward: (forward(x, f) * w).sum())
            cases.append(
                Case(f"conv2d_transpose/grad-{label}", lambda *ts, fn=fn: tuple(fn(*ts)), [x, f, w], **TOLERANCE)
            )
    return cases


CASES = _cases(5000)
