"""The training vocabulary through the TF.js layers format, both ways, with the real TensorFlow.js (npm @tensorflow/tfjs
4.22.0, test-only, pure JS in Node): tests/tfjs/vocabulary_roundtrip.mjs.

- A model TF.js builds with every activation, initializer, regularizer and constraint, compiled with Adamax, a loss and
  metrics of the vocabulary, loads here compiled as TF.js compiles it and predicts what TF.js predicts when it loads
  the same files (both loaders project constrained weights once, as TF.js's LayerVariable.write does).
- A model built here with all of them (and Adadelta) loads in TF.js, which serializes every activation, initializer,
  regularizer and constraint back to configs equal to ours, compiles the trainingConfig, holds the same weights and
  predicts the same.
- gelu_new: TF.js writes it but cannot load it back (it camel-cases the name to "geluNew", which it does not know); a
  TF.js model using it loads here.
"""

import asyncio
import json

import numpy as np
import pytest

import py_engine as pe
from py_engine.layers import initializers
from py_engine.train import constraints, losses, regularizers
from tests.tfjs_node import run_tfjs

TOLERANCE = 1e-5
L = pe.layers


def array(entry):
    return np.array(entry["data"], np.float32).reshape(entry["shape"])


@pytest.fixture(scope="module")
def saved_by_tfjs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("vocabulary_saved_by_tfjs")
    run_tfjs("vocabulary_roundtrip.mjs", "save", folder)
    return folder, json.loads((folder / "io.json").read_text())


def dense_configs(topology):
    layers = topology["config"]["layers"]
    return {layer["config"]["name"]: layer["config"] for layer in layers if layer["class_name"] == "Dense"}


@pytest.mark.usefixtures("each_backend")
def test_a_tfjs_model_with_the_whole_vocabulary_loads_compiled_and_predicts_as_tfjs(saved_by_tfjs):
    folder, io = saved_by_tfjs
    saved = json.loads((folder / "main" / "model.json").read_text())
    model = asyncio.run(pe.load_layers_model(folder / "main"))
    try:
        predicted = model.predict(array(io["input"]))
        diff = float(np.abs(predicted.numpy() - array(io["reloaded"])).max())
        assert diff <= TOLERANCE, diff
        pe.dispose(predicted)

        optimizer = model.optimizer
        assert isinstance(optimizer, pe.optimizers.Adamax)
        assert optimizer.get_config() == pytest.approx(
            {"learningRate": 0.01, "beta1": 0.8, "beta2": 0.95, "epsilon": 1e-6, "decay": 0.01}
        )
        config = model.training_config
        assert isinstance(config.losses[0], losses.MeanSquaredLogarithmicError)
        assert config.log_names == ["loss", "mape", "precision", "cosine", "mse"]

        # every layer keeps TF.js's configs as TF.js wrote them, and knows what they mean
        ours = dense_configs(
            {"config": {"layers": [{"class_name": "Dense", "config": c.get_config()} for c in model.layers[1:]]}}
        )
        for name, theirs in dense_configs(saved["modelTopology"]).items():
            mine = ours[name]
            for key in ("activation", "kernel_regularizer", "bias_regularizer", "kernel_constraint", "bias_constraint"):
                assert _same(mine[key], theirs[key]), f"{name} {key}: {mine[key]} vs TF.js's {theirs[key]}"
            for key in ("kernel_initializer", "bias_initializer"):
                assert _initializer(mine[key]) == _initializer(theirs[key]), f"{name} {key}"
        summary = model.summary()
        assert "Regularizers and constraints:" in summary and "MinMaxNorm(" in summary and "L1L2(" in summary

        # it trains: penalties, constraints and Adamax from the file
        x = array(io["input"])
        y = np.abs(np.random.default_rng(0).normal(size=(5, 6))).astype(np.float32)
        before = model.evaluate(x, y)[0]
        for _ in range(3):
            model.train_on_batch(x, y)
        after = model.evaluate(x, y)[0]
        assert np.isfinite(after) and after != before
    finally:
        if model.optimizer is not None:
            model.optimizer.dispose()
        model.dispose()


def test_gelu_new_loads_here_though_tfjs_cannot_load_it_back(saved_by_tfjs):
    folder, io = saved_by_tfjs
    assert "geluNew" in io["gelu_new"]["reload_error"]
    model = asyncio.run(pe.load_layers_model(folder / "gelu_new"))
    try:
        assert model.layers[-1].activation == "gelu_new"
        predicted = model.predict(array(io["input"]))
        assert float(np.abs(predicted.numpy() - array(io["gelu_new"]["output"])).max()) <= TOLERANCE
        pe.dispose(predicted)
    finally:
        model.dispose()


ACTIVATIONS = [
    "elu",
    "hard_sigmoid",
    "linear",
    "relu",
    "relu6",
    "selu",
    "sigmoid",
    "softmax",
    "softplus",
    "softsign",
    "tanh",
    "swish",
    "mish",
    "gelu",
    "log_softmax",
    "silu",  # Keras's name: written as swish
]


def _vocabulary_model():
    I = initializers  # noqa: E741
    kernel_initializers = [
        "zeros",
        "ones",
        I.Constant(0.3),
        I.Identity(gain=0.5),
        I.RandomUniform(-0.2, 0.4, seed=1),
        I.RandomNormal(0.1, 0.2, seed=2),
        I.TruncatedNormal(0.0, 0.3, seed=3),
        "glorot_uniform",
        "glorotNormal",
        "he_uniform",
        "he_normal",
        "lecun_uniform",
        "leCunNormal",
        I.Orthogonal(gain=1.5, seed=10),
        I.VarianceScaling(2.0, "fan_out", "truncated_normal", seed=11),
        I.VarianceScaling(0.5, "fanAvg", "normal", seed=12),
    ]
    bias_initializers = ["zeros", "ones", I.Constant(-0.2), I.RandomUniform(seed=4), I.RandomNormal(seed=5)]
    kernel_regularizers = [
        "l1",
        regularizers.l2(0.02),
        {"class_name": "L1L2", "config": {"l1": 0.003, "l2": 0.004}},
        None,
    ]
    kernel_constraints = [
        "max_norm",
        constraints.MinMaxNorm(0.5, 1.0, 0.8),
        "nonNeg",
        constraints.UnitNorm(axis=1),
        {"class_name": "MaxNorm", "config": {"max_value": 1.5, "axis": [0]}},
        None,
    ]
    x = inputs = L.Input(shape=(6,), name="x")
    for k, activation in enumerate(ACTIVATIONS):
        x = L.Dense(
            6,
            activation=activation,
            name=f"dense_{k}",
            kernel_initializer=kernel_initializers[k],
            bias_initializer=bias_initializers[k % len(bias_initializers)],
            kernel_regularizer=kernel_regularizers[k % 4],
            bias_regularizer=regularizers.l1l2(0.001, 0.002) if k % 2 else None,
            kernel_constraint=kernel_constraints[k % len(kernel_constraints)],
            bias_constraint="non_neg" if k % 3 == 0 else None,
        )(x)
    return pe.Model(inputs, x, name="vocabulary_here")


def test_a_model_with_the_whole_vocabulary_built_here_loads_in_tfjs(tmp_path):
    model = _vocabulary_model()
    rng = np.random.default_rng(3)
    model.set_weights([rng.normal(0, 0.6, w.shape).astype(np.float32) for w in model.weights])
    model.compile(
        optimizer=pe.optimizers.Adadelta(learning_rate=0.5, rho=0.9, epsilon=1e-6),
        loss="mean_squared_logarithmic_error",
        metrics=["mape", "precision", "cosine_proximity", "recall"],
    )
    x = rng.normal(size=(5, 6)).astype(np.float32)
    try:
        model.save(tmp_path / "model")
    finally:
        model.optimizer.dispose()
        model.dispose()
    saved = json.loads((tmp_path / "model" / "model.json").read_text())
    assert saved["trainingConfig"]["metrics"] == ["mape", "precision", "cosine"]  # TF.js's names; recall it lacks
    (tmp_path / "input.json").write_text(json.dumps({"shape": list(x.shape), "data": x.ravel().tolist()}))
    run_tfjs("vocabulary_roundtrip.mjs", "load", tmp_path / "model", tmp_path / "input.json", tmp_path / "out.json")
    tfjs = json.loads((tmp_path / "out.json").read_text())

    # TF.js understood every config: serialized again, each means what ours does
    theirs = dense_configs(tfjs["topology"])
    for name, mine in dense_configs(saved["modelTopology"]).items():
        assert mine["activation"] == theirs[name]["activation"], name
        for key in ("kernel_initializer", "bias_initializer"):
            assert _initializer(mine[key]) == _initializer(theirs[name][key]), f"{name} {key}"
        for key in ("kernel_regularizer", "bias_regularizer", "kernel_constraint", "bias_constraint"):
            assert _same(mine[key], theirs[name][key]), f"{name} {key}: {mine[key]} vs TF.js's {theirs[name][key]}"
    assert [c["activation"] for c in dense_configs(saved["modelTopology"]).values()][-1] == "swish"

    training = tfjs["trainingConfig"]
    assert training["optimizer_config"]["class_name"] == "Adadelta"
    assert training["optimizer_config"]["config"] == pytest.approx({"learningRate": 0.5, "rho": 0.9, "epsilon": 1e-6})
    assert training["loss"] in ("meanSquaredLogarithmicError", "mean_squared_logarithmic_error")

    # the same weights (both loaders project the constrained ones once) and the same predictions
    loaded = asyncio.run(pe.load_layers_model(tmp_path / "model"))
    try:
        weights = dict(zip(loaded.weight_names, loaded.get_weights()))
        for name, entry in tfjs["weights"].items():
            np.testing.assert_allclose(weights[name], array(entry), rtol=1e-6, atol=1e-6, err_msg=name)
        predicted = loaded.predict(x)
        diff = float(np.abs(predicted.numpy() - array(tfjs["outputs"][0])).max())
        assert diff <= TOLERANCE, diff
        pe.dispose(predicted)
    finally:
        loaded.optimizer.dispose()
        loaded.dispose()


def _same(a, b):
    """Two configs (or None) equal, numbers compared as floats, an axis of one int equal to a list of it."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and len(a) == 1 and not isinstance(b, list):
        return _same(a[0], b)
    if isinstance(b, list) and len(b) == 1 and not isinstance(a, list):
        return _same(a, b[0])
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return float(a) == pytest.approx(float(b))
    return a == b


def _initializer(config):
    """What an initializer config means: a VarianceScaling (and its presets) by its arguments, others by config."""
    initializer = initializers.get(config)
    if isinstance(initializer, initializers.VarianceScaling):
        args = initializers.VarianceScaling.get_config(initializer)
        return ("VarianceScaling", args["scale"], args["mode"], args["distribution"], args["seed"])
    return (initializer.class_name, tuple(sorted(initializer.get_config().items())))
