"""Layers: outputs against independent numpy computations, weights (names, shapes), configs, errors; fused ops."""

import json

import numpy as np
import pytest

import py_engine as pe
from py_engine.errors import ShapeError
from py_engine.layers import initializers
from tests.gradcheck import check_gradients

L = pe.layers

NP_ACTIVATIONS = {
    "linear": lambda x: x,
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "elu": lambda x: np.where(x > 0, x, np.exp(np.minimum(x, 0)) - 1),
    "softplus": lambda x: np.log1p(np.exp(x)),
    "softmax": lambda x: (
        np.exp(x - x.max(-1, keepdims=True)) / np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)
    ),
    "swish": lambda x: x / (1 + np.exp(-x)),
}


def ref_conv(x, k, strides=(1, 1), padding="valid", dilations=(1, 1), depthwise=False):
    """Direct convolution (TensorFlow "same" padding: the extra pixel goes bottom/right), in float64."""
    x, k = x.astype(np.float64), k.astype(np.float64)
    (n, h, w, _), (kh, kw) = x.shape, k.shape[:2]
    eh, ew = (kh - 1) * dilations[0] + 1, (kw - 1) * dilations[1] + 1
    if padding == "same":
        oh, ow = -(-h // strides[0]), -(-w // strides[1])
        ph, pw = max((oh - 1) * strides[0] + eh - h, 0), max((ow - 1) * strides[1] + ew - w, 0)
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    else:
        oh, ow = (h - eh) // strides[0] + 1, (w - ew) // strides[1] + 1
    out = np.zeros((n, oh, ow, k.shape[2] * k.shape[3] if depthwise else k.shape[3]))
    for i in range(oh):
        for j in range(ow):
            y0, x0 = i * strides[0], j * strides[1]
            patch = x[:, y0 : y0 + eh : dilations[0], x0 : x0 + ew : dilations[1], :]
            if depthwise:
                out[:, i, j] = np.einsum("nhwc,hwcm->ncm", patch, k).reshape(n, -1)
            else:
                out[:, i, j] = np.einsum("nhwc,hwco->no", patch, k)
    return out


def run(layer, *xs, **kwargs):
    """The layer's output on numpy inputs, as numpy (tensors released)."""
    ts = [pe.tensor(x) for x in xs]
    try:
        out = layer(ts if len(ts) > 1 else ts[0], **kwargs)
        return out.numpy()
    finally:
        pe.dispose(ts)
        pe.dispose(locals().get("out"))


def test_dense_matches_numpy(rng):
    x = rng.normal(size=(4, 6)).astype(np.float32)
    layer = L.Dense(3, activation="tanh", name="fc")
    got = run(layer, x)
    kernel, bias = layer.get_weights()
    assert kernel.shape == (6, 3) and bias.shape == (3,)
    assert layer.weight_names == ["fc/kernel", "fc/bias"]
    np.testing.assert_allclose(got, np.tanh(x @ kernel + bias), rtol=1e-5, atol=1e-6)
    x3 = rng.normal(size=(2, 5, 6)).astype(np.float32)  # applies to the last axis of higher-rank inputs
    np.testing.assert_allclose(run(layer, x3), np.tanh(x3 @ kernel + bias), rtol=1e-5, atol=1e-6)
    layer.dispose()


def test_dense_without_bias_and_input_dim(rng):
    layer = L.Dense(2, use_bias=False, input_dim=3, kernel_initializer="ones")
    assert layer.batch_input_shape == (None, 3)
    x = rng.normal(size=(5, 3)).astype(np.float32)
    np.testing.assert_allclose(run(layer, x), x.sum(1, keepdims=True).repeat(2, 1), rtol=1e-6)
    assert len(layer.weights) == 1
    layer.dispose()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"padding": "valid"},
        {"padding": "same", "strides": 2},
        {"padding": "same", "dilation_rate": 2, "activation": "relu6"},
        {"padding": "valid", "strides": (2, 1), "use_bias": False, "activation": "softmax"},
        {"padding": "same", "activation": "swish"},
    ],
)
def test_conv2d_matches_numpy(rng, kwargs):
    x = rng.normal(size=(2, 9, 8, 3)).astype(np.float32) * 2
    layer = L.Conv2D(5, (3, 2), bias_initializer="random_normal", **kwargs)
    got = run(layer, x)
    kernel = layer.get_weights()[0]
    assert kernel.shape == (3, 2, 3, 5)  # HWIO
    strides = L.Conv2D(1, 1, strides=kwargs.get("strides", 1)).strides
    want = ref_conv(x, kernel, strides, kwargs["padding"], layer.dilation_rate)
    if layer.use_bias:
        want = want + layer.get_weights()[1]
    want = NP_ACTIVATIONS[kwargs.get("activation", "linear")](want)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    layer.dispose()


@pytest.mark.parametrize("multiplier, strides, padding", [(1, 1, "same"), (2, 2, "same"), (3, 1, "valid")])
def test_depthwise_conv2d_matches_numpy(rng, multiplier, strides, padding):
    x = rng.normal(size=(2, 7, 6, 4)).astype(np.float32)
    layer = L.DepthwiseConv2D(3, strides=strides, padding=padding, depth_multiplier=multiplier, activation="relu")
    layer.build((None, 7, 6, 4))
    layer.built = True
    layer.set_weights([rng.normal(size=(3, 3, 4, multiplier)), rng.normal(size=(4 * multiplier,))])
    got = run(layer, x)
    kernel, bias = layer.get_weights()
    want = np.maximum(ref_conv(x, kernel, (strides, strides), padding, depthwise=True) + bias, 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert [n.split("/")[1] for n in layer.weight_names] == ["depthwise_kernel", "bias"]
    layer.dispose()


def test_batch_normalization_inference_and_training(rng):
    x = rng.normal(2, 3, size=(6, 4, 4, 3)).astype(np.float32)
    layer = L.BatchNormalization(epsilon=1e-3, momentum=0.9, name="bn")
    layer.build((None, 4, 4, 3))
    layer.built = True
    gamma, beta, mean, var = (rng.uniform(0.5, 2, 3).astype(np.float32) for _ in range(4))
    layer.set_weights([gamma, beta, mean, var])
    assert layer.weight_names == ["bn/gamma", "bn/beta", "bn/moving_mean", "bn/moving_variance"]
    assert [v.trainable for v in layer.weights] == [True, True, False, False]
    np.testing.assert_allclose(run(layer, x), (x - mean) / np.sqrt(var + 1e-3) * gamma + beta, rtol=1e-5, atol=1e-5)
    trained = run(layer, x, training=True)  # batch statistics, and the moving ones move towards them
    batch_mean, batch_var = x.mean((0, 1, 2)), x.var((0, 1, 2))
    want = (x - batch_mean) / np.sqrt(batch_var + 1e-3) * gamma + beta
    np.testing.assert_allclose(trained, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(layer.get_weights()[2], 0.9 * mean + 0.1 * batch_mean, rtol=1e-5)
    np.testing.assert_allclose(layer.get_weights()[3], 0.9 * var + 0.1 * batch_var, rtol=1e-4)
    layer.dispose()


def test_batch_normalization_without_center_and_scale(rng):
    layer = L.BatchNormalization(center=False, scale=False)
    x = rng.normal(size=(3, 5)).astype(np.float32)
    np.testing.assert_allclose(run(layer, x), x / np.sqrt(1 + 1e-3), rtol=1e-6)
    assert len(layer.weights) == 2
    layer.dispose()


@pytest.mark.parametrize("name", sorted(NP_ACTIVATIONS))
def test_activation_layer(rng, name):
    x = rng.normal(0, 4, size=(3, 7)).astype(np.float32)
    np.testing.assert_allclose(run(L.Activation(name), x), NP_ACTIVATIONS[name](x), rtol=1e-5, atol=1e-6)


def test_relu_variants(rng):
    x = rng.normal(0, 5, size=(4, 9)).astype(np.float32)
    np.testing.assert_allclose(run(L.ReLU(), x), np.maximum(x, 0))
    np.testing.assert_allclose(run(L.ReLU(max_value=6), x), np.clip(x, 0, 6))
    np.testing.assert_allclose(run(L.ReLU(max_value=2.5), x), np.clip(x, 0, 2.5))
    leaky = L.ReLU(max_value=4, negative_slope=0.1, threshold=1)
    np.testing.assert_allclose(run(leaky, x), np.minimum(np.where(x >= 1, x, 0.1 * (x - 1)), 4), rtol=1e-6)
    assert L.ReLU(6.0).fused_activation == "relu6" and L.ReLU().fused_activation == "relu"
    assert leaky.fused_activation is None and L.ReLU(3).fused_activation is None


def test_softmax_layer_axis(rng):
    x = rng.normal(size=(2, 3, 4)).astype(np.float32)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(run(L.Softmax(axis=1), x), e / e.sum(1, keepdims=True), rtol=1e-5)


def test_add_and_concatenate(rng):
    a, b, c = (rng.normal(size=(2, 3, 4)).astype(np.float32) for _ in range(3))
    np.testing.assert_allclose(run(L.Add(), a, b, c), a + b + c, rtol=1e-6)
    np.testing.assert_array_equal(run(L.Concatenate(), a, b), np.concatenate([a, b], -1))
    np.testing.assert_array_equal(run(L.Concatenate(axis=1), a, b), np.concatenate([a, b], 1))
    with pytest.raises(TypeError, match="takes a list of at least 2 inputs"):
        run(L.Add(), a)


def test_pooling_layers(rng):
    x = rng.normal(size=(2, 5, 6, 3)).astype(np.float32)
    np.testing.assert_allclose(run(L.GlobalAveragePooling2D(), x), x.mean((1, 2)), rtol=1e-5)
    np.testing.assert_allclose(
        run(L.GlobalAveragePooling2D(keepdims=True), x), x.mean((1, 2), keepdims=True), rtol=1e-5
    )
    want_max = x[:, :4, :6].reshape(2, 2, 2, 3, 2, 3).max((2, 4))
    np.testing.assert_array_equal(run(L.MaxPooling2D(), x), want_max)
    want_avg = x[:, :4, :6].reshape(2, 2, 2, 3, 2, 3).mean((2, 4))
    np.testing.assert_allclose(run(L.AveragePooling2D(2), x), want_avg, rtol=1e-5)
    # "same" padding: the last window of the 5 rows holds one real row, and averages only it (as TensorFlow)
    same = run(L.AveragePooling2D(pool_size=2, strides=2, padding="same"), x)
    assert same.shape == (2, 3, 3, 3)
    np.testing.assert_allclose(same[:, 2, 0], x[:, 4, 0:2].mean(1), rtol=1e-5)


def test_zero_padding(rng):
    x = rng.normal(size=(1, 2, 3, 2)).astype(np.float32)
    np.testing.assert_array_equal(run(L.ZeroPadding2D(1), x), np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0))))
    np.testing.assert_array_equal(run(L.ZeroPadding2D((2, 0)), x), np.pad(x, ((0, 0), (2, 2), (0, 0), (0, 0))))
    layer = L.ZeroPadding2D(((0, 1), (2, 3)))
    np.testing.assert_array_equal(run(layer, x), np.pad(x, ((0, 0), (0, 1), (2, 3), (0, 0))))
    assert layer.get_config()["padding"] == [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match="padding must be"):
        L.ZeroPadding2D((1, 2, 3))


def test_dropout_only_while_training(rng):
    x = rng.uniform(1, 2, size=(200, 50)).astype(np.float32)
    layer = L.Dropout(0.25, seed=3)
    np.testing.assert_array_equal(run(layer, x), x)
    trained = run(layer, x, training=True)
    dropped = trained == 0
    assert 0.2 < dropped.mean() < 0.3
    np.testing.assert_allclose(trained[~dropped], x[~dropped] / 0.75, rtol=1e-6)


def test_flatten_and_reshape(rng):
    x = rng.normal(size=(3, 2, 4, 5)).astype(np.float32)
    np.testing.assert_array_equal(run(L.Flatten(), x), x.reshape(3, 40))
    np.testing.assert_array_equal(run(L.Reshape((8, -1)), x), x.reshape(3, 8, 5))
    with pytest.raises(ShapeError, match=r"cannot reshape examples of shape \(2, 4, 5\)"):
        run(L.Reshape((3, -1)), x)
    assert L.Flatten().compute_output_shape((None, 2, None)) == (None, None)


def every_layer():
    """One of each layer class, with non-default arguments, built where they have weights."""
    layers = [
        L.Dense(4, activation="relu", use_bias=False, kernel_initializer="he_normal", name="d"),
        L.Conv2D(3, 2, strides=2, padding="same", dilation_rate=1, activation="relu6", name="c"),
        L.DepthwiseConv2D(3, depth_multiplier=2, padding="same", use_bias=False, name="dw"),
        L.BatchNormalization(epsilon=1e-5, momentum=0.9, center=False, name="bn"),
        L.Activation("sigmoid"),
        L.ReLU(max_value=6.0),
        L.Softmax(axis=1),
        L.Add(),
        L.Concatenate(axis=2),
        L.GlobalAveragePooling2D(),
        L.AveragePooling2D(3, strides=1, padding="same"),
        L.MaxPooling2D((2, 3)),
        L.ZeroPadding2D(((1, 0), (0, 2))),
        L.Dropout(0.3, seed=1),
        L.Flatten(),
        L.Reshape((2, -1)),
        L.InputLayer(input_shape=(5, 5, 3), name="in"),
    ]
    return layers


def test_config_round_trip_for_every_layer():
    for layer in every_layer():
        config = layer.get_config()
        json.dumps(config)  # a TF.js modelTopology is JSON
        again = type(layer).from_config(json.loads(json.dumps(config)))
        assert again.get_config() == config, layer.class_name
        assert again.name == layer.name and again.class_name == layer.class_name
    assert set(pe.layers.CLASSES) >= {
        "InputLayer",
        "Dense",
        "Conv2D",
        "DepthwiseConv2D",
        "BatchNormalization",
        "Activation",
        "ReLU",
        "Add",
        "Concatenate",
        "GlobalAveragePooling2D",
        "AveragePooling2D",
        "MaxPooling2D",
        "ZeroPadding2D",
        "Dropout",
        "Flatten",
        "Reshape",
        "Softmax",
    }


def test_tfjs_style_config_keys_are_accepted():
    config = {
        "filters": 2,
        "kernel_initializer": {
            "class_name": "VarianceScaling",
            "config": {"scale": 1, "mode": "fan_avg", "distribution": "normal", "seed": None},
        },
        "kernel_regularizer": None,
        "kernel_constraint": None,
        "kernel_size": [3, 3],
        "strides": [1, 1],
        "padding": "valid",
        "data_format": "channels_last",
        "dilation_rate": [1, 1],
        "activation": "relu",
        "use_bias": True,
        "bias_initializer": {"class_name": "Zeros", "config": {}},
        "bias_regularizer": None,
        "activity_regularizer": None,
        "bias_constraint": None,
        "name": "conv2d_Conv2D1",
        "trainable": True,
        "batch_input_shape": [None, 5, 5, 1],
        "dtype": "float32",
    }
    layer = L.Conv2D.from_config(config)
    assert layer.get_config() == config
    x = np.ones((1, 5, 5, 1), np.float32)
    assert run(layer, x).shape == (1, 3, 3, 2)
    assert layer.weight_names == ["conv2d_Conv2D1/kernel", "conv2d_Conv2D1/bias"]
    layer.dispose()


def test_layer_errors(rng):
    with pytest.raises(TypeError, match=r"Dense: unknown argument\(s\) 'activaton'"):
        L.Dense(3, activaton="relu")
    with pytest.raises(ValueError, match="data_format 'channels_first' is not supported"):
        L.Conv2D(3, 3, data_format="channels_first")
    with pytest.raises(ValueError, match="unknown activation 'gelu2'"):
        L.Activation("gelu2")
    with pytest.raises(ValueError, match="padding must be 'same' or 'valid'"):
        L.Conv2D(3, 3, padding="causal")
    with pytest.raises(ValueError, match="kernel_size must be a positive int or a pair"):
        L.Conv2D(3, (3, 0))
    with pytest.raises(ValueError, match="grouped convolutions"):
        L.Conv2D(4, 3, groups=2)
    with pytest.raises(ValueError, match="normalizes the last axis"):
        L.BatchNormalization(axis=1).build((None, 4, 4, 3))
    conv = L.Conv2D(2, 3, name="c3")
    run(conv, rng.normal(size=(1, 5, 5, 3)).astype(np.float32))
    with pytest.raises(ShapeError, match=r"c3 \(Conv2D\): input has 4 channels on its last axis .* built for 3"):
        run(conv, rng.normal(size=(1, 5, 5, 4)).astype(np.float32))
    with pytest.raises(ShapeError, match=r"c3 \(Conv2D\): expects inputs of rank 4"):
        run(conv, rng.normal(size=(5, 5, 3)).astype(np.float32))
    with pytest.raises(ShapeError, match="leaves no output"):
        run(conv, rng.normal(size=(1, 2, 2, 3)).astype(np.float32))
    with pytest.raises(TypeError, match="cannot mix symbolic tensors"):
        L.Add()([L.Input(shape=(2,)), pe.ones((1, 2))])
    conv.dispose()


def test_weights_get_unique_variable_names_but_keep_their_saved_names():
    a, b = L.Dense(2, name="same"), L.Dense(2, name="same")
    for layer in (a, b):
        layer.build((None, 3))
    assert a.weight_names == b.weight_names == ["same/kernel", "same/bias"]
    assert [v.name for v in a.weights] == ["same/kernel", "same/bias"]
    assert [v.name for v in b.weights] == ["same/kernel_1", "same/bias_1"]
    assert a.count_params() == 8
    with pytest.raises(ShapeError, match=r"set_weights got shape \(3, 3\) for 'same/kernel'"):
        a.set_weights([np.zeros((3, 3)), np.zeros(2)])
    with pytest.raises(ValueError, match="set_weights got 1 arrays; it has 2 weights"):
        a.set_weights([np.zeros((3, 2))])
    assert a.dispose() == 2 and b.dispose() == 2
    assert pe.memory().num_tensors == 0


def test_layers_on_symbolic_inputs_infer_shapes():
    x = L.Input(shape=(9, 9, 3))
    assert x.shape == (None, 9, 9, 3)
    y = L.Conv2D(4, 3, strides=2, padding="same")(x)
    assert y.shape == (None, 5, 5, 4)
    z = L.DepthwiseConv2D(3, depth_multiplier=2)(y)
    assert z.shape == (None, 3, 3, 8)
    assert L.ZeroPadding2D(((1, 0), (2, 1)))(z).shape == (None, 4, 6, 8)
    assert L.MaxPooling2D(2)(z).shape == (None, 1, 1, 8)
    assert L.Flatten()(z).shape == (None, 72)
    assert L.Concatenate()([z, z]).shape == (None, 3, 3, 16)
    assert L.Add()([z, L.Input(shape=(1, 1, 8))]).shape == (None, 3, 3, 8)
    with pytest.raises(ShapeError, match="do not match"):
        L.Add()([z, y])
    assert L.Dense(5)(L.GlobalAveragePooling2D()(z)).shape == (None, 5)
    pe.dispose_variables()


def test_initializers():
    glorot = initializers.initialize("glorot_uniform", (200, 300))
    limit = np.sqrt(6 / 500)
    assert glorot.dtype == np.float32 and np.abs(glorot).max() <= limit and np.abs(glorot).max() > 0.9 * limit
    he = initializers.initialize({"class_name": "HeNormal", "config": {"seed": 1}}, (3, 3, 64, 64))
    # TF.js's HeNormal: a normal of stddev sqrt(2 / fan_in) truncated at 2 stddev, without Keras's correction
    stddev = np.sqrt(2 / 576)
    assert abs(he.std() - 0.8796 * stddev) < 0.05 * stddev and np.abs(he).max() <= 2 * stddev + 1e-6
    scaled = {
        "class_name": "VarianceScaling",
        "config": {"scale": 2, "mode": "fanIn", "distribution": "uniform", "seed": 3},
    }
    assert np.abs(initializers.initialize(scaled, (50, 10))).max() <= np.sqrt(6 / 50)
    np.testing.assert_array_equal(initializers.initialize(scaled, (5, 5)), initializers.initialize(scaled, (5, 5)))
    np.testing.assert_array_equal(initializers.initialize("ones", (2,)), [1, 1])
    np.testing.assert_array_equal(
        initializers.initialize({"class_name": "Constant", "config": {"value": 3}}, (2,)), [3, 3]
    )
    assert initializers.serialize("glorot_uniform") == {"class_name": "GlorotUniform", "config": {"seed": None}}
    with pytest.raises(ValueError, match="unknown initializer 'orthogonal_x'"):
        initializers.initialize("orthogonal_x", (2, 2))


# ---- fused convolutions -------------------------------------------------------------------------


# the fused ops' hard_swish, with its default scale 1/6 (the layers have no such activation)
FUSED_ACTIVATIONS = {**NP_ACTIVATIONS, "hard_swish": lambda x: x / 6 * np.clip(x + 3, 0, 6)}


@pytest.mark.parametrize("activation", pe.ops.fused.ACTIVATIONS)
@pytest.mark.parametrize("depthwise", [False, True])
def test_fused_ops_match_numpy(rng, activation, depthwise):
    x = rng.uniform(-3, 3, size=(2, 6, 7, 3)).astype(np.float32)
    k = rng.uniform(-1, 1, size=(3, 3, 3, 2)).astype(np.float32)
    bias = rng.uniform(-1, 1, size=(6 if depthwise else 2,)).astype(np.float32)
    op = pe.fused_depthwise_conv2d if depthwise else pe.fused_conv2d
    got = op(pe.tensor(x), pe.tensor(k), pe.tensor(bias), activation, 2, "same").numpy()
    want = FUSED_ACTIVATIONS[activation](ref_conv(x, k, (2, 2), "same", depthwise=depthwise) + bias)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    no_bias = op(x, k, None, activation, 1, "valid").numpy()  # numpy inputs are converted
    np.testing.assert_allclose(
        no_bias, FUSED_ACTIVATIONS[activation](ref_conv(x, k, depthwise=depthwise)), rtol=1e-4, atol=1e-4
    )


def test_fused_op_errors(rng):
    x, k = pe.ones((1, 4, 4, 3)), pe.ones((3, 3, 3, 2))
    with pytest.raises(ValueError, match="fused_conv2d: activation must be one of linear, relu"):
        pe.fused_conv2d(x, k, None, "softmax")
    with pytest.raises(ShapeError, match=r"fused_conv2d: bias has shape \(3,\); expected \(2,\)"):
        pe.fused_conv2d(x, k, pe.ones((3,)))
    with pytest.raises(ShapeError, match=r"fused_depthwise_conv2d: bias has shape \(2,\); expected \(6,\)"):
        pe.fused_depthwise_conv2d(x, k, pe.ones((2,)))
    with pytest.raises(ShapeError, match="has 2 input channels but x"):
        pe.fused_conv2d(x, pe.ones((3, 3, 2, 2)))
    assert pe.fused_conv2d(pe.ones((4, 4, 3)), k, None, "relu", padding="same").shape == (4, 4, 2)  # one image


@pytest.mark.parametrize("activation", ["relu6", "sigmoid", "elu", "softplus", "tanh", "linear"])
def test_fused_gradients(rng, activation):
    x = rng.uniform(-1.5, 1.5, size=(1, 4, 5, 2))
    k = rng.uniform(-1, 1, size=(2, 2, 2, 3))
    b = rng.uniform(-0.5, 0.5, size=(3,))
    check_gradients(lambda x, k, b: pe.fused_conv2d(x, k, b, activation, 1, "same"), x, k, b)
    kd = rng.uniform(-1, 1, size=(3, 3, 2, 2))
    check_gradients(lambda x, k: pe.fused_depthwise_conv2d(x, k, None, activation, 2, "same"), x, kd)
