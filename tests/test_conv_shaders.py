"""The webgpu convolution shaders' paths at their edges, against the numpy backend: the depthwise row shader (a run
of outputs of one row per thread, a window of input columns per stride), the depthwise fallbacks it leaves to
(channels not in fours, a multiplier, dilation), and Conv2D's GEMM with a filter row per segment or, on CPU
adapters, the matmul of its patches."""

import asyncio

import numpy as np
import pytest

import py_engine as pe
from py_engine.backends.webgpu.kernels import nn as nn_kernels
from py_engine.engine import ENGINE
from py_engine.engine.warmup import dispatched_shaders
from py_engine.ops.fused import ACTIVATIONS

RELU_LIKE = ("linear", "relu", "relu6")


@pytest.fixture
def gpu():
    assert asyncio.run(pe.set_backend("webgpu")), ENGINE.fallback_reason
    return ENGINE.active()


def shader_keys(gpu, fn):
    """The shader keys fn dispatches (a dry run: nothing is computed)."""
    with dispatched_shaders(gpu) as shaders, pe.scope():
        fn()
    return {s.key for s in shaders}


def on_both(fn, *arrays):
    """fn's result on webgpu, then on numpy (arrays go in as float32 tensors)."""
    results = []
    for backend in ("webgpu", "numpy"):
        assert asyncio.run(pe.set_backend(backend))
        with pe.scope():
            results.append(fn(*(pe.tensor(a) for a in arrays)).numpy())
    asyncio.run(pe.set_backend("webgpu"))
    return results


# (x shape, filter (h, w), strides, padding): output widths below, at and past a thread's 2 columns (strips, stride 1)
# or run of 8 (or 4) outputs (rows); strips: output heights past a strip's, strips ending early, several images
DEPTHWISE_GEOMETRIES = {
    "s1-same-3x3-width-9": ((2, 5, 9, 8), (3, 3), 1, "same"),
    "s1-valid-5x5-width-3": ((1, 7, 7, 4), (5, 5), 1, "valid"),
    "s1-same-1x1": ((1, 3, 8, 4), (1, 1), 1, "same"),
    "s1-wide-filter": ((2, 4, 3, 12), (2, 5), 1, "same"),  # the filter is wider than the image
    "s1-tall-strips": ((2, 37, 5, 4), (3, 3), 1, "same"),  # 5 strips of 8 rows, the last of 5
    "s1-2x4-valid": ((1, 20, 7, 4), (2, 4), 1, "valid"),
    "s2-same-3x3-odd": ((2, 11, 13, 8), (3, 3), 2, "same"),
    "s2-same-5x5-even": ((1, 12, 16, 20), (5, 5), 2, "same"),
    "s2-tall-5x5-strips": ((2, 41, 6, 8), (5, 5), 2, "same"),
    "s2-valid": ((1, 9, 10, 4), (3, 3), 2, "valid"),
    "s2-explicit-pad": ((1, 8, 9, 4), (3, 3), 2, ((2, 0), (1, 3))),
    "s2-1x1": ((1, 9, 9, 4), (1, 1), 2, "same"),  # an input row of each step reaches no output
    "uneven-strides-1x2": ((1, 10, 11, 4), (3, 3), (1, 2), "same"),
    "uneven-strides-2x1": ((1, 19, 6, 4), (5, 3), (2, 1), ((1, 3), (0, 2))),
    # rows: larger strides and filters
    "s1-9-wide": ((1, 4, 12, 4), (3, 9), 1, "same"),  # too wide to unroll: the rolling window at stride 1
    "s1-7x7": ((1, 9, 10, 4), (7, 7), 1, "same"),
    "uneven-strides-3x1": ((2, 9, 17, 8), (3, 5), (3, 1), "same"),
    "s3": ((1, 7, 20, 4), (3, 3), 3, "same"),
}


def depthwise_key(window, strides, on_cpu):
    """The shader a depthwise convolution of this filter window and strides runs (multiplier 1, channels in fours)."""
    sh, sw = (strides, strides) if isinstance(strides, int) else strides
    if on_cpu and window[0] * window[1] <= 25 and (sh, sw) == (1, 1):  # strips down the output rows (CPU adapters)
        return f"DepthwiseConv2d:strips2:{window[0]}x{window[1]}"
    unrolled = sw == 1 and window[1] <= 7  # the filter row unrolled; else a rolling window of columns
    return f"DepthwiseConv2d:rows{max(1, 8 // sw)}:" + (f"kw{window[1]}" if unrolled else f"sw{sw}")


@pytest.mark.parametrize("on_cpu", [True, False], ids=["cpu-adapter", "gpu-adapter"])
@pytest.mark.parametrize("label", DEPTHWISE_GEOMETRIES)
def test_depthwise_strip_and_row_shaders_match_numpy(gpu, rng, label, on_cpu):
    x_shape, window, strides, padding = DEPTHWISE_GEOMETRIES[label]
    x = rng.uniform(-3, 3, x_shape).astype(np.float32)
    f = rng.uniform(-1, 1, (*window, x_shape[-1], 1)).astype(np.float32)
    bias = rng.uniform(-1, 1, x_shape[-1]).astype(np.float32)
    saved, gpu.on_cpu = gpu.on_cpu, on_cpu
    try:
        keys = shader_keys(gpu, lambda: pe.depthwise_conv2d(pe.tensor(x), pe.tensor(f), strides, padding))
        assert keys == {depthwise_key(window, strides, on_cpu)}
        check_depthwise(x, f, bias, strides, padding)
    finally:
        gpu.on_cpu = saved


def check_depthwise(x, f, bias, strides, padding):
    got, want = on_both(lambda x, f: pe.depthwise_conv2d(x, f, strides, padding), x, f)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    for k, activation in enumerate(ACTIVATIONS):  # the fused kernel: sums start from the bias, then the activation
        with_bias = k % 2 == 0
        arrays = (x, f, bias) if with_bias else (x, f)

        def fused(x, f, *b, activation=activation):
            return pe.fused_depthwise_conv2d(x, f, b[0] if b else None, activation, strides, padding)

        got, want = on_both(fused, *arrays)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=activation)


@pytest.mark.parametrize(
    "channels, mult, dilations, key",
    [(6, 1, 1, "DepthwiseConv2d:x1"), (4, 2, 1, "DepthwiseConv2d:x1"), (8, 1, 2, "DepthwiseConv2d:x4")],
    ids=["channels-not-in-fours", "multiplier-2", "dilated"],
)
def test_depthwise_shapes_the_strip_and_row_shaders_leave_to_the_others(gpu, rng, channels, mult, dilations, key):
    x = rng.uniform(-3, 3, (2, 9, 10, channels)).astype(np.float32)
    f = rng.uniform(-1, 1, (3, 3, channels, mult)).astype(np.float32)
    bias = rng.uniform(-1, 1, channels * mult).astype(np.float32)

    def fused(x, f, b):
        return pe.fused_depthwise_conv2d(x, f, b, "relu6", 2, "same", dilations)

    keys = shader_keys(gpu, lambda: fused(pe.tensor(x), pe.tensor(f), pe.tensor(bias)))
    assert [k.rsplit(":clamp", 1)[0] for k in keys] == [key]
    got, want = on_both(fused, x, f, bias)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_depthwise_strip_shader_keeps_nan_and_clips_infinities(gpu):
    x = np.ones((1, 3, 10, 4), np.float32)
    x[0, 1, 4, 0], x[0, 1, 2, 1], x[0, 0, 9, 2] = np.nan, np.inf, -np.inf
    f = np.full((3, 3, 4, 1), 0.5, np.float32)
    got, want = on_both(lambda x, f: pe.fused_depthwise_conv2d(x, f, None, "relu6", 1, "same"), x, f)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got).sum() == 9  # the NaN reaches the 3x3 outputs around it; the infinities clip to 6 and 0
    np.testing.assert_allclose(got, want, rtol=1e-6)


# Conv2D: a segment of the GEMM is a filter row (its taps read adjacent pixels) unless the width is dilated
CONV_GEOMETRIES = {
    "3-channels-s2-same": ((2, 17, 15, 3), (3, 3), 2, "same", 1),  # EfficientNet's first convolution, smaller
    "valid-2x4": ((1, 9, 10, 5), (2, 4), 1, "valid", 1),
    "explicit-pad": ((1, 8, 9, 6), (3, 3), 1, ((0, 2), (3, 1)), 1),
    "filter-wider-than-image": ((2, 6, 3, 4), (3, 5), 1, "same", 1),
    "height-dilated": ((1, 11, 9, 4), (3, 3), 1, "same", (2, 1)),
    "width-dilated": ((1, 9, 11, 4), (3, 3), (1, 2), "same", (1, 2)),  # one tap a segment
    "1x1": ((2, 5, 7, 6), (1, 1), 1, "valid", 1),  # a matmul (linalg.pointwise)
    "1x1-s2": ((1, 9, 8, 6), (1, 1), 2, "same", 1),
}


@pytest.mark.parametrize("on_cpu", [True, False], ids=["register-blocked", "tiled"])
@pytest.mark.parametrize("label", CONV_GEOMETRIES)
def test_conv2d_filter_row_segments_match_numpy(gpu, rng, label, on_cpu):
    x_shape, window, strides, padding, dilations = CONV_GEOMETRIES[label]
    x = rng.uniform(-3, 3, x_shape).astype(np.float32)
    f = rng.uniform(-1, 1, (*window, x_shape[-1], 7)).astype(np.float32)
    bias = rng.uniform(-1, 1, 7).astype(np.float32)
    saved, gpu.on_cpu = gpu.on_cpu, on_cpu
    try:
        keys = shader_keys(gpu, lambda: pe.conv2d(pe.tensor(x), pe.tensor(f), strides, padding, dilations))
        pointwise = window == (1, 1) and strides == 1  # no padding: "same" pads nothing for a 1x1 filter
        assert {k.split(":")[1] for k in keys} == {"matmul" if pointwise else "conv2d"}, keys
        check_conv(x, f, bias, strides, padding, dilations, RELU_LIKE)
    finally:
        gpu.on_cpu = saved


def check_conv(x, f, bias, strides, padding, dilations, activations):
    """conv2d, then fused_conv2d with the bias and each of `activations`, on webgpu against numpy."""
    got, want = on_both(lambda x, f: pe.conv2d(x, f, strides, padding, dilations), x, f)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    for activation in activations:

        def fused(x, f, b, activation=activation):
            return pe.fused_conv2d(x, f, b, activation, strides, padding, dilations)

        got, want = on_both(fused, x, f, bias)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=activation)


@pytest.mark.parametrize("label", [label for label in CONV_GEOMETRIES if not label.startswith("1x1")])
def test_conv2d_into_32_channels_or_more_is_the_matmul_of_its_patches_on_a_cpu_adapter(gpu, rng, label, monkeypatch):
    x_shape, window, strides, padding, dilations = CONV_GEOMETRIES[label]
    x = rng.uniform(-3, 3, x_shape).astype(np.float32)
    f = rng.uniform(-1, 1, (*window, x_shape[-1], 37)).astype(np.float32)  # 37 columns: a partial block of 16
    bias = rng.uniform(-1, 1, 37).astype(np.float32)

    def kinds(filter_):  # the shaders' kinds ("Gemm:matmul", "Patches", ...) of a conv2d by filter_
        keys = shader_keys(gpu, lambda: pe.conv2d(pe.tensor(x), pe.tensor(filter_), strides, padding, dilations))
        return sorted(":".join(k.split(":")[:2]) for k in keys)

    saved, gpu.on_cpu = gpu.on_cpu, True
    try:
        assert kinds(f) == ["Gemm:matmul", "Patches"]
        check_conv(x, f, bias, strides, padding, dilations, ACTIVATIONS)
        # fewer output channels, or more patches than the limit, or a GPU: the implicit GEMM
        narrow = rng.uniform(-1, 1, (*window, x_shape[-1], 31)).astype(np.float32)
        assert kinds(narrow) == ["Gemm:conv2d"]
        monkeypatch.setattr(nn_kernels, "PATCHES_LIMIT", x.size * window[0] * window[1] // 16)
        assert kinds(f) == ["Gemm:conv2d"]
        monkeypatch.undo()
        gpu.on_cpu = False
        assert kinds(f) == ["Gemm:conv2d"]
    finally:
        gpu.on_cpu = saved


@pytest.mark.parametrize("on_cpu", [True, False], ids=["register-blocked", "tiled"])
@pytest.mark.parametrize("pixels", [1, 3, 4])
def test_few_rows_take_one_row_blocks(gpu, rng, pixels, on_cpu):
    # a Dense layer on one vector as a 1x1 convolution over one pixel (EfficientNet's head), a batched matmul
    # whose matrices have one row: one row per register-blocked thread below 4 rows, 14 from 4 on
    x = rng.uniform(-3, 3, (pixels, 1, 1, 70)).astype(np.float32)
    f = rng.uniform(-1, 1, (1, 1, 70, 37)).astype(np.float32)
    bias = rng.uniform(-1, 1, 37).astype(np.float32)
    a, b = rng.uniform(-1, 1, (5, pixels, 70)).astype(np.float32), rng.uniform(-1, 1, (70, 33)).astype(np.float32)
    saved, gpu.on_cpu = gpu.on_cpu, on_cpu
    try:
        keys = shader_keys(gpu, lambda: pe.fused_conv2d(pe.tensor(x), pe.tensor(f), pe.tensor(bias), "relu6"))
        keys |= shader_keys(gpu, lambda: pe.matmul(pe.tensor(a), pe.tensor(b)))
        one_row = {k for k in keys if ":block1x" in k}
        assert len(one_row) == (2 if on_cpu and pixels < 4 else 0), keys
        got, want = on_both(lambda x, f, b: pe.fused_conv2d(x, f, b, "relu6"), x, f, bias)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        for ta, tb in [(False, False), (True, True)]:
            a_in, b_in = (np.swapaxes(a, -1, -2).copy() if ta else a), (b.T.copy() if tb else b)
            got, want = on_both(lambda p, q, ta=ta, tb=tb: pe.matmul(p, q, ta, tb), a_in, b_in)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    finally:
        gpu.on_cpu = saved


@pytest.mark.parametrize("rows, cols", [(5, 16), (33, 17), (50, 24), (71, 9), (13, 130), (4, 1000), (49, 40)])
def test_register_blocked_threads_are_numbered_along_the_rows_of_c(gpu, rng, rows, cols, monkeypatch):
    # blocks of 14x16 (7x8 where A's loads test the padding: an implicit convolution), numbered along C's block-rows
    # 8 threads to a workgroup, so however narrow C is, no lane is idle but in the last workgroup; rows and columns
    # off the blocks' edges
    a, b = rng.uniform(-1, 1, (2, rows, 45)).astype(np.float32), rng.uniform(-1, 1, (45, cols)).astype(np.float32)
    x, f = a.reshape(1, rows, 2, 45), b.reshape(1, 1, 45, cols)  # at stride (1, 2) an implicit GEMM of `rows` rows
    grids = []
    dispatch = gpu.dispatch
    monkeypatch.setattr(gpu, "dispatch", lambda shader, *args: grids.append(args[-1]) or dispatch(shader, *args))
    monkeypatch.setattr(nn_kernels, "PATCHES_MIN_OUT", cols + 1)  # the implicit GEMM, not the patches' matmul
    saved, gpu.on_cpu = gpu.on_cpu, True
    try:
        keys = shader_keys(gpu, lambda: pe.matmul(pe.tensor(a), pe.tensor(b)))
        keys |= shader_keys(gpu, lambda: pe.conv2d(pe.tensor(x), pe.tensor(f), (1, 2)))
        assert {k.split(":")[1] + ":" + k.split(":")[4] for k in keys} == {"matmul:block14x16", "conv2d:block7x8"}
        matmul, conv = -(-rows // 14) * -(-cols // 16), -(-rows // 7) * -(-cols // 8)
        assert [list(g) for g in grids] == [[-(-matmul // 8), 1, 2], [-(-conv // 8), 1, 1]]
        got, want = on_both(pe.matmul, a, b)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        got, want = on_both(lambda x, f: pe.conv2d(x, f, (1, 2)), x, f)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    finally:
        gpu.on_cpu = saved
