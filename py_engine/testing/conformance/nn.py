"""Conformance cases: conv2d and depthwise_conv2d, and their gradients (the backprop kernels); avg_pool and max_pool,
and their gradients (pe.grad with an explicit dy, so no reduction kernel is needed); the ops the convolution and
pooling layers add (conv2d_transpose, the 3-D ops), and their gradients.

Conv2D cases also run as "...-tiled" (the real-GPU variant, see linalg.py); depthwise kernels have one variant.
"""

import numpy as np

from ... import ops
from ...autograd import grad, grads
from ...layers.convolutional3d import triple
from ...ops.nn import avg_pool3d, conv2d_transpose, conv3d, conv3d_transpose, max_pool3d
from ...window_output_size import conv_output_length, deconv_length
from .case import FLOAT_EDGES, Case, rand, with_edges
from .linalg import both_variants

# label -> (x shape, filter's (h, w), strides, padding, dilations)
GEOMETRIES = {
    "stride1-same": ((2, 9, 11, 3), (3, 3), 1, "same", 1),
    "stride2-valid": ((1, 10, 9, 4), (3, 2), 2, "valid", 1),
    "stride2-same-even": ((2, 8, 10, 5), (3, 3), 2, "same", 1),
    "explicit-pad-stride2-dilated": ((2, 13, 12, 5), (3, 3), 2, ((1, 2), (0, 3)), 2),
    "1x1": ((1, 8, 8, 3), (1, 1), 1, "valid", 1),
    "1x1-stride2": ((2, 7, 9, 6), (1, 1), 2, "same", 1),
    "uneven-strides-dilations": ((1, 17, 15, 6), (5, 3), (2, 3), "same", (2, 1)),
    "int-padding": ((1, 6, 7, 2), (2, 4), 1, 1, 1),
    "filter-covers-input": ((1, 5, 4, 3), (5, 4), 1, "valid", 1),
    "batch0": ((0, 5, 5, 2), (3, 3), 1, "same", 1),
    "large": ((2, 33, 35, 6), (3, 3), 1, "same", 1),  # many workgroups along pixels and channels
    "long": ((2, 40, 41, 3), (3, 3), 1, "same", 1),  # a filter gradient long enough to be split into slices
    # depthwise with multiplier 1 and channels in fours takes the 4-channels-per-thread shader
    "channels-in-fours": ((2, 11, 10, 12), (5, 5), 2, "same", 1),
    # EfficientNet's 1x1 convolutions: few input channels, many pixels; a register-blocked thread steps through 16
    # output pixels, across image rows (13 pixels) and into the next image (195 pixels an image)
    "1x1-rows-wrap": ((2, 15, 13, 8), (1, 1), 1, "valid", 1),
}
WITH_GRADIENTS = ["stride1-same", "explicit-pad-stride2-dilated", "1x1-stride2", "uneven-strides-dilations", "long"]
TOLERANCE = {"rtol": 1e-4, "atol": 1e-4}  # long float32 reductions


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def output_hw(x_shape, window, strides, padding, dilations):
    """The output's (height, width), as the op resolves the padding."""
    out = []
    for d, (n, k, s, r) in enumerate(zip(x_shape[1:3], window, _pair(strides), _pair(dilations))):
        extent = (k - 1) * r + 1
        if padding == "same":
            out.append(-(-n // s))
            continue
        pad = 0 if padding == "valid" else 2 * padding if isinstance(padding, int) else sum(padding[d])
        out.append((n + pad - extent) // s + 1)
    return tuple(out)


def _conv(op, strides, padding, dilations):
    return lambda x, f: op(x, f, strides, padding, dilations)


def _conv_grads(op, strides, padding, dilations):
    """(d/dx, d/dfilter) of sum(conv(x, f) * w): w gives every output element a different gradient."""
    fn = grads(lambda x, f, w: (op(x, f, strides, padding, dilations) * w).sum())
    return lambda x, f, w: tuple(fn(x, f, w))


def _cases(op_name, out_channels, seed):
    """Cases of `op_name`; out_channels(label, in_channels) is the filter's last dimension."""
    op, cases = getattr(ops, op_name), []
    for k, (label, (x_shape, window, strides, padding, dilations)) in enumerate(GEOMETRIES.items()):
        channels = x_shape[-1]
        f_shape = (*window, channels, out_channels(label, channels))
        x, f = rand(x_shape, seed + k, -1, 1), rand(f_shape, seed + 50 + k, -1, 1)
        cases.append(Case(f"{op_name}/{label}", _conv(op, strides, padding, dilations), [x, f], **TOLERANCE))
        if label in WITH_GRADIENTS:
            out_channels_total = f_shape[3] * (channels if op_name == "depthwise_conv2d" else 1)
            y_shape = (x_shape[0], *output_hw(x_shape, window, strides, padding, dilations), out_channels_total)
            w = rand(y_shape, seed + 100 + k, -1, 1)
            fn = _conv_grads(op, strides, padding, dilations)
            cases.append(Case(f"{op_name}/grad-{label}", fn, [x, f, w], **TOLERANCE))
    image, f = rand((6, 5, 3), seed + 200), rand((3, 3, 3, 2), seed + 201)
    cases.append(Case(f"{op_name}/single-image", _conv(op, 1, "same", 1), [image, f], **TOLERANCE))
    # NaN, the infinities and signed zeros in the image (a filter stays finite: numpy multiplies the zero
    # padding by it, where the GPU skips padding, and 0 * inf would be NaN on one side only)
    for label in ("stride1-same", "explicit-pad-stride2-dilated"):
        x_shape, window, strides, padding, dilations = GEOMETRIES[label]
        channels = x_shape[-1]
        x = with_edges(rand(x_shape, seed + 300, -1, 1), FLOAT_EDGES)
        f = rand((*window, channels, out_channels(label, channels)), seed + 301, -1, 1)
        f[0, 0, 0, 0] = 0.0  # an inf meeting a zero tap gives NaN
        cases.append(
            Case(f"{op_name}/special-values-{label}", _conv(op, strides, padding, dilations), [x, f], **TOLERANCE)
        )
    return cases


# conv2d: output channels not multiples of 4, and past one workgroup's columns for "large" (70)
CONV_CHANNELS = {"large": 70, "1x1": 4, "long": 5}
# depthwise: channel multipliers 1, 2 and 3
DEPTHWISE_MULTIPLIERS = {"stride1-same": 2, "explicit-pad-stride2-dilated": 3, "large": 2, "long": 1, "1x1": 3}


def _pool_cases(op, name):
    cases = []
    x = rand((2, 9, 7, 3), 1)
    for padding in ("same", "valid"):
        for k, s in ((3, 1), (3, 2), (2, 2), ((2, 3), (1, 2))):
            kh, kw = (k, k) if isinstance(k, int) else k
            sh, sw = (s, s) if isinstance(s, int) else s
            label = f"{padding}-k{kh}x{kw}-s{sh}x{sw}"

            def f(t, k=k, s=s, padding=padding):
                return op(t, k, s, padding)

            cases.append(Case(f"{name}/{label}", f, [x]))
            dy = rand((2, conv_output_length(9, kh, padding, sh), conv_output_length(7, kw, padding, sw), 3), 2)
            cases.append(Case(f"{name}/grad-{label}", lambda t, d, f=f: grad(f)(t, d), [x, dy]))
    ties = np.round(rand((1, 8, 8, 2), 3)).astype(np.float32)  # equal maxima: the first one takes the gradient
    cases.append(
        Case(f"{name}/grad-ties", lambda t, d: grad(lambda u: op(u, 3, 1, "same"))(t, d), [ties, rand(ties.shape, 4)])
    )
    cases.append(Case(f"{name}/single-image", lambda t: op(t, 3, 2, "same"), [rand((5, 6, 4), 5)]))
    cases.append(Case(f"{name}/size1", lambda t: op(t, 1, 1), [rand((1, 1, 1, 1), 6)]))
    cases.append(Case(f"{name}/empty-batch", lambda t: op(t, 2, 2), [rand((0, 4, 4, 3), 7)]))
    edges = with_edges(rand((2, 9, 7, 3), 11), FLOAT_EDGES)
    cases.append(Case(f"{name}/special-values", lambda t: op(t, 3, 2, "same"), [edges]))
    cases.append(Case(f"{name}/special-values-valid", lambda t: op(t, 2, 1, "valid"), [edges]))
    cases.append(Case(f"{name}/padding-pairs", lambda t: op(t, 3, 2, [[2, 1], [0, 2]]), [rand((1, 6, 5, 2), 8)]))
    large = rand((2, 67, 45, 20), 9)  # 2 x 34 x 23 x 20 outputs: hundreds of workgroups
    cases.append(Case(f"{name}/large", lambda t: op(t, 3, 2, "same"), [large]))
    cases.append(
        Case(
            f"{name}/grad-large",
            lambda t, d: grad(lambda u: op(u, 3, 2, "same"))(t, d),
            [large, rand((2, 34, 23, 20), 10)],
        )
    )
    return cases


# ---- the layers' ops: conv2d_transpose (the Conv2DBackpropInput kernel run forwards, as Conv2DTranspose does;
# Conv2D and Conv2DBackpropFilter for its gradients), and conv3d, conv3d_transpose, max_pool3d and avg_pool3d
# (2-D kernels per depth tap)
# label -> (x shape, filter [h, w, out, in], strides, padding)
TRANSPOSE_GEOMETRIES = {
    "stride2-same": ((2, 4, 5, 3), (3, 3, 4, 3), (2, 2), "same"),
    "stride2-valid": ((1, 3, 4, 2), (3, 3, 5, 2), (2, 2), "valid"),
    "window-below-stride": ((2, 3, 3, 3), (1, 2, 3, 3), (3, 3), "valid"),
    "uneven": ((1, 5, 3, 4), (2, 3, 6, 4), (1, 2), "same"),
    "many-channels": ((1, 6, 7, 9), (3, 3, 70, 9), (2, 2), "same"),
}
TRANSPOSE_WITH_GRADIENTS = ["stride2-same", "window-below-stride", "uneven"]


def _transpose_output_hw(x_shape, f_shape, strides, padding):
    return tuple(deconv_length(n, s, k, padding) for n, s, k in zip(x_shape[1:3], strides, f_shape[:2]))


def _transpose_cases(seed):
    cases = []
    for k, (label, (x_shape, f_shape, strides, padding)) in enumerate(TRANSPOSE_GEOMETRIES.items()):
        hw = _transpose_output_hw(x_shape, f_shape, strides, padding)
        x, f = rand(x_shape, seed + k, -1, 1), rand(f_shape, seed + 50 + k, -1, 1)

        def forward(x, f, hw=hw, strides=strides, padding=padding):
            return conv2d_transpose(x, f, hw, strides, padding)

        cases.append(Case(f"conv2d_transpose/{label}", forward, [x, f], **TOLERANCE))
        if label in TRANSPOSE_WITH_GRADIENTS:
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


CASES = (
    both_variants(_cases("conv2d", lambda label, c: CONV_CHANNELS.get(label, 7), 1000))
    + _cases("depthwise_conv2d", lambda label, c: DEPTHWISE_MULTIPLIERS.get(label, 1), 2000)
    + _pool_cases(ops.avg_pool, "avg_pool")
    + _pool_cases(ops.max_pool, "max_pool")
    + [
        Case(
            "max_pool/nan",
            lambda t: ops.max_pool(t, 2, 1),
            [np.array([[[[1.0], [np.nan]], [[3.0], [2.0]]]], np.float32)],
        )
    ]
    + _transpose_cases(5000)
    + _cases_3d(6000)
)
