"""Sequential and functional models: predict (batched, leak-free), weights, summary, config, BatchNorm folding."""

import asyncio
import json

import numpy as np
import pytest

import py_engine as pe
from py_engine.engine import ENGINE
from py_engine.errors import DisposedTensorError, ShapeError
from tests.test_layers import ref_conv

L = pe.layers


def conv_net(seed=0):
    """A small conv net with the blocks EfficientNet-Lite uses: conv+BN+ReLU6, depthwise+BN+ReLU6, residual add."""
    inputs = L.Input(shape=(8, 8, 3), name="image")
    x = L.Conv2D(6, 3, strides=2, padding="same", use_bias=False, name="stem")(inputs)
    x = L.BatchNormalization(name="stem_bn")(x)
    x = L.ReLU(6.0, name="stem_relu")(x)
    y = L.DepthwiseConv2D(3, padding="same", use_bias=False, name="dw")(x)
    y = L.BatchNormalization(name="dw_bn")(y)
    y = L.Activation("relu6", name="dw_relu")(y)
    y = L.Conv2D(6, 1, name="project")(y)
    y = L.BatchNormalization(name="project_bn")(y)
    x = L.Add(name="residual")([x, y])
    x = L.GlobalAveragePooling2D(name="pool")(x)
    x = L.Dropout(0.2, name="drop")(x)
    outputs = L.Dense(4, activation="softmax", name="fc")(x)
    model = pe.Model(inputs, outputs, name="convnet")
    rng = np.random.default_rng(seed)
    values = []
    for name, w in zip(model.weight_names, model.get_weights()):
        if name.endswith("moving_variance"):
            values.append(rng.uniform(0.5, 2, w.shape))
        elif name.endswith(("gamma", "moving_mean", "beta")):
            values.append(rng.uniform(-1, 1, w.shape) + (1 if name.endswith("gamma") else 0))
        else:
            values.append(rng.normal(0, 0.5, w.shape))
    model.set_weights(values)
    return model


def images(n=5, seed=1):
    return np.random.default_rng(seed).normal(size=(n, 8, 8, 3)).astype(np.float32)


def reference(model, x):
    """conv_net's forward pass in numpy, from its weights."""
    w = dict(zip(model.weight_names, model.get_weights()))

    def bn(v, name):
        return (v - w[f"{name}/moving_mean"]) / np.sqrt(w[f"{name}/moving_variance"] + 1e-3) * w[f"{name}/gamma"] + w[
            f"{name}/beta"
        ]

    x1 = np.clip(bn(ref_conv(x, w["stem/kernel"], (2, 2), "same"), "stem_bn"), 0, 6)
    y = np.clip(bn(ref_conv(x1, w["dw/depthwise_kernel"], padding="same", depthwise=True), "dw_bn"), 0, 6)
    y = bn(ref_conv(y, w["project/kernel"]) + w["project/bias"], "project_bn")
    logits = (x1 + y).mean((1, 2)) @ w["fc/kernel"] + w["fc/bias"]
    e = np.exp(logits - logits.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def test_functional_model_matches_numpy_and_predict_batches():
    model = conv_net()
    x = images(7)
    want = reference(model, x)
    called = model(pe.tensor(x))
    np.testing.assert_allclose(called.numpy(), want, rtol=1e-4, atol=1e-5)
    for batch_size in (1, 3, 7, 100):
        out = model.predict(x, batch_size=batch_size)
        assert out.shape == (7, 4)
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-5)
    xt = pe.tensor(x)
    out = model.predict(xt, batch_size=2)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-5)
    assert not xt.is_disposed
    assert model.predict(x[:0]).shape == (0, 4)
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        model.predict(x, batch_size=0)
    model.dispose()


@pytest.mark.usefixtures("each_backend")
def test_predict_leaks_nothing():
    model = conv_net()
    x = images(6)
    pe.dispose(model.predict(x, batch_size=4))  # the first call folds the batch norms (new variables)
    before = pe.memory()
    xt = pe.tensor(x)
    for _ in range(100):
        pe.dispose(model.predict(xt, batch_size=4))
    pe.dispose(xt)
    after = pe.memory()
    assert (after.num_tensors, after.num_bytes, after.num_data_buffers) == (
        before.num_tensors,
        before.num_bytes,
        before.num_data_buffers,
    )
    with pe.scope():  # inside a scope the result belongs to it
        model.predict(x)
    assert pe.memory().num_tensors == before.num_tensors
    model.dispose()


@pytest.mark.usefixtures("each_backend")
def test_folding_can_release_the_unfolded_weights_for_inference(tmp_path):
    model = conv_net()
    x = pe.tensor(images(4))
    want = model(x)
    baseline = pe.memory().num_bytes
    assert model.fold_batch_norms() == 3
    folded = pe.memory().num_bytes - baseline  # folded kernels and biases: the memory folding costs
    replaced = [
        v
        for layer in model.layers
        if layer.class_name in ("Conv2D", "DepthwiseConv2D", "BatchNormalization")
        for v in layer.weights
    ]
    assert model.fold_batch_norms(release_unfolded=True) == 3
    assert pe.memory().num_bytes == baseline + folded - sum(v.size * 4 for v in replaced)
    assert all(v.is_disposed for v in replaced) and not model.is_disposed
    got = model.predict(x)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)
    for attempt in (lambda: model(x), model.get_weights, lambda: model.set_weights([]), lambda: model.save(tmp_path)):
        with pytest.raises(RuntimeError, match=r"freed its unfolded weights .* only predict\(\) works"):
            attempt()
    assert model.dispose() == len(model.weights) - len(replaced) + 3 * 2  # what the layers kept, the folded pairs
    assert model.is_disposed
    pe.dispose([x, want, got])


@pytest.mark.usefixtures("each_backend")
def test_folding_gives_the_same_outputs_with_fewer_kernels():
    model = conv_net()
    x = pe.tensor(images(4))
    unfolded = pe.profile(lambda: model(x))
    assert model.fold_batch_norms() == 3
    folded = pe.profile(lambda: model.predict(x))
    np.testing.assert_allclose(folded.result.numpy(), unfolded.result.numpy(), rtol=1e-4, atol=1e-4)
    names = [k.name for k in folded.kernels]
    # stem, depthwise and project blocks: one fused kernel each; then Add, Mean, the Dense layer as a 1x1
    # convolution with its bias (its softmax after it)
    assert names == [
        "FusedConv2D",
        "FusedDepthwiseConv2D",
        "FusedConv2D",
        "Add",
        "Mean",
        "FusedConv2D",
        "Softmax",
    ]
    # unfolded: each conv 1, each batch norm 6 (Add, Rsqrt, Mul, Sub, Mul, Add), each ReLU6 1, then Add, Mean,
    # MatMul, bias Add and Softmax
    assert len(unfolded.kernels) == 3 + 3 * 6 + 2 + 5 == 28  # the folded pass runs 7
    if pe.get_backend() == "webgpu":  # the GPU runs 21 fewer dispatches (each removed kernel was one)
        dispatches = []
        for forward in (lambda: model(x), lambda: model.predict(x)):
            before = pe.stats()["dispatches"]
            pe.dispose(forward())
            dispatches.append(pe.stats()["dispatches"] - before)
        assert dispatches[0] - dispatches[1] == 21
    pe.dispose([x, unfolded.result, folded.result])
    model.dispose()


def test_a_model_folded_on_the_host_goes_to_the_gpu_once_already_folded():
    """The page's classifier: loaded and folded on numpy, so the GPU runs no folding and holds no unfolded weight."""
    assert asyncio.run(pe.set_backend("webgpu")), pe.backend_info()["fallback_reason"]
    before = pe.stats()
    with pe.on_backend("numpy"):
        x = pe.tensor(images(4))
        model = conv_net()
        want = model(x)
        assert model.fold_batch_norms(release_unfolded=True) == 3
    after = pe.stats()
    assert (after["dispatches"], after["uploads"]) == (before["dispatches"], before["uploads"])
    got = model.predict(x)
    kept = [v for v in model.weights if not v.is_disposed] + model.inference_plan().variables
    assert all(v._buf.backend.name == "webgpu" for v in kept)  # each moved at its first use: one upload each
    assert pe.stats()["uploads"] - after["uploads"] == len(kept) + 1  # and x
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)
    pe.dispose([x, want, got])
    model.dispose()


def test_folded_plan_follows_weight_changes():
    model = conv_net()
    x = images(3)
    pe.dispose(model.predict(x))
    plan = model.inference_plan()
    assert model.inference_plan() is plan  # built once
    model.set_weights([w * 1.5 for w in model.get_weights()])
    assert plan.stale
    np.testing.assert_allclose(model.predict(x).numpy(), reference(model, x), rtol=1e-4, atol=1e-5)
    model.get_layer("dw_bn").moving_mean.assign(np.full(6, 0.25, np.float32))
    np.testing.assert_allclose(model.predict(x).numpy(), reference(model, x), rtol=1e-4, atol=1e-5)
    count = len(model.weights) + 6  # three folded kernels and biases
    assert model.dispose() == count
    assert pe.memory().num_tensors == 2  # the two predictions above


def test_gradients_flow_through_a_model():
    model = conv_net()
    x = pe.tensor(images(2))
    g = pe.grad(lambda t: model(t).max())(x)  # through FusedConv2D / FusedDepthwiseConv2D gradients
    assert g.shape == x.shape and np.abs(g.numpy()).sum() > 0
    model.dispose()


def test_sequential_model():
    model = pe.Sequential(
        [
            L.Conv2D(4, 3, activation="relu", input_shape=(6, 6, 2), name="c"),
            L.MaxPooling2D(2, name="p"),
            L.Flatten(name="f"),
            L.Dense(3, name="d"),
        ]
    )
    assert [layer.name for layer in model.layers] == ["c", "p", "f", "d"]
    assert model.inputs[0].shape == (None, 6, 6, 2) and model.outputs[0].shape == (None, 3)
    x = np.random.default_rng(0).normal(size=(5, 6, 6, 2)).astype(np.float32)
    k, b, dk, db = model.get_weights()
    h = np.maximum(ref_conv(x, k) + b, 0)
    want = h.reshape(5, 2, 2, 2, 2, 4).max((2, 4)).reshape(5, 16) @ dk + db
    np.testing.assert_allclose(model.predict(x, batch_size=2).numpy(), want, rtol=1e-4, atol=1e-5)
    text = model.summary(print_fn=None)
    for piece in (
        "c (Conv2D)",
        "(None, 4, 4, 4)",
        "d (Dense)",
        "(None, 3)",
        "Total params: 127",
        "Trainable params: 127",
    ):
        assert piece in text
    assert "Connected to" not in text
    model.add(L.Activation("softmax", name="s"))
    assert model.predict(x).shape == (5, 3) and model.layers[-1].name == "s"
    model.dispose()


def test_sequential_builds_when_it_first_sees_data():
    model = pe.Sequential(name="lazy")
    model.add(L.Dense(3))
    model.add(L.ReLU())
    with pytest.raises(ValueError, match="lazy has no input shape yet"):
        model.summary(print_fn=None)
    out = model.predict(np.ones((2, 5)))
    assert out.shape == (2, 3) and model.inputs[0].shape == (None, 5)
    assert model.get_config()["layers"][0]["config"]["batch_input_shape"] == [None, 5]
    with pytest.raises(TypeError, match="takes several inputs; use a functional Model"):
        model.add(L.Add())
    with pytest.raises(TypeError, match="nesting models is not supported"):
        model.add(pe.Sequential())
    model.dispose()


def test_multiple_inputs_and_outputs():
    a, b = L.Input(shape=(3,), name="a"), L.Input(shape=(2,), name="b")
    joined = L.Concatenate(name="join")([a, b])
    first = L.Dense(2, name="first")(joined)
    second = L.Activation("sigmoid", name="second")(joined)
    model = pe.Model([a, b], [first, second])
    xa, xb = np.ones((4, 3), np.float32), np.full((4, 2), 2, np.float32)
    out1, out2 = model.predict([xa, xb], batch_size=3)
    k, bias = model.get_weights()
    cat = np.concatenate([xa, xb], 1)
    np.testing.assert_allclose(out1.numpy(), cat @ k + bias, rtol=1e-5, atol=1e-6)  # float32 sums: near 0 too
    np.testing.assert_allclose(out2.numpy(), 1 / (1 + np.exp(-cat)), rtol=1e-5)
    with pytest.raises(ValueError, match="the model has 2 inputs, got 1"):
        model.predict(xa)
    with pytest.raises(ShapeError, match=r"input 'b' expects shape \(None, 2\) \(None: any size\), got \(4, 3\)"):
        model.predict([xa, xa])
    with pytest.raises(ShapeError, match="different numbers of examples"):
        model.predict([xa, xb[:2]])
    assert "Connected to" in model.summary(print_fn=None) and "a, b" in model.summary(print_fn=None)
    model.dispose()


def test_identity_model_returns_new_tensors():
    x = L.Input(shape=(2,))
    model = pe.Model(x, [L.Dropout(0.5)(x), L.Activation("linear")(x)])
    xt = pe.tensor([[1.0, 2.0]])
    outs = model.predict(xt)
    pe.dispose(outs)
    assert not xt.is_disposed and xt.numpy().tolist() == [[1.0, 2.0]]


def test_shared_layer_and_config_round_trip():
    x = L.Input(shape=(4,), name="x")
    shared = L.Dense(4, activation="tanh", name="shared")
    y = shared(shared(x))
    model = pe.Model(x, L.Add(name="sum")([y, x]))
    config = json.loads(json.dumps(model.get_config()))
    assert [entry["inbound_nodes"] for entry in config["layers"] if entry["name"] == "shared"] == [
        [[["x", 0, 0, {}]], [["shared", 0, 0, {}]]]
    ]
    again = pe.Model.from_config(config)
    assert again.get_config() == config
    again.set_weights(model.get_weights())
    data = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    np.testing.assert_allclose(again.predict(data).numpy(), model.predict(data).numpy(), rtol=1e-6)
    assert len(again.weights) == 2  # one layer, called twice
    pe.dispose_variables()


def test_config_round_trip_of_conv_net_and_sequential():
    model = conv_net()
    topology = json.loads(model.to_json())
    assert topology["class_name"] == "Model" and topology["backend"] == "tensor_flow.js"
    again = pe.model_from_config(topology)
    assert again.get_config() == topology["config"]
    assert again.weight_names == model.weight_names
    seq = pe.Sequential([L.Dense(2, input_shape=(3,), name="d0"), L.Softmax(name="s0")], name="seq")
    seq_again = pe.model_from_config(json.loads(seq.to_json()))
    assert isinstance(seq_again, pe.Sequential) and seq_again.get_config() == seq.get_config()
    pe.dispose_variables()


def test_keras_configs_load():
    """Keras 2 writes "Functional", wraps configs in model_config, and starts a Sequential with an InputLayer."""
    functional = {
        "model_config": {
            "class_name": "Functional",
            "config": {
                "name": "k",
                "layers": [
                    {
                        "class_name": "InputLayer",
                        "name": "in",
                        "inbound_nodes": [],
                        "config": {
                            "batch_input_shape": [None, 2],
                            "dtype": "float32",
                            "sparse": False,
                            "ragged": False,
                            "name": "in",
                        },
                    },
                    {
                        "class_name": "Dense",
                        "name": "out",
                        "inbound_nodes": [[["in", 0, 0, {}]]],
                        "config": {"name": "out", "units": 1, "activation": "linear", "kernel_regularizer": None},
                    },
                ],
                "input_layers": [["in", 0, 0]],
                "output_layers": [["out", 0, 0]],
            },
        }
    }
    model = pe.model_from_config(functional)
    assert model.outputs[0].shape == (None, 1) and model.weight_names == ["out/kernel", "out/bias"]
    sequential = {
        "class_name": "Sequential",
        "config": {
            "name": "s",
            "layers": [
                {
                    "class_name": "InputLayer",
                    "config": {"batch_input_shape": [None, 3], "dtype": "float32", "name": "i"},
                },
                {"class_name": "Dense", "config": {"name": "h", "units": 2}},
            ],
        },
    }
    seq = pe.model_from_config(sequential)
    assert seq.outputs[0].shape == (None, 2) and [layer.name for layer in seq.layers] == ["h"]
    with pytest.raises(ValueError, match="unknown model class 'Graph'"):
        pe.model_from_config({"class_name": "Graph", "config": {}})
    pe.dispose_variables()


def test_graph_errors():
    a, b = L.Input(shape=(2,), name="ga"), L.Input(shape=(2,), name="gb")
    total = L.Add()([a, b])
    with pytest.raises(ValueError, match="graph disconnected: the outputs need input 'gb'"):
        pe.Model(a, total)
    with pytest.raises(ValueError, match="layer names must be unique in a model; repeated: dup"):
        pe.Model(a, L.Dense(1, name="dup")(L.Dense(2, name="dup")(a)))
    with pytest.raises(TypeError, match="inputs must be symbolic tensors"):
        pe.Model(pe.ones((1, 2)), total)
    model = pe.Model([a, b], total)
    with pytest.raises(TypeError, match="using a model as a layer of another model is not supported"):
        model([a, b])
    with pytest.raises(ValueError, match="no layer named 'nope'"):
        model.get_layer("nope")
    pe.dispose_variables()


def test_weights_and_dispose():
    model = conv_net()
    names = model.weight_names
    trainable = [n for n in names if not n.endswith(("moving_mean", "moving_variance"))]
    assert names[: len(trainable)] == trainable  # trainable weights first, as Keras and TF.js order them
    assert names[0] == "stem/kernel" and model.weights[0].shape == (3, 3, 3, 6)
    assert model.get_layer("dw").weights[0].shape == (3, 3, 6, 1)
    assert model.count_params() == sum(w.size for w in model.get_weights())
    assert len(model.trainable_weights) == len(trainable)
    with pytest.raises(ValueError, match=f"set_weights got 2 arrays; it has {len(names)} weights"):
        model.set_weights([1, 2])
    x = images(2)
    pe.dispose(model.predict(x))
    assert model.dispose() == len(names) + 6
    assert pe.memory().num_tensors == 0
    with pytest.raises(DisposedTensorError):
        model.predict(x)


def test_dropout_and_batch_norm_follow_training_flag():
    x = L.Input(shape=(100,))
    model = pe.Model(x, L.Dropout(0.5, seed=1)(x))
    data = pe.ones((4, 100))
    assert (model(data).numpy() == 1).all()
    assert (model(data, training=True).numpy() == 0).mean() > 0.3


@pytest.mark.usefixtures("each_backend")
def test_zero_padding_before_a_valid_convolution_is_folded_into_it():
    """Keras MobileNets pad with ZeroPadding2D, then convolve with padding "valid": predict runs one kernel."""
    x = L.Input(shape=(9, 9, 4))
    y = L.ZeroPadding2D(((0, 1), (2, 1)))(x)
    y = L.DepthwiseConv2D(3, strides=2, use_bias=False)(y)
    y = L.BatchNormalization()(y)
    y = L.ReLU(6.0)(y)
    kept = L.ZeroPadding2D(1)(y)  # followed by a "same" convolution: stays a Pad
    model = pe.Model(x, L.Conv2D(2, 3, padding="same", activation="relu")(kept))
    model.set_weights([np.random.default_rng(k).uniform(0.5, 1.5, w.shape) for k, w in enumerate(model.get_weights())])
    data = pe.tensor(np.random.default_rng(3).normal(size=(2, 9, 9, 4)).astype(np.float32))
    unfolded = model(data)
    assert model.fold_batch_norms() == 1
    folded = pe.profile(lambda: model.predict(data))
    assert [k.name for k in folded.kernels] == ["FusedDepthwiseConv2D", "Pad", "FusedConv2D"]
    np.testing.assert_allclose(folded.result.numpy(), unfolded.numpy(), rtol=1e-4, atol=1e-4)
    pe.dispose([data, unfolded, folded.result])
    model.dispose()


@pytest.mark.parametrize("center, scale", [(False, False), (True, False), (False, True)])
def test_folding_depthwise_multiplier_with_bias_and_partial_batch_norms(center, scale):
    x = L.Input(shape=(6, 6, 3))
    y = L.DepthwiseConv2D(3, depth_multiplier=2, padding="same")(x)  # with a bias
    y = L.BatchNormalization(center=center, scale=scale, epsilon=0.01)(y)
    model = pe.Model(x, L.Activation("elu")(y))
    rng = np.random.default_rng(7)
    model.set_weights([rng.uniform(0.5, 1.5, w.shape) for w in model.get_weights()])
    data = pe.tensor(rng.normal(size=(3, 6, 6, 3)).astype(np.float32))
    unfolded = model(data)
    folded = pe.profile(lambda: model.predict(data))
    assert model.fold_batch_norms() == 1 and [k.name for k in folded.kernels][-1] == "FusedDepthwiseConv2D"
    np.testing.assert_allclose(folded.result.numpy(), unfolded.numpy(), rtol=1e-4, atol=1e-5)
    model.dispose()


@pytest.mark.usefixtures("each_backend")
def test_warmup_then_predict():
    """pe.warmup runs predict in a dry mode (nothing computed): the batch norms folded then are refolded after."""
    model = conv_net()
    x = images(2)
    asyncio.run(pe.warmup(model.predict, x))
    np.testing.assert_allclose(model.predict(x).numpy(), reference(model, x), rtol=1e-4, atol=1e-5)
    assert not model.inference_plan().dry
    model.dispose()


def test_warmup_leaves_host_tensors_on_the_host():
    """The page warms up on a zero-weight outline of its model while the weights download: the outline stays on
    the host (its zeros are never uploaded), and the model loaded after it compiles nothing when it first runs."""
    ENGINE.forget_backend("webgpu")  # a new device: no pipeline compiled yet
    assert asyncio.run(pe.set_backend("webgpu")), pe.backend_info()["fallback_reason"]
    x = images(2)
    with pe.on_backend("numpy"):
        outline, model = conv_net(), conv_net(seed=1)
        for w in outline.weights:
            w.assign(np.zeros(w.shape, np.float32))
        outline.fold_batch_norms(release_unfolded=True)  # on the host too, as the page does
        model.fold_batch_norms()
    before = pe.stats()
    assert asyncio.run(pe.warmup(outline.predict, x)) > 0
    after = pe.stats()
    assert after["uploads"] - before["uploads"] == 1  # x; no weight
    kept = [w for w in outline.weights if not w.is_disposed] + outline.inference_plan().variables
    assert all(w._buf.backend.name == "numpy" for w in kept)
    outline.dispose()
    np.testing.assert_allclose(model.predict(x).numpy(), reference(model, x), rtol=1e-4, atol=1e-5)
    assert pe.stats()["pipeline_compiles"] == after["pipeline_compiles"]
    model.dispose()


@pytest.mark.usefixtures("each_backend")
def test_predict_returns_named_layers_outputs_running_only_the_steps_they_need():
    inputs = pe.layers.Input(shape=(6, 6, 2))
    x = pe.layers.Conv2D(4, 3, name="conv")(inputs)
    x = pe.layers.BatchNormalization(name="bn")(x)
    features = pe.layers.GlobalAveragePooling2D(name="gap")(pe.layers.ReLU(name="relu")(x))
    model = pe.Model(inputs, pe.layers.Dense(3, activation="softmax", name="head")(features))
    data = np.random.default_rng(0).normal(size=(5, 6, 6, 2)).astype(np.float32)
    try:
        want = pe.Model(inputs, features)(pe.tensor(data))
        got = model.predict(data, batch_size=2, outputs="gap")
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
        profiled = pe.profile(lambda: model.predict(data, outputs="gap"))
        assert "BatchMatMul" not in {k.name for k in profiled.kernels}  # the head never runs
        both = model.predict(data, outputs=["gap", "head"])
        assert [t.shape for t in both] == [(5, 4), (5, 3)]
        with pytest.raises(ValueError, match="folded"):
            model.predict(data, outputs="conv")  # its batch norm is folded into it
        pe.dispose([want, got, profiled.result, both])
    finally:
        model.dispose()
