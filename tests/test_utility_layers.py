"""Reshaping, merge, activation, noise, preprocessing and pooling layers against numpy formulas (TF.js 4.22's
semantics); their configs round-trip, PReLU's gradients pass a finite-difference check."""

import json

import numpy as np
import pytest

import py_engine as pe
from tests.gradcheck import check_gradients

L = pe.layers


def run(layer, *arrays, training=False, mask=None):
    inputs = [pe.tensor(a) for a in arrays]
    out = layer(inputs if len(inputs) > 1 else inputs[0], training=training, mask=mask)
    value = out.numpy()
    pe.dispose([inputs, out])
    return value


def normal(rng, *shape):
    return rng.normal(size=shape).astype(np.float32)


def test_repeat_vector_and_permute(rng):
    x = normal(rng, 2, 3)
    np.testing.assert_array_equal(run(L.RepeatVector(4), x), np.repeat(x[:, None], 4, axis=1))
    y = normal(rng, 2, 3, 4, 5)
    np.testing.assert_array_equal(run(L.Permute([3, 1, 2]), y), y.transpose(0, 3, 1, 2))
    with pytest.raises(ValueError, match=r"permutation of 1\.\.n"):
        L.Permute([0, 1])
    with pytest.raises(pe.ShapeError, match="rank 2"):
        run(L.RepeatVector(2), y)


def test_masking_zeroes_masked_steps_and_masks_what_follows(rng):
    x = normal(rng, 2, 4, 3)
    x[0, 1] = x[1, 3] = 0.0
    keep = np.array([[1, 0, 1, 1], [1, 1, 1, 0]], bool)
    masking = L.Masking()
    np.testing.assert_array_equal(run(masking, x), x * keep[..., None])
    t = pe.tensor(x)
    mask = masking.compute_mask(t)
    np.testing.assert_array_equal(mask.numpy(), keep)
    pe.dispose([t, mask])
    # A masked mean downstream sees the mask: the mean over the kept steps only
    inputs = L.Input(shape=(4, 3))
    model = pe.Model(inputs, L.GlobalAveragePooling1D()(L.Masking()(inputs)))
    want = (x * keep[..., None]).sum(1) / keep.sum(1, keepdims=True)
    np.testing.assert_allclose(model.predict(x).numpy(), want, rtol=1e-6)
    model.dispose()


def test_elementwise_merges_broadcast_after_the_batch_axis(rng):
    a, b, c = normal(rng, 2, 3), normal(rng, 2, 3), normal(rng, 2, 4, 3)
    np.testing.assert_allclose(run(L.Multiply(), a, b), a * b)
    np.testing.assert_allclose(run(L.Average(), a, b, c), (a[:, None] + b[:, None] + c) / 3, rtol=1e-6)
    np.testing.assert_array_equal(run(L.Maximum(), a, c), np.maximum(a[:, None], c))
    np.testing.assert_array_equal(run(L.Minimum(), a, b), np.minimum(a, b))
    np.testing.assert_allclose(run(L.Add(), c, a), c + a[:, None])
    assert L.Average().compute_output_shape([(None, 3), (None, 4, 3)]) == (None, 4, 3)
    with pytest.raises(pe.ShapeError, match="do not match"):
        L.Multiply().compute_output_shape([(None, 3), (None, 4)])


def test_elementwise_merges_and_their_inputs_masks(rng):
    """The output's mask is the AND of the inputs' (Keras's; TF.js 4.22 keeps the first input's only)."""
    x, y = normal(rng, 2, 4, 3), normal(rng, 2, 4, 3)
    x[0, 1], y[0, 2], y[1, 0] = 0.0, 0.0, 0.0
    keep = np.array([[1, 0, 0, 1], [0, 1, 1, 1]], bool)
    a, b = L.Input(shape=(4, 3)), L.Input(shape=(4, 3))
    merged = L.Multiply()([L.Masking()(a), L.Masking()(b)])
    model = pe.Model([a, b], L.GlobalAveragePooling1D()(merged))
    product = x * y * keep[..., None]
    np.testing.assert_allclose(
        model.predict([x, y]).numpy(), product.sum(1) / keep.sum(1, keepdims=True), rtol=1e-5, atol=1e-6
    )
    model.dispose()


def _l2_normalized(x, axis):
    return x / np.sqrt(np.maximum((x * x).sum(axis, keepdims=True), 1e-7))


@pytest.mark.parametrize(
    ("shapes", "axes", "subscripts"),
    [
        (((2, 4), (2, 4)), 1, "bi,bi->b"),
        (((2, 3, 4), (2, 5, 4)), [2, 2], "bik,bjk->bij"),
        (((2, 3, 4), (2, 4, 5)), [2, 1], "bik,bkj->bij"),
        (((2, 4, 3), (2, 4, 5)), 1, "bki,bkj->bij"),
        (((2, 3, 4), (2, 4)), [2, 1], "bik,bk->bi"),
        (((2, 4), (2, 5, 4)), [1, 2], "bk,bjk->bj"),
    ],
)
@pytest.mark.parametrize("normalize", [False, True])
def test_dot_is_a_batched_contraction(rng, shapes, axes, subscripts, normalize):
    x, y = normal(rng, *shapes[0]), normal(rng, *shapes[1])
    layer = L.Dot(axes, normalize=normalize)
    out = run(layer, x, y)
    ax = [axes, axes] if isinstance(axes, int) else axes
    if normalize:
        x, y = _l2_normalized(x, ax[0]), _l2_normalized(y, ax[1])
    want = np.einsum(subscripts, x, y)
    want = want[:, None] if want.ndim == 1 else want
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    assert layer.compute_output_shape([(None, *shapes[0][1:]), (None, *shapes[1][1:])]) == (None, *want.shape[1:])


def test_dot_refuses_axes_that_do_not_pair_up():
    with pytest.raises(pe.ShapeError, match="do not pair up"):
        L.Dot(1).compute_output_shape([(None, 3, 4), (None, 5, 4)])
    with pytest.raises(ValueError, match="an int or a pair"):
        L.Dot("1")


def test_parametric_activations(rng):
    x = normal(rng, 3, 5)
    np.testing.assert_allclose(run(L.LeakyReLU(), x), np.where(x >= 0, x, 0.3 * x), rtol=1e-6)
    np.testing.assert_allclose(run(L.LeakyReLU(alpha=0.05), x), np.where(x >= 0, x, 0.05 * x), rtol=1e-6)
    np.testing.assert_allclose(run(L.ELU(), x), np.where(x > 0, x, np.expm1(x)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(run(L.ELU(alpha=0.5), x), np.where(x > 0, x, 0.5 * np.expm1(x)), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(run(L.ThresholdedReLU(theta=0.4), x), np.where(x > 0.4, x, 0))
    y = normal(rng, 2, 3, 4)
    want = np.exp(y) / np.exp(y).sum((1, 2), keepdims=True)
    np.testing.assert_allclose(run(L.Softmax(axis=[1, 2]), y), want, rtol=1e-5)


def test_prelu_slopes_shared_axes_and_gradients(rng):
    x = normal(rng, 2, 3, 4, 2)
    layer = L.PReLU(shared_axes=[1, 2], alpha_initializer={"class_name": "Constant", "config": {"value": 0.25}})
    np.testing.assert_allclose(run(layer, x), np.where(x >= 0, x, 0.25 * x), rtol=1e-6)
    assert layer.alpha.shape == (1, 1, 2) and layer.trainable_weights == [layer.alpha]
    layer.alpha.assign(np.array([[[0.1, -0.7]]], np.float32))
    np.testing.assert_allclose(run(layer, x), np.where(x >= 0, x, x * np.array([0.1, -0.7])), rtol=1e-6)
    layer.dispose()

    # Gradients with respect to the input and to alpha (values kept away from relu's kink at 0)
    x = normal(rng, 2, 3)
    x = np.where(np.abs(x) < 0.1, 0.5, x).astype(np.float32)
    prelu = L.PReLU()
    prelu.build((None, 3))

    def through_layer(inputs, alpha):
        prelu.alpha = alpha  # the layer's call, with alpha as a differentiable input
        return prelu.call(inputs)

    weight = prelu.weights[0]
    check_gradients(through_layer, x, normal(rng, 3))
    pe.dispose(weight)


def test_noise_layers_pass_inputs_through_at_inference(rng):
    x = normal(rng, 4, 5, 3)
    for layer in (L.GaussianNoise(0.5), L.GaussianDropout(0.3), L.AlphaDropout(0.2), L.SpatialDropout1D(0.4)):
        np.testing.assert_array_equal(run(layer, x), x, err_msg=layer.class_name)


def test_noise_layers_while_training(rng):
    x = np.ones((200, 50, 4), np.float32)
    noisy = run(L.GaussianNoise(0.5, seed=1), x, training=True) - x
    assert abs(noisy.mean()) < 0.01 and abs(noisy.std() - 0.5) < 0.01
    scaled = run(L.GaussianDropout(0.3, seed=2), x, training=True)
    assert abs(scaled.mean() - 1) < 0.01 and abs(scaled.std() - np.sqrt(0.3 / 0.7)) < 0.01
    # AlphaDropout keeps a standard normal input's mean and variance
    z = normal(rng, 400, 100)
    dropped = run(L.AlphaDropout(0.2, seed=3), z, training=True)
    assert abs(dropped.mean()) < 0.02 and abs(dropped.std() - 1) < 0.02
    alpha_p = -1.6732632423543772 * 1.0507009873554805
    a = ((1 - 0.2) * (1 + 0.2 * alpha_p**2)) ** -0.5
    dropped_value = a * alpha_p - a * alpha_p * 0.2  # SELU's saturation, through the affine correction
    assert abs(np.isclose(dropped, dropped_value).mean() - 0.2) < 0.01
    # SpatialDropout1D drops whole channels of each example, and scales the rest by 1 / (1 - rate)
    channels = run(L.SpatialDropout1D(0.5, seed=4), x, training=True)
    assert set(np.unique(channels)) == {0.0, 2.0}
    assert (channels == channels[:, :1]).all()


def test_rescaling_and_resizing(rng):
    x = normal(rng, 2, 4, 6, 3)
    np.testing.assert_allclose(run(L.Rescaling(1 / 127.5, offset=-1), x), x / 127.5 - 1, rtol=1e-6, atol=1e-7)
    # TF.js's Resizing maps corner pixels onto corner pixels (align_corners)
    out = run(L.Resizing(7, 3), x)
    rows, cols = np.linspace(0, 3, 7), np.linspace(0, 5, 3)
    np.testing.assert_allclose(out, _bilinear(x, rows, cols), rtol=1e-5, atol=1e-6)
    nearest = run(L.Resizing(7, 3, interpolation="nearest"), x)
    halves_up_rows, halves_up_cols = np.floor(rows + 0.5).astype(int), np.floor(cols + 0.5).astype(int)
    np.testing.assert_array_equal(nearest, x[:, halves_up_rows][:, :, halves_up_cols])
    # crop_to_aspect_ratio: the centred 4x4 window of the 4x6 images, then resized (as Keras)
    cropped = run(L.Resizing(2, 2, crop_to_aspect_ratio=True), x)
    window = x[:, :, 1:5]
    np.testing.assert_allclose(cropped, _bilinear(window, np.arange(2) * 2.0, np.arange(2) * 2.0), rtol=1e-5)


def _bilinear(x, rows, cols):
    """Bilinear samples of x [N, H, W, C] at fractional source rows and columns (clamped at the far edge)."""
    h, w = x.shape[1:3]
    top, left = np.floor(rows).astype(int), np.floor(cols).astype(int)
    bottom, right = np.minimum(top + 1, h - 1), np.minimum(left + 1, w - 1)
    dy, dx = (rows - top)[None, :, None, None], (cols - left)[None, None, :, None]
    upper = x[:, top][:, :, left] * (1 - dx) + x[:, top][:, :, right] * dx
    lower = x[:, bottom][:, :, left] * (1 - dx) + x[:, bottom][:, :, right] * dx
    return upper * (1 - dy) + lower * dy


def test_center_crop(rng):
    x = normal(rng, 2, 7, 8, 3)
    np.testing.assert_array_equal(run(L.CenterCrop(3, 4), x), x[:, 2:5, 2:6])
    np.testing.assert_array_equal(run(L.CenterCrop(7, 8), x), x)
    np.testing.assert_array_equal(run(L.CenterCrop(7, 7), x), x[:, :, 1:8])  # TF.js starts a width 1 less at 1
    # Larger than the images: they are resized, whole (tf.image.resizeBilinear without align_corners)
    out = run(L.CenterCrop(14, 8), x)
    np.testing.assert_allclose(out, _bilinear(x, np.arange(14) * 0.5, np.arange(8) * 1.0), rtol=1e-5, atol=1e-6)


def test_category_encoding(rng):
    ids = np.array([[0, 2, 2, 5], [1, 1, 1, 1]], np.float32)
    multi = np.zeros((2, 6), np.float32)
    counts = np.zeros((2, 6), np.float32)
    for row, values in enumerate(ids.astype(int)):
        multi[row, values] = 1
        np.add.at(counts[row], values, 1)
    np.testing.assert_array_equal(run(L.CategoryEncoding(6), ids), multi)
    np.testing.assert_array_equal(run(L.CategoryEncoding(6, output_mode="count"), ids), counts)
    one = run(L.CategoryEncoding(4, output_mode="one_hot"), np.array([[3], [0], [2]], np.float32))
    np.testing.assert_array_equal(one, np.eye(4, dtype=np.float32)[[3, 0, 2]])
    with pytest.raises(ValueError, match=r"ids must be in \[0, 5\)"):
        run(L.CategoryEncoding(5), ids)
    with pytest.raises(ValueError, match="output_mode must be"):
        L.CategoryEncoding(5, output_mode="tf_idf")
    with pytest.raises(pe.ShapeError, match="one_hot takes ids"):
        L.CategoryEncoding(5, output_mode="one_hot").compute_output_shape((None, 3))


@pytest.mark.parametrize("cls", [L.RandomWidth, L.RandomHeight])
def test_random_width_and_height(rng, cls):
    x = normal(rng, 2, 6, 10, 3)
    layer = cls(factor=(-0.5, 0.5), seed=7)
    np.testing.assert_array_equal(run(layer, x), x)  # inference: unchanged
    axis = cls.axis
    sizes = {run(layer, x, training=True).shape[axis] for _ in range(8)}
    low, high = round(0.5 * x.shape[axis]), round(1.5 * x.shape[axis])
    assert len(sizes) > 1 and all(low <= s <= high for s in sizes), sizes
    first, second = cls(factor=(-0.5, 0.5), seed=3), cls(factor=(-0.5, 0.5), seed=3)
    draws = [run(first, x, training=True).shape[axis] for _ in range(4)]
    assert draws == [run(second, x, training=True).shape[axis] for _ in range(4)]  # a seed repeats its draws
    stretched = run(cls(factor=(1.0, 1.0), interpolation="nearest"), x, training=True)
    np.testing.assert_array_equal(stretched, np.repeat(x, 2, axis=axis))
    with pytest.raises(ValueError, match="factor"):
        cls(factor=(0.5, -0.5))


def test_cropping_and_upsampling(rng):
    x = normal(rng, 2, 5, 6, 3)
    np.testing.assert_array_equal(run(L.Cropping2D(((1, 2), (0, 1))), x), x[:, 1:3, 0:5])
    nchw = x.transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(run(L.Cropping2D((1, 2), data_format="channels_first"), nchw), nchw[:, :, 1:4, 2:4])
    np.testing.assert_array_equal(run(L.UpSampling2D((2, 3)), x), np.repeat(np.repeat(x, 2, 1), 3, 2))
    # TF.js's bilinear: output pixel i samples source i / size, and the last ones clamp to the edge
    out = run(L.UpSampling2D((2, 3), interpolation="bilinear"), x)
    np.testing.assert_allclose(out, _bilinear(x, np.arange(10) / 2, np.arange(18) / 3), rtol=1e-5, atol=1e-6)
    first = run(L.UpSampling2D((2, 3), interpolation="bilinear", data_format="channels_first"), nchw)
    np.testing.assert_allclose(first, out.transpose(0, 3, 1, 2), rtol=1e-6)
    with pytest.raises(pe.ShapeError, match="leaves nothing"):
        L.Cropping2D(3).compute_output_shape((None, 5, 6, 3))


def test_pooling_over_time(rng):
    x = normal(rng, 2, 7, 3)
    np.testing.assert_array_equal(run(L.MaxPooling1D(2), x), x[:, :6].reshape(2, 3, 2, 3).max(2))
    np.testing.assert_allclose(run(L.AveragePooling1D(3), x), x[:, :6].reshape(2, 2, 3, 3).mean(2), rtol=1e-6)
    # "same" with strides 2: 4 windows, padded 1 step before and 1 after (as TensorFlow), over the real steps only
    same = run(L.MaxPooling1D(3, strides=2, padding="same"), x)
    want = np.stack([x[:, max(s, 0) : s + 3].max(1) for s in (-1, 1, 3, 5)], 1)
    np.testing.assert_array_equal(same, want)
    avg = run(L.AveragePooling1D(2, strides=1, padding="same"), x)
    np.testing.assert_allclose(avg, np.stack([x[:, s : s + 2].mean(1) for s in range(7)], 1), rtol=1e-6)
    np.testing.assert_array_equal(run(L.GlobalMaxPooling1D(), x), x.max(1))
    img = normal(rng, 2, 4, 5, 3)
    np.testing.assert_array_equal(run(L.GlobalMaxPooling2D(), img), img.max((1, 2)))
    np.testing.assert_array_equal(run(L.GlobalMaxPooling2D(data_format="channels_first"), img), img.max((2, 3)))
    assert run(L.GlobalMaxPooling2D(keepdims=True), img).shape == (2, 1, 1, 3)
    average = run(L.GlobalAveragePooling2D(data_format="channels_first"), img)
    np.testing.assert_allclose(average, img.mean((2, 3)), rtol=1e-5)


def every_new_layer():
    return [
        L.RepeatVector(3),
        L.Permute([2, 1]),
        L.Masking(mask_value=1.5),
        L.Multiply(),
        L.Average(),
        L.Maximum(),
        L.Minimum(),
        L.Dot([1, 2], normalize=True),
        L.LeakyReLU(alpha=0.2),
        L.PReLU(shared_axes=[1]),
        L.ELU(),
        L.ThresholdedReLU(theta=0.5),
        L.Softmax(axis=[1, 2]),
        L.GaussianNoise(0.1),
        L.GaussianDropout(0.2),
        L.AlphaDropout(0.1, noise_shape=[None, 1, 3]),
        L.SpatialDropout1D(0.3),
        L.Rescaling(0.5, offset=1),
        L.Resizing(3, 4, interpolation="nearest", crop_to_aspect_ratio=True),
        L.CenterCrop(2, 3),
        L.CategoryEncoding(5, output_mode="count"),
        L.RandomWidth(0.2, seed=1),
        L.RandomHeight([-0.1, 0.3], interpolation="nearest"),
        L.Cropping2D(((1, 0), (2, 3)), data_format="channels_first"),
        L.UpSampling2D((2, 3), interpolation="bilinear"),
        L.MaxPooling1D(3, strides=1, padding="same"),
        L.AveragePooling1D(),
        L.GlobalMaxPooling1D(),
        L.GlobalMaxPooling2D(data_format="channels_first"),
        L.GlobalAveragePooling2D(data_format="channels_first", keepdims=True),
    ]


def test_configs_round_trip_and_load_by_class_name():
    for layer in every_new_layer():
        config = json.loads(json.dumps(layer.get_config()))
        again = L.deserialize({"class_name": layer.class_name, "config": config})
        assert type(again) is type(layer) and again.get_config() == config, layer.class_name


def test_tfjs_style_config_values_are_accepted():
    """TF.js writes some enum values in camelCase when it does not convert them."""
    assert L.UpSampling2D(data_format="channelsFirst").data_format == "channels_first"
    assert L.CategoryEncoding(3, output_mode="oneHot").output_mode == "one_hot"
    assert L.MaxPooling1D(pool_size=[3], strides=[2]).get_config()["pool_size"] == [3]


# (layer, input shapes): each layer's gradients with respect to its inputs, by finite differences
DIFFERENTIABLE = [
    (L.RepeatVector(3), [(2, 3)]),
    (L.Permute([2, 3, 1]), [(2, 2, 3, 2)]),
    (L.Masking(mask_value=0.0), [(2, 3, 2)]),
    (L.Multiply(), [(2, 3), (2, 2, 3)]),
    (L.Average(), [(2, 3), (2, 3), (2, 3)]),
    (L.Maximum(), [(2, 4), (2, 4)]),
    (L.Minimum(), [(2, 4), (2, 4)]),
    (L.Dot([2, 2], normalize=True), [(2, 2, 3), (2, 3, 3)]),
    (L.Dot([1, 1]), [(2, 3), (2, 3, 2)]),
    (L.LeakyReLU(0.2), [(2, 5)]),
    (L.ELU(alpha=0.7), [(2, 5)]),
    (L.ThresholdedReLU(0.25), [(2, 5)]),
    (L.Softmax(axis=[1, 2]), [(2, 2, 3)]),
    (L.Rescaling(0.5, offset=0.1), [(1, 2, 2, 1)]),
    (L.Cropping2D(((1, 0), (0, 2))), [(1, 3, 4, 2)]),
    (L.UpSampling2D((2, 1), interpolation="bilinear"), [(1, 2, 3, 2)]),
    (L.UpSampling2D((1, 2), data_format="channels_first"), [(1, 2, 2, 3)]),
    (L.CenterCrop(2, 3), [(1, 4, 4, 2)]),
    (L.Resizing(3, 2), [(1, 2, 3, 1)]),
    (L.MaxPooling1D(2, strides=1), [(2, 4, 2)]),
    (L.AveragePooling1D(3, padding="same"), [(2, 4, 2)]),
    (L.GlobalMaxPooling1D(), [(2, 3, 2)]),
    (L.GlobalMaxPooling2D(data_format="channels_first"), [(1, 2, 2, 3)]),
    (L.GlobalAveragePooling2D(data_format="channels_first"), [(1, 2, 2, 3)]),
]


@pytest.mark.parametrize(("layer", "shapes"), DIFFERENTIABLE, ids=lambda v: getattr(v, "class_name", ""))
def test_gradients_through_the_layers(layer, shapes):
    rng = np.random.default_rng(5)
    # Inputs away from the kinks (0 for the ReLUs, theta for ThresholdedReLU) and without ties for the maxima
    arrays = [rng.choice([-1, 1], size=s) * rng.uniform(0.4, 1.6, size=s) for s in shapes]
    layer._ensure_built([(None, *s[1:]) for s in shapes] if layer.takes_list else (None, *shapes[0][1:]))

    def call(*xs):
        return layer.call(list(xs) if layer.takes_list else xs[0])

    check_gradients(call, *arrays)


def test_resizing_and_random_width_work_inside_models(rng):
    """TF.js 4.22 cannot run them in a model; here a model with them predicts and trains."""
    images = L.Input(shape=(6, 10, 3))
    resized = L.Resizing(4, 8)(images)
    stretched = L.RandomWidth((-0.5, 0.5), seed=1)(resized)
    model = pe.Model(images, L.Dense(2)(L.GlobalAveragePooling2D()(stretched)))
    assert stretched.shape == (None, 4, None, 3)
    x, y = normal(rng, 8, 6, 10, 3), normal(rng, 8, 2)
    before = model.get_weights()
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit(x, y, batch_size=4, epochs=2, verbose=0).history
    assert len(history["loss"]) == 2 and np.isfinite(history["loss"]).all()
    assert any(not np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
    predicted = model.predict(x)
    assert predicted.shape == (8, 2)
    pe.dispose(predicted)
    model.dispose()
