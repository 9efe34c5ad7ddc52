import asyncio
import math

import numpy as np
import pytest

import py_engine as pe
from py_engine.errors import DTypeError, ShapeError
from tests.gradcheck import check_gradients

F = np.float32

# ---- independent references: TensorFlow's formulas, one output pixel at a time, float32 coordinates ----


def scale(n_in, n_out, align_corners):
    return F(n_in - 1) / F(n_out - 1) if align_corners and n_out > 1 else F(n_in) / F(n_out)


def ref_bilinear(images, size, align_corners=False, half_pixel_centers=False, pixels=None):
    """The resized images, or with `pixels` only those (row, col) output pixels, as [N, len(pixels), C]."""
    n, h, w, c = images.shape
    sy, sx = scale(h, size[0], align_corners), scale(w, size[1], align_corners)

    def source(d, s, n_in):
        src = (F(d) + F(0.5)) * s - F(0.5) if half_pixel_centers else F(d) * s
        lo = max(math.floor(src), 0)
        return lo, min(math.ceil(src), n_in - 1), float(src) - math.floor(src)

    def pixel(i, j):
        (y0, y1, dy), (x0, x1, dx) = source(i, sy, h), source(j, sx, w)
        top = images[:, y0, x0] * (1 - dx) + images[:, y0, x1] * dx
        bottom = images[:, y1, x0] * (1 - dx) + images[:, y1, x1] * dx
        return top * (1 - dy) + bottom * dy

    if pixels is not None:
        return np.stack([pixel(i, j) for i, j in pixels], axis=1)
    out = np.zeros((n, *size, c))
    for i, j in np.ndindex(*size):
        out[:, i, j] = pixel(i, j)
    return out


def ref_nearest(images, size, align_corners=False, half_pixel_centers=False):
    h, w = images.shape[1:3]
    sy, sx = scale(h, size[0], align_corners), scale(w, size[1], align_corners)

    def source(d, s, n_in):
        src = float((F(d) + F(0.5)) * s if half_pixel_centers else F(d) * s)
        index = math.floor(src + 0.5) if align_corners else math.floor(src)  # C roundf: halves away from zero
        return min(index, n_in - 1)

    rows = [source(i, sy, h) for i in range(size[0])]
    cols = [source(j, sx, w) for j in range(size[1])]
    return images[:, rows][:, :, cols].astype(np.float64)


MODES = [dict(), dict(align_corners=True), dict(half_pixel_centers=True)]
SIZES = [
    ((2, 3, 4, 2), (5, 7)),
    ((1, 6, 5, 1), (4, 2)),
    ((3, 5, 5, 3), (5, 5)),
    ((1, 1, 4, 1), (3, 1)),
    ((2, 4, 3, 1), (1, 1)),
]


def image(rng, *shape):
    return rng.normal(size=shape).astype(np.float32)


# ---- resize_bilinear ------------------------------------------------------------------------------


def test_bilinear_hand_checked():
    x = pe.tensor([[1.0, 2.0], [3.0, 4.0]], shape=(2, 2, 1))
    up = pe.resize_bilinear(x, (4, 4)).numpy()[..., 0]
    np.testing.assert_allclose(up, [[1, 1.5, 2, 2], [2, 2.5, 3, 3], [3, 3.5, 4, 4], [3, 3.5, 4, 4]])
    hpc = pe.resize_bilinear(x, (4, 4), half_pixel_centers=True).numpy()[..., 0]
    np.testing.assert_allclose(hpc[0], [1, 1.25, 1.75, 2])
    np.testing.assert_allclose(hpc[:, 0], [1, 1.5, 2.5, 3])
    corners = pe.resize_bilinear(x, (4, 4), align_corners=True).numpy()[..., 0]
    np.testing.assert_allclose(corners[0], [1, 4 / 3, 5 / 3, 2], rtol=1e-6)
    np.testing.assert_allclose(corners[3], [3, 10 / 3, 11 / 3, 4], rtol=1e-6)


def test_bilinear_downscale_half_pixel():
    x = pe.tensor([[0.0, 4.0, 8.0]], shape=(1, 3, 1))
    y = pe.resize_bilinear(x, (1, 2), half_pixel_centers=True).numpy().reshape(-1)
    np.testing.assert_allclose(y, [0 * 0.75 + 4 * 0.25, 4 * 0.25 + 8 * 0.75])  # sources at 0.25 and 1.75


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("shape", "size"), SIZES)
def test_bilinear_matches_reference(rng, shape, size, mode):
    x = image(rng, *shape)
    y = pe.resize_bilinear(pe.tensor(x), size, **mode)
    assert y.shape == (shape[0], *size, shape[3]) and y.dtype == "float32"
    np.testing.assert_allclose(y.numpy(), ref_bilinear(x, size, **mode), rtol=1e-5, atol=1e-6)


def test_bilinear_photo_to_224(rng):
    photo = rng.integers(0, 256, (1, 480, 640, 3)).astype(np.int32)
    y = pe.resize_bilinear(pe.tensor(photo), (224, 224), half_pixel_centers=True).numpy()
    assert y.shape == (1, 224, 224, 3) and y.dtype == np.float32
    rows, cols = rng.integers(0, 224, 50), rng.integers(0, 224, 50)
    want = ref_bilinear(photo, (224, 224), half_pixel_centers=True, pixels=list(zip(rows, cols)))
    np.testing.assert_allclose(y[0, rows, cols], want[0], rtol=1e-5, atol=1e-3)


def test_bilinear_int_images_single_image_and_zero_batch(rng):
    ints = rng.integers(0, 256, (3, 4, 2)).astype(np.int32)
    y = pe.resize_bilinear(pe.tensor(ints), (5, 3))
    assert y.shape == (5, 3, 2) and y.dtype == "float32"
    np.testing.assert_allclose(y.numpy(), ref_bilinear(ints[None].astype(np.float32), (5, 3))[0], rtol=1e-5)
    assert pe.resize_bilinear(ints.tolist(), (2, 2)).dtype == "float32"
    assert pe.resize_bilinear(pe.zeros((0, 2, 2, 3)), (4, 5)).shape == (0, 4, 5, 3)
    dx = pe.grad(lambda t: pe.resize_bilinear(t, (4, 5)).sum())(pe.zeros((0, 2, 2, 3)))
    assert dx.shape == (0, 2, 2, 3)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("shape", "size"), [((2, 3, 4, 1), (5, 3)), ((1, 5, 4, 2), (2, 3)), ((3, 3, 2), (3, 2))])
def test_bilinear_gradients(rng, shape, size, mode):
    check_gradients(lambda t: pe.resize_bilinear(t, size, **mode), image(rng, *shape))


# ---- resize_nearest -------------------------------------------------------------------------------


def test_nearest_hand_checked():
    row = pe.tensor(np.arange(6, dtype=np.float32).reshape(1, 6, 1))
    assert pe.resize_nearest(row, (1, 3)).numpy().reshape(-1).tolist() == [0, 2, 4]
    assert pe.resize_nearest(row, (1, 3), half_pixel_centers=True).numpy().reshape(-1).tolist() == [1, 3, 5]
    assert pe.resize_nearest(row, (1, 3), align_corners=True).numpy().reshape(-1).tolist() == [0, 3, 5]  # 2.5 -> 3
    three = pe.tensor(np.float32([[10, 20, 30]]).reshape(1, 3, 1))
    assert pe.resize_nearest(three, (1, 4)).numpy().reshape(-1).tolist() == [10, 10, 20, 30]
    assert pe.resize_nearest(three, (1, 4), half_pixel_centers=True).numpy().reshape(-1).tolist() == [10, 20, 20, 30]
    assert pe.resize_nearest(three, (1, 4), align_corners=True).numpy().reshape(-1).tolist() == [10, 20, 20, 30]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("shape", "size"), [*SIZES, ((1, 10, 6, 1), (6, 4)), ((1, 3, 9, 1), (7, 5))])
def test_nearest_matches_reference(rng, shape, size, mode):
    x = image(rng, *shape)
    y = pe.resize_nearest(pe.tensor(x), size, **mode)
    assert y.dtype == "float32"
    np.testing.assert_array_equal(y.numpy(), ref_nearest(x, size, **mode))


def test_nearest_int_images_single_image_and_zero_batch():
    ints = pe.tensor(np.arange(4, dtype=np.int32).reshape(2, 2, 1))
    y = pe.resize_nearest(ints, (4, 4))
    assert y.dtype == "float32" and y.shape == (4, 4, 1)
    np.testing.assert_array_equal(y.numpy()[..., 0], [[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3], [2, 2, 3, 3]])
    assert pe.resize_nearest(pe.zeros((0, 3, 3, 1)), (2, 2)).shape == (0, 2, 2, 1)
    assert pe.grad(lambda t: pe.resize_nearest(t, (2, 5)).sum())(pe.zeros((0, 3, 3, 1))).shape == (0, 3, 3, 1)


def test_nearest_gradient_sums_copies():
    x = pe.tensor(np.float32([[1, 2]]).reshape(1, 1, 2, 1))
    dx = pe.grad(
        lambda t: (pe.resize_nearest(t, (2, 5)) * pe.tensor(np.arange(10, dtype=np.float32).reshape(1, 2, 5, 1))).sum()
    )(x)
    # columns 0..4 read sources [0, 0, 0, 1, 1]; two rows each
    np.testing.assert_array_equal(dx.numpy().reshape(-1), [0 + 1 + 2 + 5 + 6 + 7, 3 + 4 + 8 + 9])


@pytest.mark.parametrize("mode", MODES)
def test_nearest_gradients(rng, mode):
    check_gradients(lambda t: pe.resize_nearest(t, (5, 3), **mode), image(rng, 2, 3, 4, 1))
    check_gradients(lambda t: pe.resize_nearest(t, (2, 2), **mode), image(rng, 4, 3, 2))


# ---- errors and memory ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "name"), [(pe.resize_bilinear, "resize_bilinear"), (pe.resize_nearest, "resize_nearest")]
)
def test_resize_errors(op, name):
    x = pe.zeros((1, 4, 4, 3))
    with pytest.raises(ValueError, match=rf"{name}: align_corners and half_pixel_centers cannot both be True"):
        op(x, (2, 2), align_corners=True, half_pixel_centers=True)
    with pytest.raises(ValueError, match=rf"{name}: size must be a positive int or 2 positive ints, got \(0, 3\)"):
        op(x, (0, 3))
    with pytest.raises(ValueError, match=rf"{name}: size must be a positive int or 2 positive ints, got \(2,\)"):
        op(x, (2,))
    with pytest.raises(DTypeError, match=rf"{name}: images have dtype bool, expected float32 or int32"):
        op(pe.zeros((1, 4, 4, 3), "bool"), (2, 2))
    with pytest.raises(ShapeError, match=rf"{name}: images must have rank 3 or 4, got shape \(4, 4\)"):
        op(pe.zeros((4, 4)), (2, 2))
    with pytest.raises(ShapeError, match=rf"{name}: images of shape \(1, 0, 4, 3\) have no pixels to resize"):
        op(pe.zeros((1, 0, 4, 3)), (2, 2))


def test_resize_leaves_only_its_result():
    before = pe.memory().num_tensors
    pe.resize_bilinear([[[1], [2]], [[3], [4]]], (3, 3))
    pe.resize_nearest(np.ones((2, 2, 1), np.float32), (3, 3))
    assert pe.memory().num_tensors == before + 2


# ---- non-max suppression (tests/test_tfjs_graph_ops.py checks the results against TF.js's) ----------------------

BOXES = np.array(
    [[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11], [0, 10.1, 1, 11.1], [0, 100, 1, 101]]
)
SCORES = [0.9, 0.75, 0.6, 0.95, 0.5, 0.3]


def test_non_max_suppression_hand_checked():
    # TF.js's documented example: 3 overlaps 4 and 0 overlaps 1 and 2 (IoU 0.82 and 0.67 > 0.5)
    assert pe.non_max_suppression(BOXES, SCORES, 3).numpy().tolist() == [3, 0, 5]
    indices, valid = pe.non_max_suppression_padded(BOXES, SCORES, 5, score_threshold=0.4, pad_to_max_output_size=True)
    assert indices.numpy().tolist() == [3, 0, 0, 0, 0] and valid.shape == () and valid.item() == 2
    indices, valid = pe.non_max_suppression_padded(BOXES, SCORES, 50, pad_to_max_output_size=True)  # pads to 6 boxes
    assert indices.numpy().tolist() == [3, 0, 5, 0, 0, 0] and valid.item() == 3
    # soft-NMS: box 1 (IoU 0.818 with box 0) keeps 0.75 * exp(-0.5 * 0.818^2 / 0.5), and waits behind box 5
    indices, scores = pe.non_max_suppression_with_score(BOXES, SCORES, 6, 1.0, soft_nms_sigma=0.5)
    iou = 0.9 / 1.1
    assert indices.numpy().tolist() == [3, 0, 1, 5, 4, 2]
    np.testing.assert_allclose(scores.numpy()[:4], [0.95, 0.9, 0.75 * math.exp(-iou * iou), 0.3], rtol=1e-6)


def test_non_max_suppression_errors():
    with pytest.raises(
        ShapeError, match=r"non_max_suppression: boxes must have shape \[num_boxes, 4\] .* got \(6, 3\)"
    ):
        pe.non_max_suppression(BOXES[:, :3], SCORES, 3)
    with pytest.raises(ShapeError, match=r"scores must have shape \[num_boxes\] = \(6,\), got \(5,\)"):
        pe.non_max_suppression(BOXES, SCORES[:5], 3)
    with pytest.raises(ValueError, match=r"non_max_suppression: iou_threshold must be in \[0, 1\], got 1.5"):
        pe.non_max_suppression(BOXES, SCORES, 3, 1.5)
    with pytest.raises(ValueError, match="max_output_size must be >= 0, got -1"):
        pe.non_max_suppression(BOXES, SCORES, -1)
    with pytest.raises(TypeError, match=r"max_output_size must be an int, got 2\.5"):
        pe.non_max_suppression(BOXES, SCORES, 2.5)
    with pytest.raises(TypeError, match="score_threshold must be a number, got nan"):
        pe.non_max_suppression(BOXES, SCORES, 3, 0.5, math.nan)
    with pytest.raises(ValueError, match=r"non_max_suppression_with_score: soft_nms_sigma must be in \[0, 1\], got 2"):
        pe.non_max_suppression_with_score(BOXES, SCORES, 3, soft_nms_sigma=2)
    assert pe.memory().num_tensors == 0


def test_data_dependent_ops_read_back_on_webgpu_and_run_in_warmup_and_not_in_capture(gpu):
    boxes, scores, mask = pe.tensor(BOXES), pe.tensor(SCORES), pe.tensor([[True, False], [True, True]])
    before = pe.stats()
    indices, kept = pe.non_max_suppression_with_score(boxes, scores, 3)
    assert pe.stats()["readbacks"] - before["readbacks"] == 2  # boxes and scores
    assert pe.stats()["uploads"] - before["uploads"] == 2  # the results
    assert indices.numpy().tolist() == [3, 0, 5]
    before = pe.stats()
    coordinates = pe.where(mask)
    assert coordinates.numpy().tolist() == [[0, 0], [1, 0], [1, 1]]
    assert pe.stats()["readbacks"] - before["readbacks"] == 2  # the mask, then the result
    before = pe.stats()
    asyncio.run(pe.warmup(lambda: pe.non_max_suppression(boxes, scores, 3) + pe.argwhere(mask).sum()))
    assert pe.stats()["readbacks"] == before["readbacks"]  # a dry run reads nothing
    with pytest.raises(pe.CaptureError, match="read a tensor back"):
        pe.capture(lambda b, s: pe.non_max_suppression(b, s, 3))(boxes, scores)
    pe.dispose([boxes, scores, mask, indices, kept, coordinates])
    assert pe.memory().num_tensors == 0


def test_crop_and_resize_hand_checked_and_errors():
    image = pe.tensor(np.arange(9, dtype=np.float32).reshape(1, 3, 3, 1))
    whole = pe.crop_and_resize(image, [[0.0, 0.0, 1.0, 1.0]], [0], (3, 3))
    np.testing.assert_array_equal(whole.numpy().ravel(), np.arange(9))
    flipped = pe.crop_and_resize(image, [[1.0, 0.0, 0.0, 1.0]], [0], (2, 2), "nearest")
    np.testing.assert_array_equal(flipped.numpy().ravel(), [6, 8, 0, 2])
    centre = pe.crop_and_resize(
        image, [[0.25, 0.25, 0.75, 0.75], [0.0, 0.0, 3.0, 1.0]], [0, 0], (1, 1), "bilinear", 9.5
    )
    np.testing.assert_array_equal(centre.numpy().ravel(), [4.0, 9.5])  # the second box's centre row (3) is outside
    with pytest.raises(ShapeError, match=r"crop_and_resize: box_ind must be int32 of shape \[num_boxes\] = \(1,\)"):
        pe.crop_and_resize(image, [[0.0, 0.0, 1.0, 1.0]], [0, 0], (2, 2))
    with pytest.raises(ShapeError, match=r"crop_and_resize: boxes must have shape \[num_boxes, 4\]"):
        pe.crop_and_resize(image, [0.0, 0.0, 1.0, 1.0], [0], (2, 2))
    with pytest.raises(ValueError, match="crop_and_resize: method must be 'bilinear' or 'nearest'"):
        pe.crop_and_resize(image, [[0.0, 0.0, 1.0, 1.0]], [0], (2, 2), "bicubic")
    with pytest.raises(ShapeError, match="crop_and_resize: image must have rank 4"):
        pe.crop_and_resize(image[0], [[0.0, 0.0, 1.0, 1.0]], [0], (2, 2))


def test_transform_shifts_and_errors():
    image = pe.tensor(np.arange(12, dtype=np.float32).reshape(1, 3, 4, 1))
    shift = [[1, 0, 1, 0, 1, 0, 0, 0]]  # output (x, y) reads input (x + 1, y)
    np.testing.assert_array_equal(
        pe.transform(image, shift, fill_value=-1).numpy()[0, :, :, 0], [[1, 2, 3, -1], [5, 6, 7, -1], [9, 10, 11, -1]]
    )
    np.testing.assert_array_equal(pe.transform(image, shift, fill_mode="wrap").numpy()[0, 0, :, 0], [1, 2, 3, 0])
    assert pe.transform(image, shift, "bilinear", output_shape=(2, 5)).shape == (1, 2, 5, 1)
    with pytest.raises(ShapeError, match=r"transform: transforms must be \[1, 8\] or \[1, 8\], got \(1, 6\)"):
        pe.transform(image, [[1, 0, 1, 0, 1, 0]])
    with pytest.raises(ValueError, match="transform: fill_mode must be 'constant', 'reflect', 'wrap' or 'nearest'"):
        pe.transform(image, shift, fill_mode="mirror")
    with pytest.raises(ValueError, match="transform: interpolation must be 'nearest' or 'bilinear'"):
        pe.transform(image, shift, "cubic")
