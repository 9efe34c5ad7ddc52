import math

import numpy as np
import pytest

import py_engine as pe
from py_engine.backends.numpy.kernels import nn as numpy_nn
from py_engine.errors import DTypeError, ShapeError
from tests.gradcheck import check_gradients

# ---- independent references: one loop per output pixel, float64 -----------------------------------


def same_pads(size, k, stride, dilation=1):
    extent = (k - 1) * dilation + 1
    total = max((math.ceil(size / stride) - 1) * stride + extent - size, 0)
    return total // 2, total - total // 2


def resolve(padding, shape_hw, window, strides, dilations=(1, 1)):
    if padding == "valid":
        return ((0, 0), (0, 0))
    if padding == "same":
        return tuple(same_pads(n, k, s, d) for n, k, s, d in zip(shape_hw, window, strides, dilations))
    return tuple(tuple(p) for p in padding)


def ref_conv(x, f, strides=(1, 1), padding="valid", dilations=(1, 1), depthwise=False):
    x, f = np.asarray(x, np.float64), np.asarray(f, np.float64)
    n, h, w, c = x.shape
    kh, kw = f.shape[:2]
    (top, bottom), (left, right) = resolve(padding, (h, w), (kh, kw), strides, dilations)
    xp = np.zeros((n, h + top + bottom, w + left + right, c))
    xp[:, top : top + h, left : left + w] = x
    (sh, sw), (dh, dw) = strides, dilations
    oh = (h + top + bottom - (kh - 1) * dh - 1) // sh + 1
    ow = (w + left + right - (kw - 1) * dw - 1) // sw + 1
    out = np.zeros((n, oh, ow, c * f.shape[3] if depthwise else f.shape[3]))
    for b_, i, j in np.ndindex(n, oh, ow):
        patch = xp[b_, i * sh : i * sh + (kh - 1) * dh + 1 : dh, j * sw : j * sw + (kw - 1) * dw + 1 : dw]
        if depthwise:
            out[b_, i, j] = np.einsum("hwc,hwcm->cm", patch, f).reshape(-1)
        else:
            out[b_, i, j] = np.einsum("hwc,hwco->o", patch, f)
    return out


def ref_pool(x, k, strides, padding, reduce):
    x = np.asarray(x, np.float64)
    n, h, w, c = x.shape
    (top, bottom), (left, right) = resolve(padding, (h, w), k, strides)
    oh, ow = (h + top + bottom - k[0]) // strides[0] + 1, (w + left + right - k[1]) // strides[1] + 1
    out = np.zeros((n, oh, ow, c))
    for i, j in np.ndindex(oh, ow):
        r0, c0 = i * strides[0] - top, j * strides[1] - left
        window = x[:, max(r0, 0) : r0 + k[0], max(c0, 0) : c0 + k[1]]  # real pixels only
        out[:, i, j] = reduce(window, axis=(1, 2))
    return out


def values(rng, *shape):
    return rng.normal(size=shape).astype(np.float32)


# ---- conv2d -------------------------------------------------------------------------------------


def test_conv2d_hand_checked():
    x = pe.tensor(np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1))
    y = pe.conv2d(x, pe.ones((2, 2, 1, 1)))
    np.testing.assert_array_equal(y.numpy()[0, ..., 0], [[12, 16], [24, 28]])


def test_conv2d_same_stride2_even_size_pads_bottom_right():
    x = pe.tensor(np.arange(1, 17, dtype=np.float32).reshape(1, 4, 4, 1))
    y = pe.conv2d(x, pe.ones((3, 3, 1, 1)), strides=2, padding="same")
    np.testing.assert_array_equal(y.numpy()[0, ..., 0], [[54, 45], [72, 54]])


def test_conv2d_same_stride2_odd_size_pads_both_sides():
    x = pe.tensor(np.arange(1, 26, dtype=np.float32).reshape(1, 5, 5, 1))
    y = pe.conv2d(x, pe.ones((3, 3, 1, 1)), strides=2, padding="same")
    assert y.shape == (1, 3, 3, 1)
    assert y.numpy()[0, 0, 0, 0] == 1 + 2 + 6 + 7  # one row and column of padding on top/left
    assert y.numpy()[0, 2, 2, 0] == 19 + 20 + 24 + 25


def test_conv2d_dilation_hand_checked():
    x = pe.tensor(np.arange(25, dtype=np.float32).reshape(1, 5, 5, 1))
    y = pe.conv2d(x, pe.ones((2, 2, 1, 1)), dilations=2)
    assert y.shape == (1, 3, 3, 1)
    assert y.numpy()[0, 0, 0, 0] == 0 + 2 + 10 + 12


CONV_CASES = [
    # x shape, filter shape, strides, padding, dilations
    ((2, 5, 5, 3), (3, 3, 3, 4), (1, 1), "valid", (1, 1)),
    ((2, 5, 5, 3), (3, 3, 3, 2), (2, 2), "same", (1, 1)),
    ((1, 6, 7, 2), (3, 2, 2, 3), (2, 2), "same", (1, 1)),
    ((3, 7, 6, 2), (2, 3, 2, 2), (1, 2), "same", (2, 1)),
    ((1, 6, 6, 2), (3, 3, 2, 2), (1, 1), "same", (2, 2)),
    ((2, 4, 5, 3), (2, 2, 3, 1), (1, 1), [[1, 0], [2, 1]], (1, 1)),
    ((1, 5, 4, 2), (3, 3, 2, 2), (3, 2), [[2, 2], [0, 3]], (1, 2)),
    ((2, 4, 4, 3), (1, 1, 3, 5), (1, 1), "valid", (1, 1)),
    ((2, 5, 5, 3), (1, 1, 3, 2), (2, 2), "same", (1, 1)),
    ((1, 1, 1, 1), (1, 1, 1, 1), (1, 1), "same", (1, 1)),
    ((1, 1, 5, 2), (1, 3, 2, 2), (1, 1), "same", (1, 1)),
]


@pytest.mark.parametrize(("xs", "fs", "strides", "padding", "dilations"), CONV_CASES)
def test_conv2d_matches_reference(rng, xs, fs, strides, padding, dilations):
    x, f = values(rng, *xs), values(rng, *fs)
    y = pe.conv2d(pe.tensor(x), pe.tensor(f), strides, padding, dilations)
    assert y.dtype == "float32"
    np.testing.assert_allclose(y.numpy(), ref_conv(x, f, strides, padding, dilations), rtol=1e-5, atol=1e-5)


def test_conv2d_1x1_is_a_matmul_over_channels(rng):
    x, f = values(rng, 2, 3, 4, 5), values(rng, 1, 1, 5, 6)
    np.testing.assert_allclose(pe.conv2d(pe.tensor(x), pe.tensor(f)).numpy(), x @ f[0, 0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("block", [100, 2 * 4 * 4 * 18, 10**9])  # rows of one image, whole images, everything
def test_conv2d_blocks_give_the_same_result(rng, monkeypatch, block):
    monkeypatch.setattr(numpy_nn, "_BLOCK", block)
    x, f = values(rng, 5, 4, 4, 2), values(rng, 3, 3, 2, 3)
    y = pe.conv2d(pe.tensor(x), pe.tensor(f), 1, "same").numpy()
    np.testing.assert_allclose(y, ref_conv(x, f, padding="same"), rtol=1e-5, atol=1e-5)


def test_conv2d_single_image_and_lists(rng):
    x, f = values(rng, 4, 4, 2), values(rng, 2, 2, 2, 3)
    y = pe.conv2d(pe.tensor(x), f.tolist(), padding="same")
    assert y.shape == (4, 4, 3)
    np.testing.assert_allclose(y.numpy(), ref_conv(x[None], f, padding="same")[0], rtol=1e-5, atol=1e-5)


def test_conv2d_zero_batch():
    y = pe.conv2d(pe.zeros((0, 5, 5, 2)), pe.ones((3, 3, 2, 4)), strides=2, padding="same")
    assert y.shape == (0, 3, 3, 4)
    dx, df = pe.grads(lambda x, f: pe.conv2d(x, f, 2, "same").sum())(pe.zeros((0, 5, 5, 2)), pe.ones((3, 3, 2, 4)))
    assert dx.shape == (0, 5, 5, 2)
    np.testing.assert_array_equal(df.numpy(), 0)


def test_conv2d_tfjs_explicit_padding_form_and_int_padding(rng):
    x, f = values(rng, 1, 4, 4, 1), values(rng, 2, 2, 1, 1)
    a = pe.conv2d(pe.tensor(x), pe.tensor(f), padding=[[0, 0], [1, 2], [1, 0], [0, 0]]).numpy()
    np.testing.assert_allclose(a, ref_conv(x, f, padding=[[1, 2], [1, 0]]), rtol=1e-5, atol=1e-5)
    b = pe.conv2d(pe.tensor(x), pe.tensor(f), padding=1).numpy()
    np.testing.assert_allclose(b, ref_conv(x, f, padding=[[1, 1], [1, 1]]), rtol=1e-5, atol=1e-5)


def test_conv2d_leaves_only_its_result():
    before = pe.memory().num_tensors
    y = pe.conv2d(np.ones((3, 3, 1), np.float32), np.ones((2, 2, 1, 1), np.float32).tolist())
    assert pe.memory().num_tensors == before + 1 and y.shape == (2, 2, 1)


def test_conv2d_errors():
    x, f = pe.zeros((1, 5, 5, 3)), pe.zeros((3, 3, 3, 4))
    with pytest.raises(ShapeError, match=r"conv2d: x must have rank 3 or 4, got shape \(5, 5\)"):
        pe.conv2d(pe.zeros((5, 5)), f)
    with pytest.raises(ShapeError, match=r"conv2d: filter must have rank 4, got shape \(3, 3, 3\)"):
        pe.conv2d(x, pe.zeros((3, 3, 3)))
    with pytest.raises(
        ShapeError,
        match=r"conv2d: filter \(3, 3, 2, 4\) \(h, w, in, out\) has 2 input channels but x \(1, 5, 5, 3\) has 3",
    ):
        pe.conv2d(x, pe.zeros((3, 3, 2, 4)))
    with pytest.raises(ShapeError, match=r"conv2d: filter \(0, 3, 3, 4\) .* has an empty height or width"):
        pe.conv2d(x, pe.zeros((0, 3, 3, 4)))
    with pytest.raises(DTypeError, match=r"conv2d: x has dtype int32, expected float32"):
        pe.conv2d(pe.zeros((1, 5, 5, 3), "int32"), f)
    with pytest.raises(DTypeError, match=r"conv2d: filter has dtype bool, expected float32"):
        pe.conv2d(x, pe.zeros((3, 3, 3, 4), "bool"))
    with pytest.raises(ValueError, match=r"conv2d: strides must be a positive int or 2 positive ints, got 0"):
        pe.conv2d(x, f, strides=0)
    with pytest.raises(ValueError, match=r"conv2d: dilations must be a positive int or 2 positive ints, got \(1,\)"):
        pe.conv2d(x, f, dilations=(1,))
    with pytest.raises(ValueError, match=r"conv2d: padding must be 'same', 'valid', .* got 'full'"):
        pe.conv2d(x, f, padding="full")
    with pytest.raises(ValueError, match=r"conv2d: padding must be .* got \[\[1, 2\]\]"):
        pe.conv2d(x, f, padding=[[1, 2]])
    with pytest.raises(ValueError, match=r"conv2d: padding must be .* got \[\[-1, 0\], \[0, 0\]\]"):
        pe.conv2d(x, f, padding=[[-1, 0], [0, 0]])
    with pytest.raises(
        ShapeError,
        match=r"conv2d: a 3x3 filter with strides \(1, 1\) and padding \(\(0, 0\), \(0, 0\)\) leaves no output for x of shape \(1, 2, 2, 3\) \(output size 0x0\)",
    ):
        pe.conv2d(pe.zeros((1, 2, 2, 3)), f)
    with pytest.raises(ShapeError, match=r"conv2d: a 3x3 filter \(dilated to 5x5\) .* x of shape \(4, 4, 3\)"):
        pe.conv2d(pe.zeros((4, 4, 3)), f, dilations=2)
    with pytest.raises(ShapeError, match=r"conv2d: .* x of shape \(1, 0, 5, 3\)"):
        pe.conv2d(pe.zeros((1, 0, 5, 3)), f, padding="same")


@pytest.mark.parametrize(
    ("xs", "fs", "strides", "padding", "dilations"),
    [
        ((2, 5, 5, 2), (3, 3, 2, 2), 2, "same", 1),
        ((1, 4, 6, 2), (2, 3, 2, 2), (1, 2), [[1, 0], [2, 1]], (2, 1)),
        ((1, 4, 4, 2), (1, 1, 2, 3), 1, "valid", 1),
        ((4, 4, 1), (2, 2, 1, 2), 2, "same", 1),
    ],
)
def test_conv2d_gradients(rng, xs, fs, strides, padding, dilations):
    check_gradients(
        lambda x, f: pe.conv2d(x, f, strides, padding, dilations), values(rng, *xs) * 0.5, values(rng, *fs) * 0.5
    )


# ---- depthwise_conv2d ---------------------------------------------------------------------------


def test_depthwise_channel_order():
    y = pe.depthwise_conv2d(pe.tensor([[[[1.0, 10.0]]]]), pe.tensor([[[[1.0, 2.0], [3.0, 4.0]]]]))
    np.testing.assert_array_equal(y.numpy().reshape(-1), [1, 2, 30, 40])  # channel c * multiplier + m


@pytest.mark.parametrize(
    ("xs", "fs", "strides", "padding", "dilations"),
    [
        ((2, 5, 5, 3), (3, 3, 3, 1), (1, 1), "valid", (1, 1)),
        ((2, 5, 5, 3), (3, 3, 3, 2), (2, 2), "same", (1, 1)),
        ((1, 6, 7, 2), (3, 3, 2, 3), (2, 2), "same", (1, 1)),
        ((1, 6, 6, 2), (3, 2, 2, 2), (1, 1), "same", (2, 2)),
        ((2, 4, 5, 1), (2, 2, 1, 2), (1, 2), [[1, 0], [2, 1]], (1, 1)),
        ((1, 1, 1, 4), (1, 1, 4, 1), (1, 1), "same", (1, 1)),
    ],
)
def test_depthwise_matches_reference(rng, xs, fs, strides, padding, dilations):
    x, f = values(rng, *xs), values(rng, *fs)
    y = pe.depthwise_conv2d(pe.tensor(x), pe.tensor(f), strides, padding, dilations)
    np.testing.assert_allclose(y.numpy(), ref_conv(x, f, strides, padding, dilations, True), rtol=1e-5, atol=1e-5)


def test_depthwise_single_image_and_zero_batch(rng):
    x, f = values(rng, 3, 3, 2), values(rng, 2, 2, 2, 2)
    y = pe.depthwise_conv2d(pe.tensor(x), pe.tensor(f), padding="same")
    np.testing.assert_allclose(y.numpy(), ref_conv(x[None], f, padding="same", depthwise=True)[0], rtol=1e-5, atol=1e-5)
    assert pe.depthwise_conv2d(pe.zeros((0, 4, 4, 2)), pe.tensor(f), 2, "same").shape == (0, 2, 2, 4)
    dx, df = pe.grads(lambda a, b: pe.depthwise_conv2d(a, b, 2, "same").sum())(pe.zeros((0, 4, 4, 2)), pe.tensor(f))
    assert dx.shape == (0, 4, 4, 2)
    np.testing.assert_array_equal(df.numpy(), 0)


def test_depthwise_errors():
    with pytest.raises(
        ShapeError,
        match=r"depthwise_conv2d: filter \(3, 3, 2, 1\) \(h, w, in, multiplier\) has 2 input channels but x \(1, 5, 5, 3\) has 3",
    ):
        pe.depthwise_conv2d(pe.zeros((1, 5, 5, 3)), pe.zeros((3, 3, 2, 1)))
    with pytest.raises(ShapeError, match=r"depthwise_conv2d: x must have rank 3 or 4, got shape \(1, 1, 5, 5, 3\)"):
        pe.depthwise_conv2d(pe.zeros((1, 1, 5, 5, 3)), pe.zeros((3, 3, 3, 1)))
    with pytest.raises(DTypeError, match=r"depthwise_conv2d: x has dtype int32, expected float32"):
        pe.depthwise_conv2d(pe.zeros((1, 5, 5, 3), "int32"), pe.zeros((3, 3, 3, 1)))
    with pytest.raises(ShapeError, match=r"depthwise_conv2d: a 3x3 filter .* leaves no output"):
        pe.depthwise_conv2d(pe.zeros((1, 2, 5, 3)), pe.zeros((3, 3, 3, 1)))


@pytest.mark.parametrize(
    ("xs", "fs", "strides", "padding", "dilations"),
    [((2, 5, 5, 2), (3, 3, 2, 2), 2, "same", 1), ((1, 5, 4, 2), (2, 2, 2, 1), 1, [[1, 1], [0, 2]], 2)],
)
def test_depthwise_gradients(rng, xs, fs, strides, padding, dilations):
    check_gradients(
        lambda x, f: pe.depthwise_conv2d(x, f, strides, padding, dilations),
        values(rng, *xs) * 0.5,
        values(rng, *fs) * 0.5,
    )


# ---- pooling ------------------------------------------------------------------------------------


def test_avg_pool_same_divides_by_real_pixels():
    x = pe.tensor(np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1))
    y = pe.avg_pool(x, 2, 1, "same").numpy()[0, ..., 0]
    assert y[0, 0] == 3 and y[0, 2] == 4.5 and y[2, 2] == 9 and y[2, 0] == 7.5


def test_max_pool_same_ignores_padding():
    x = pe.tensor(-np.arange(1, 17, dtype=np.float32).reshape(1, 4, 4, 1))
    y = pe.max_pool(x, 3, 2, "same").numpy()[0, ..., 0]
    np.testing.assert_array_equal(y, [[-1, -3], [-9, -11]])  # even size: the padding is at bottom/right


POOL_CASES = [
    ((2, 5, 5, 3), (2, 2), (2, 2), "valid"),
    ((2, 5, 5, 3), (3, 3), (2, 2), "same"),
    ((1, 6, 7, 2), (3, 2), (2, 3), "same"),
    ((1, 4, 4, 1), (3, 3), (1, 1), "same"),
    ((2, 5, 4, 2), (2, 3), (1, 2), [[1, 0], [2, 1]]),
    ((1, 1, 1, 2), (1, 1), (1, 1), "valid"),
    ((1, 3, 3, 1), (3, 3), (3, 3), "valid"),
]


@pytest.mark.parametrize(("xs", "k", "strides", "padding"), POOL_CASES)
def test_pools_match_reference(rng, xs, k, strides, padding):
    x = values(rng, *xs)
    got_max = pe.max_pool(pe.tensor(x), k, strides, padding).numpy()
    got_avg = pe.avg_pool(pe.tensor(x), k, strides, padding).numpy()
    np.testing.assert_allclose(got_max, ref_pool(x, k, strides, padding, np.max), rtol=1e-6)
    np.testing.assert_allclose(got_avg, ref_pool(x, k, strides, padding, np.mean), rtol=1e-5, atol=1e-6)


def test_pools_single_image_and_zero_batch(rng):
    x = values(rng, 5, 5, 2)
    np.testing.assert_allclose(
        pe.max_pool(pe.tensor(x), 2, 2).numpy(), ref_pool(x[None], (2, 2), (2, 2), "valid", np.max)[0]
    )
    assert pe.avg_pool(pe.zeros((0, 5, 5, 2)), 3, 2, "same").shape == (0, 3, 3, 2)
    assert pe.max_pool(pe.zeros((0, 5, 5, 2)), 3, 2, "same").shape == (0, 3, 3, 2)
    for pool in (pe.max_pool, pe.avg_pool):
        assert pe.grad(lambda t, pool=pool: pool(t, 3, 2, "same").sum())(pe.zeros((0, 5, 5, 2))).shape == (0, 5, 5, 2)


def test_max_pool_gradient_goes_to_first_maximum():
    x = pe.tensor(np.array([[1.0, 3.0], [3.0, 2.0]], np.float32).reshape(1, 2, 2, 1))
    dx = pe.grad(lambda t: pe.max_pool(t, 2, 1).sum())(x)
    np.testing.assert_array_equal(dx.numpy().reshape(2, 2), [[0, 1], [0, 0]])
    overlapping = pe.tensor(np.array([[5.0, 1.0, 5.0]], np.float32).reshape(1, 1, 3, 1))
    dx = pe.grad(lambda t: pe.max_pool(t, (1, 2), 1).sum())(overlapping)
    np.testing.assert_array_equal(dx.numpy().reshape(-1), [1, 0, 1])


def test_pool_errors():
    x = pe.zeros((1, 5, 5, 2))
    with pytest.raises(ShapeError, match=r"max_pool: x must have rank 3 or 4, got shape \(5, 5\)"):
        pe.max_pool(pe.zeros((5, 5)), 2, 2)
    with pytest.raises(DTypeError, match=r"avg_pool: x has dtype int32, expected float32"):
        pe.avg_pool(pe.zeros((1, 5, 5, 2), "int32"), 2, 2)
    with pytest.raises(
        ValueError, match=r"avg_pool: filter_size must be a positive int or 2 positive ints, got \(0, 2\)"
    ):
        pe.avg_pool(x, (0, 2), 1)
    with pytest.raises(ValueError, match=r"max_pool: strides must be a positive int or 2 positive ints, got -1"):
        pe.max_pool(x, 2, -1)
    with pytest.raises(
        ShapeError,
        match=r"max_pool: a 6x6 window with strides \(1, 1\) .* leaves no output for x of shape \(1, 5, 5, 2\)",
    ):
        pe.max_pool(x, 6, 1)
    with pytest.raises(
        ShapeError, match=r"avg_pool: padding \(\(2, 0\), \(0, 0\)\) must be smaller than the window \(2, 2\)"
    ):
        pe.avg_pool(x, 2, 1, [[2, 0], [0, 0]])
    with pytest.raises(ValueError, match=r"max_pool: padding must be 'same', 'valid'"):
        pe.max_pool(x, 2, 1, "SAME!")


@pytest.mark.parametrize(
    ("xs", "k", "strides", "padding"),
    [((2, 5, 5, 2), 3, 2, "same"), ((1, 4, 5, 2), (2, 3), (2, 1), "valid"), ((1, 4, 4, 1), 2, 1, [[1, 0], [0, 1]])],
)
def test_pool_gradients(rng, xs, k, strides, padding):
    size = int(np.prod(xs))
    distinct = (rng.permutation(size).reshape(xs) * 0.1).astype(np.float32)  # no ties, gaps >> eps
    check_gradients(lambda x: pe.max_pool(x, k, strides, padding), distinct)
    check_gradients(lambda x: pe.avg_pool(x, k, strides, padding), values(rng, *xs))


def test_global_avg_pool(rng):
    x = values(rng, 2, 3, 4, 5)
    np.testing.assert_allclose(pe.global_avg_pool(pe.tensor(x)).numpy(), x.mean((1, 2)), rtol=1e-5, atol=1e-6)
    assert pe.global_avg_pool(pe.tensor(x), keepdims=True).shape == (2, 1, 1, 5)
    np.testing.assert_allclose(pe.global_avg_pool(pe.tensor(x[0])).numpy(), x[0].mean((0, 1)), rtol=1e-5, atol=1e-6)
    assert pe.global_avg_pool(pe.zeros((0, 2, 2, 3))).shape == (0, 3)
    with pytest.raises(ShapeError, match=r"global_avg_pool: x must have rank 3 or 4, got shape \(4, 5\)"):
        pe.global_avg_pool(pe.zeros((4, 5)))
    with pytest.raises(DTypeError, match=r"global_avg_pool: x has dtype int32, expected float32"):
        pe.global_avg_pool(pe.zeros((1, 2, 2, 1), "int32"))
    check_gradients(pe.global_avg_pool, values(rng, 2, 2, 3, 2))


# ---- batch_norm and layer_norm ------------------------------------------------------------------


def test_batch_norm_rank1_params(rng):
    x, m, v, o, s = values(rng, 2, 3, 4), values(rng, 4), rng.uniform(0.5, 2, 4), values(rng, 4), values(rng, 4)
    y = pe.batch_norm(pe.tensor(x), pe.tensor(m), v.tolist(), pe.tensor(o), pe.tensor(s), variance_epsilon=1e-2)
    np.testing.assert_allclose(y.numpy(), (x - m) / np.sqrt(v + 1e-2) * s + o, rtol=1e-5, atol=1e-5)
    plain = pe.batch_norm(pe.tensor(x), pe.tensor(m), v.tolist())
    np.testing.assert_allclose(plain.numpy(), (x - m) / np.sqrt(v + 1e-3), rtol=1e-5, atol=1e-5)


def test_batch_norm_full_rank_params_and_size_one_dims(rng):
    x, m, v = values(rng, 2, 1, 3), values(rng, 1, 1, 3), rng.uniform(0.5, 2, (2, 1, 1)).astype(np.float32)
    y = pe.batch_norm(pe.tensor(x), pe.tensor(m), pe.tensor(v), offset=pe.tensor(np.float32([1.0])))
    np.testing.assert_allclose(y.numpy(), (x - m) / np.sqrt(v + 1e-3) + 1, rtol=1e-5, atol=1e-5)
    assert pe.batch_norm(pe.zeros((0, 3)), pe.zeros(3), pe.ones(3)).shape == (0, 3)


def test_batch_norm_leaves_only_its_result(rng):
    before = pe.memory().num_tensors
    pe.batch_norm(values(rng, 2, 3), [0.0, 1.0, 2.0], [1.0, 1.0, 1.0], [0.5] * 3, [2.0] * 3)
    assert pe.memory().num_tensors == before + 1


def test_batch_norm_errors():
    x = pe.zeros((2, 3, 4))
    with pytest.raises(
        ShapeError, match=r"batch_norm: mean of shape \(3,\) does not broadcast to x's shape \(2, 3, 4\)"
    ):
        pe.batch_norm(x, pe.zeros(3), pe.ones(4))
    with pytest.raises(ShapeError, match=r"batch_norm: scale has shape \(3, 4\); it must have rank 1 or x's rank 3"):
        pe.batch_norm(x, pe.zeros(4), pe.ones(4), scale=pe.ones((3, 4)))
    with pytest.raises(ShapeError, match=r"batch_norm: x must have rank >= 1, got a scalar"):
        pe.batch_norm(pe.scalar(1.0), pe.zeros(1), pe.ones(1))
    with pytest.raises(DTypeError, match=r"batch_norm: variance has dtype int32, expected float32"):
        pe.batch_norm(x, pe.zeros(4), pe.ones(4, "int32"))
    with pytest.raises(TypeError, match=r"batch_norm: variance_epsilon must be a number, got str"):
        pe.batch_norm(x, pe.zeros(4), pe.ones(4), variance_epsilon="small")


def test_batch_norm_gradients(rng):
    check_gradients(
        lambda x, m, v, o, s: pe.batch_norm(x, m, v, o, s),
        values(rng, 2, 2, 3),
        values(rng, 3),
        rng.uniform(0.5, 2, 3),
        values(rng, 3),
        values(rng, 3),
    )


def test_layer_norm_last_axis(rng):
    x, g, b = values(rng, 3, 5), values(rng, 5), values(rng, 5)
    y = pe.layer_norm(pe.tensor(x), pe.tensor(g), pe.tensor(b), epsilon=1e-5)
    want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + b
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-5)


def test_layer_norm_axis_list_with_axes_shaped_gamma(rng):
    x, g = values(rng, 2, 3, 4, 2), values(rng, 3, 4)
    y = pe.layer_norm(pe.tensor(x), pe.tensor(g), None, axis=[1, 2])
    m, v = x.mean((1, 2), keepdims=True), x.var((1, 2), keepdims=True)
    np.testing.assert_allclose(y.numpy(), (x - m) / np.sqrt(v + 1e-3) * g[None, :, :, None], rtol=1e-4, atol=1e-5)
    before = pe.memory().num_tensors
    pe.layer_norm(pe.tensor(x), g.tolist(), [0.0] * 2, axis=[-3, 2])
    assert pe.memory().num_tensors == before + 2  # the input tensor and the result


def test_layer_norm_errors():
    x = pe.zeros((2, 3))
    with pytest.raises(ShapeError, match=r"layer_norm: gamma of shape \(2,\) does not broadcast to x's shape \(2, 3\)"):
        pe.layer_norm(x, pe.ones(2))
    with pytest.raises(ShapeError, match=r"layer_norm: axis 2 is out of range for a tensor of rank 2"):
        pe.layer_norm(x, axis=2)
    with pytest.raises(ShapeError, match=r"layer_norm: axis \[\] names no axis of x \(2, 3\)"):
        pe.layer_norm(x, axis=[])
    with pytest.raises(DTypeError, match=r"layer_norm: x has dtype int32, expected float32"):
        pe.layer_norm(pe.zeros((2, 3), "int32"))
    with pytest.raises(TypeError, match=r"layer_norm: epsilon must be a number, got NoneType"):
        pe.layer_norm(x, epsilon=None)


def test_layer_norm_gradients(rng):
    check_gradients(lambda x, g, b: pe.layer_norm(x, g, b), values(rng, 3, 4), values(rng, 4), values(rng, 4))
    check_gradients(lambda x: pe.layer_norm(x, axis=[1, 2]), values(rng, 2, 2, 3, 1))


# ---- dropout ------------------------------------------------------------------------------------


def test_dropout_keeps_and_scales(rng):
    x = rng.uniform(1, 2, (100, 100)).astype(np.float32)
    y = pe.dropout(pe.tensor(x), 0.3, seed=7).numpy()
    kept = y != 0
    assert abs(1 - kept.mean() - 0.3) < 0.03
    np.testing.assert_allclose(y[kept], x[kept] / 0.7, rtol=1e-6)


def test_dropout_seed_repeats():
    x = pe.ones((50,))
    a, b, c = (pe.dropout(x, 0.5, seed=s).numpy() for s in (1, 1, 2))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_dropout_rate_zero_is_a_copy():
    x = pe.tensor([1.0, 2.0])
    y = pe.dropout(x, 0)
    assert y is not x
    x.dispose()
    np.testing.assert_array_equal(y.numpy(), [1, 2])


def test_dropout_noise_shape():
    y = pe.dropout(pe.ones((6, 40)), 0.5, noise_shape=[None, 1], seed=3).numpy()
    assert all(len(set(row)) == 1 for row in y)  # one draw per row
    assert {0.0, 2.0} == set(y[:, 0])
    assert pe.dropout(pe.zeros((0, 3)), 0.5).shape == (0, 3)


def test_dropout_errors():
    x = pe.ones((2, 3))
    for rate in (1, -0.1, 1.5):
        with pytest.raises(ValueError, match=rf"dropout: rate must be in \[0, 1\), got {float(rate)}"):
            pe.dropout(x, rate)
    with pytest.raises(TypeError, match=r"dropout: rate must be a number, got str"):
        pe.dropout(x, "0.5")
    with pytest.raises(
        ShapeError, match=r"dropout: noise_shape \(2, 2\) must have x's rank 2 and sizes equal to x's \(2, 3\) or 1"
    ):
        pe.dropout(x, 0.5, noise_shape=(2, 2))
    with pytest.raises(ShapeError, match=r"dropout: noise_shape \(2,\) must have x's rank 2"):
        pe.dropout(x, 0.5, noise_shape=(2,))
    with pytest.raises(DTypeError, match=r"dropout: x has dtype int32, expected float32"):
        pe.dropout(pe.ones((2,), "int32"), 0.5)


def test_dropout_gradient(rng):
    x = values(rng, 3, 4)
    check_gradients(lambda t: pe.dropout(t, 0.4, seed=5), x)
    mask = pe.dropout(pe.ones((3, 4)), 0.4, seed=5).numpy()
    np.testing.assert_allclose(pe.grad(lambda t: pe.dropout(t, 0.4, seed=5).sum())(pe.tensor(x)).numpy(), mask)


def test_conv2d_filter_gradient_with_zero_input_channels():
    x, w = pe.zeros((1, 4, 4, 0)), pe.zeros((3, 3, 0, 2))
    gx, gw = pe.grads(lambda a, b: pe.conv2d(a, b, padding="same").sum())(x, w)
    assert gx.shape == (1, 4, 4, 0) and gw.shape == (3, 3, 0, 2)


def test_local_response_normalization_against_its_formula():
    x = np.random.default_rng(5).normal(size=(1, 2, 3, 7))
    r, bias, alpha, beta = 2, 1.5, 0.3, 0.75
    squares = np.stack([(x[..., max(0, c - r) : c + r + 1] ** 2).sum(-1) for c in range(7)], -1)
    want = x / (bias + alpha * squares) ** beta
    got = pe.local_response_normalization(pe.tensor(x), r, bias, alpha, beta)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    check_gradients(lambda t: pe.local_response_normalization(t, 1, 1.0, 0.5, 0.5), x[:, :1, :2, :4])
    with pytest.raises(ShapeError, match="local_response_normalization: x must have rank 4"):
        pe.local_response_normalization(pe.tensor(x[0]))


def test_conv1d_is_conv2d_over_one_row():
    rng = np.random.default_rng(8)
    x, f = rng.normal(size=(2, 9, 3)), rng.normal(size=(3, 3, 4))
    want = np.stack([np.einsum("bkc,kco->bo", x[:, i : i + 3], f) for i in range(7)], 1)
    np.testing.assert_allclose(pe.conv1d(pe.tensor(x), pe.tensor(f)).numpy(), want, rtol=1e-5, atol=1e-5)
    assert pe.conv1d(pe.tensor(x[0]), pe.tensor(f), 2, "same").shape == (5, 4)
    check_gradients(lambda t: pe.conv1d(t, pe.tensor(f[:2]), 1, 1, dilation=2), x[:1, :5])
    with pytest.raises(ShapeError, match="conv1d: filter must have rank 3"):
        pe.conv1d(pe.tensor(x), pe.tensor(f[0]))


def test_dilation2d_and_max_pool_with_argmax():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    flat = np.zeros((2, 2, 1), np.float32)
    np.testing.assert_array_equal(pe.dilation2d(pe.tensor(x), pe.tensor(flat)).numpy()[0, :, :, 0], x[0, 1:, 1:, 0])
    result, indexes = pe.max_pool_with_argmax(pe.tensor(x), 2, 2)
    assert result.numpy().ravel().tolist() == [5, 7, 13, 15] and indexes.numpy().ravel().tolist() == [5, 7, 13, 15]
    rng = np.random.default_rng(9)
    image, filt = pe.tensor(rng.normal(size=(3, 4, 2))), pe.tensor(rng.normal(size=(2, 3, 2)))
    check_gradients(lambda t: pe.dilation2d(t, filt, 1, "same"), image.numpy())
    check_gradients(lambda f: pe.dilation2d(image, f, 2, "same"), filt.numpy())
    check_gradients(lambda t: pe.max_pool_with_argmax(t, 2, 1)[0], rng.normal(size=(1, 3, 3, 2)))
    with pytest.raises(ShapeError, match=r"dilation2d: filter must be \[h, w, 1\] \(x's channels\), got \(2, 2, 2\)"):
        pe.dilation2d(pe.tensor(x), pe.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="dilation2d: data_format must be 'NHWC'"):
        pe.dilation2d(pe.tensor(x), pe.tensor(flat), data_format="NCHW")
