"""Conformance cases: the ops issue 39's layers are built from, and their gradients. conv2d_transpose (the
Conv2DBackpropInput kernel run forwards, as Conv2DTranspose does; Conv2D and Conv2DBackpropFilter for its gradients),
and conv3d, conv3d_transpose, max_pool3d and avg_pool3d (2-D kernels per depth tap).
"""

from ...autograd import grads
from ...layers.convolutional3d import avg_pool3d, conv3d, conv3d_transpose, max_pool3d, triple
from ...layers.convolutional_variants import conv2d_transpose, deconv_length
from ...window_output_size import conv_output_length
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


def _with_gradients(label, forward, inputs, out_shape, seed):
    """The forward case and one of the gradients of sum(forward(*inputs) * w) with respect to every input."""
    w = rand(out_shape, seed, -1, 1)
    fn = grads(lambda *ts, forward=forward: (forward(*ts[:-1]) * ts[-1]).sum())
    return [
        Case(label, forward, inputs, **TOLERANCE),
        Case(label.replace("/", "/grad-", 1), lambda *ts, fn=fn: tuple(fn(*ts)), [*inputs, w], **TOLERANCE),
    ]


def _cases_3d(seed):
    x = rand((2, 5, 4, 6, 3), seed, -1, 1)
    cases = []
    for k, (window, strides, padding, dilations) in enumerate(
        [((3, 3, 3), (1, 1, 1), "same", 1), ((2, 3, 2), (2, 1, 2), "valid", 1), ((2, 2, 2), 1, "valid", (2, 1, 1))]
    ):
        f = rand((*window, 3, 5), seed + 10 + k, -1, 1)

        def forward(x, f, strides=strides, padding=padding, dilations=dilations):
            return conv3d(x, f, strides, padding, dilations)

        dhw = [
            conv_output_length(*a, padding, s, d)
            for a, s, d in zip(zip(x.shape[1:4], window), triple(strides, "", ""), triple(dilations, "", ""))
        ]
        out = (x.shape[0], *dhw, 5)
        cases += _with_gradients(f"conv3d/{padding}-{k}", forward, [x, f], out, seed + 20 + k)
    for k, (window, strides, padding) in enumerate([((3, 2, 2), (2, 1, 2), "same"), ((2, 3, 1), (3, 2, 1), "valid")]):
        small = rand((1, 3, 2, 4, 3), seed + 30 + k, -1, 1)
        f = rand((*window, 4, 3), seed + 40 + k, -1, 1)
        dhw = tuple(deconv_length(n, s, w, padding) for n, s, w in zip(small.shape[1:4], strides, window))

        def forward(x, f, dhw=dhw, strides=strides, padding=padding):
            return conv3d_transpose(x, f, dhw, strides, padding)

        cases += _with_gradients(f"conv3d_transpose/{padding}-{k}", forward, [small, f], (1, *dhw, 4), seed + 50 + k)
    for name, pool in (("max_pool3d", max_pool3d), ("avg_pool3d", avg_pool3d)):
        for k, (window, strides, padding) in enumerate(
            [((2, 2, 2), (2, 2, 2), "valid"), ((3, 2, 3), (2, 1, 2), "same")]
        ):

            def forward(x, pool=pool, window=window, strides=strides, padding=padding):
                return pool(x, window, strides, padding)

            dhw = [conv_output_length(n, w, padding, s) for n, w, s in zip(x.shape[1:4], window, strides)]
            out = (x.shape[0], *dhw, x.shape[4])
            cases += _with_gradients(f"{name}/{padding}-{k}", forward, [x], out, seed + 60 + k)
    return cases


CASES = _cases(5000) + _cases_3d(6000)
