"""Issue 39's convolution and recurrent layers and the real TensorFlow.js 4.22 (npm, test-only, pure JS in Node).

Both ways, for each layer: tests/tfjs/save_layer_models.mjs builds a model using it in TF.js (seeded weights),
saves it and records TF.js's predictions on inputs of several shapes; here the engine loads it and must predict
the same within 1e-5 (relative to the outputs' scale), on numpy and on webgpu. The other way, a model built here
is saved, loaded by TF.js (tests/tfjs/predict_saved_model.mjs), and must predict there what it predicts here.
Gradients are checked against finite differences.
"""

import asyncio
import json

import numpy as np
import pytest

import py_engine as pe
from py_engine.layers.convolutional_variants import conv2d_transpose
from tests.gradcheck import check_gradients
from tests.tfjs_node import run_tfjs

TOLERANCE = 1e-5
L = pe.layers
MODELS = ["conv1d", "conv2d_transpose", "separable_conv2d"]


def array(entry):
    return np.array(entry["data"], np.float32).reshape(entry["shape"])


def assert_close(got, want, what):
    """Equal within TOLERANCE, scaled by the output's magnitude where that exceeds 1 (float32 sums of many terms)."""
    got = got.numpy() if isinstance(got, pe.Tensor) else got
    assert got.shape == want.shape, (what, got.shape, want.shape)
    scale = max(1.0, float(np.abs(want).max()))
    diff = float(np.abs(got - want).max())
    assert diff <= TOLERANCE * scale, f"{what}: differs by {diff} (outputs up to {scale})"


@pytest.fixture(scope="module")
def saved_by_tfjs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("layer_models_by_tfjs")
    run_tfjs("save_layer_models.mjs", folder, *MODELS)
    return folder


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("name", MODELS)
def test_a_model_saved_by_tfjs_predicts_here_what_it_predicts_in_tfjs(saved_by_tfjs, name):
    cases = json.loads((saved_by_tfjs / name / "io.json").read_text())["cases"]
    model = asyncio.run(pe.load_layers_model(saved_by_tfjs / name))
    try:
        for k, case in enumerate(cases):
            outputs = model(pe.tensor(array(case["input"])))
            outputs = outputs if isinstance(outputs, list) else [outputs]
            assert len(outputs) == len(case["outputs"])
            for j, (got, want) in enumerate(zip(outputs, case["outputs"])):
                assert_close(got, array(want), f"{name} input {k} output {j}")
            pe.dispose(outputs)
    finally:
        model.dispose()


def predicted_by_tfjs(model_dir, x, folder):
    (folder / "input.json").write_text(json.dumps({"shape": list(x.shape), "data": x.ravel().tolist()}))
    run_tfjs("predict_saved_model.mjs", model_dir, folder / "input.json", folder / "output.json")
    return [array(entry) for entry in json.loads((folder / "output.json").read_text())]


def randomize(model):
    """Weights larger than the initializers' and biases that are not zero, so every term matters."""
    for k, w in enumerate(model.weights):
        w.assign(np.random.default_rng(k).uniform(-0.7, 0.7, w.shape).astype(np.float32))


def conv1d_here():
    x = L.Input(shape=(10, 3), name="x")
    a = L.Conv1D(4, 3, padding="same", activation="softplus", name="same")(x)
    b = L.Conv1D(3, 2, strides=2, dilation_rate=1, activation="tanh", name="strided")(a)
    c = L.Conv1D(2, 2, dilation_rate=3, use_bias=False, name="dilated")(a)
    return pe.Model(x, [b, c], name="conv1d_here"), np.random.default_rng(1).normal(size=(3, 10, 3))


def conv2d_transpose_here():
    x = L.Input(shape=(4, 3, 2), name="x")
    a = L.Conv2DTranspose(3, (3, 2), strides=(2, 3), padding="same", activation="relu", name="same")(x)
    b = L.Conv2DTranspose(2, 2, strides=3, name="sparse")(a)
    c = L.Conv2DTranspose(2, 4, padding="valid", activation="sigmoid", use_bias=False, name="wide")(a)
    return pe.Model(x, [b, c], name="conv2d_transpose_here"), np.random.default_rng(2).normal(size=(2, 4, 3, 2))


def separable_conv2d_here():
    x = L.Input(shape=(8, 7, 3), name="x")
    a = L.SeparableConv2D(4, 3, padding="same", depth_multiplier=3, activation="elu", name="same")(x)
    b = L.SeparableConv2D(2, (2, 3), strides=2, use_bias=False, name="strided")(a)
    c = L.SeparableConv2D(3, 2, dilation_rate=2, activation="relu6", name="dilated")(a)
    return pe.Model(x, [b, c], name="separable_conv2d_here"), np.random.default_rng(3).normal(size=(2, 8, 7, 3))


@pytest.mark.parametrize("build", [conv1d_here, conv2d_transpose_here, separable_conv2d_here])
def test_a_model_saved_here_predicts_in_tfjs_what_it_predicts_here(tmp_path, build):
    model, x = build()
    x = x.astype(np.float32)
    try:
        randomize(model)
        model.save(tmp_path / model.name)
        ours = model.predict(x)
        theirs = predicted_by_tfjs(tmp_path / model.name, x, tmp_path)
        assert len(ours) == len(theirs)
        for k, (got, want) in enumerate(zip(ours, theirs)):
            assert_close(got, want, f"{model.name} output {k}")
        pe.dispose(ours)
    finally:
        model.dispose()


def test_conv1d_causal_padding_sees_only_the_past():
    """Keras's "causal" (TF.js 4.22 refuses it when it runs): output t depends on inputs <= t only."""
    layer = L.Conv1D(2, 3, padding="causal", dilation_rate=2)
    x = np.random.default_rng(0).normal(size=(1, 9, 2)).astype(np.float32)
    later = x.copy()
    later[:, 5:] += 1.0
    a, b = layer(pe.tensor(x)).numpy(), layer(pe.tensor(later)).numpy()
    assert a.shape == (1, 9, 2)
    np.testing.assert_array_equal(a[:, :5], b[:, :5])
    assert np.abs(a[:, 5:] - b[:, 5:]).min() > 0
    layer.dispose()


def test_conv2d_transpose_is_the_adjoint_of_conv2d():
    """<conv2d(y, k), x> == <conv2d_transpose(x, k), y>, the definition TF.js's conv2dTranspose follows."""
    rng = np.random.default_rng(0)
    for strides, padding, out_hw in [(2, "same", (8, 6)), ((2, 3), "valid", (9, 11)), (1, "valid", (6, 5))]:
        k = rng.normal(size=(3, 3, 4, 2)).astype(np.float32)
        y = rng.normal(size=(2, *out_hw, 4)).astype(np.float32)
        forward = pe.conv2d(pe.tensor(y), pe.tensor(k), strides, padding).numpy()
        x = rng.normal(size=forward.shape[:3] + (2,)).astype(np.float32)
        back = conv2d_transpose(pe.tensor(x), pe.tensor(k), out_hw, strides, padding).numpy()
        np.testing.assert_allclose((forward * x).sum(), (back * y).sum(), rtol=1e-4)


def test_conv2d_transpose_refuses_an_output_that_does_not_convolve_back_to_its_input():
    with pytest.raises(pe.ShapeError, match="convolves back"):
        conv2d_transpose(np.zeros((1, 3, 3, 2)), np.zeros((3, 3, 4, 2)), (9, 9), 2, "same")


def with_weights(layer, names):
    """f(x, *weights) calling layer with the given tensors as its weights (for finite differences)."""

    def f(x, *weights):
        originals = [getattr(layer, n) for n in names]
        for n, w in zip(names, weights):
            setattr(layer, n, w)
        try:
            return layer.call(x)
        finally:
            for n, w in zip(names, originals):
                setattr(layer, n, w)

    return f


@pytest.mark.parametrize(
    ("make", "x_shape", "names"),
    [
        (lambda: L.Conv1D(2, 3, padding="causal", dilation_rate=2, activation="tanh"), (2, 6, 3), ["kernel", "bias"]),
        (lambda: L.Conv1D(2, 2, strides=2, padding="same"), (1, 5, 2), ["kernel", "bias"]),
        (
            lambda: L.Conv2DTranspose(2, 3, strides=2, padding="same", activation="tanh"),
            (1, 3, 2, 2),
            ["kernel", "bias"],
        ),
        (lambda: L.Conv2DTranspose(3, (2, 3), strides=(1, 2)), (2, 2, 3, 2), ["kernel", "bias"]),
        (
            lambda: L.SeparableConv2D(2, 2, depth_multiplier=2, activation="sigmoid"),
            (1, 4, 3, 2),
            ["depthwise_kernel", "pointwise_kernel", "bias"],
        ),
    ],
)
def test_gradients_match_finite_differences(make, x_shape, names):
    layer = make()
    rng = np.random.default_rng(0)
    x = rng.normal(size=x_shape).astype(np.float32)
    layer(pe.tensor(x)).dispose()  # builds it
    weights = [rng.uniform(-1, 1, getattr(layer, n).shape).astype(np.float32) for n in names]
    check_gradients(with_weights(layer, names), x, *weights)
    layer.dispose()


@pytest.mark.usefixtures("each_backend")
def test_layers_on_each_backend_match_numpy_gradients_included():
    """Each layer's output and input/weight gradients on this backend equal numpy's."""
    rng = np.random.default_rng(5)
    layers = [
        (L.Conv1D(3, 3, padding="causal", activation="relu"), (2, 7, 4)),
        (L.Conv2DTranspose(3, 3, strides=2, padding="valid"), (2, 4, 5, 3)),
        (L.SeparableConv2D(4, 3, strides=2, padding="same", depth_multiplier=2), (2, 9, 8, 3)),
    ]
    for layer, shape in layers:
        x_host = rng.normal(size=shape).astype(np.float32)
        layer(pe.tensor(x_host)).dispose()
        weights_host = [w.numpy() for w in layer.weights]
        results = {}
        for backend in ("numpy", pe.get_backend()):
            asyncio.run(pe.set_backend(backend))
            x = pe.tensor(x_host)
            weights = [pe.tensor(w) for w in weights_host]
            names = [name.rsplit("/", 1)[1] for name in layer.weight_names]
            f = with_weights(layer, names)
            value = f(x, *weights)
            gradients = pe.grads(lambda *ts, f=f: (f(*ts) * f(*ts)).sum())(x, *weights)
            results[backend] = [value.numpy()] + [g.numpy() for g in gradients]
            pe.dispose([x, weights, value, gradients])
        for got, want in zip(results[pe.get_backend()], results["numpy"]):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        layer.dispose()
