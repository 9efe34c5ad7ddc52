"""The training vocabulary (issue 39, part A) against direct numpy formulas: activations and their gradients,
initializers, regularizers (weights and activities, in fit and evaluate), constraints (after each update, on load),
the losses and metrics TF.js has, their names, and what model.summary() and a saved trainingConfig say of them.
tests/test_tfjs_vocabulary*.py check the same against the real TF.js."""

import asyncio
import json
import math

import numpy as np
import pytest

import py_engine as pe
from py_engine.errors import ShapeError
from py_engine.layers import activations, initializers
from py_engine.train import constraints, losses, metrics, regularizers

L = pe.layers
ERF = np.vectorize(math.erf)
SELU_SCALE, SELU_ALPHA = 1.0507009873554805, 1.6732632423543772


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def softplus(x):
    return np.logaddexp(0, x)


# name: (f(x), f'(x)) in float64
ACTIVATIONS = {
    "softsign": (lambda x: x / (1 + np.abs(x)), lambda x: 1 / (1 + np.abs(x)) ** 2),
    "selu": (
        lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(np.minimum(x, 0))),
        lambda x: SELU_SCALE * np.where(x > 0, 1, SELU_ALPHA * np.exp(np.minimum(x, 0))),
    ),
    "hard_sigmoid": (
        lambda x: np.clip(0.2 * x + 0.5, 0, 1),
        lambda x: np.where(np.abs(x) <= 2.5, 0.2, 0.0),  # clip's gradient passes at the bounds, as TF.js's
    ),
    "swish": (lambda x: x * sigmoid(x), lambda x: sigmoid(x) * (1 + x * (1 - sigmoid(x)))),
    "mish": (
        lambda x: x * np.tanh(softplus(x)),
        lambda x: np.tanh(softplus(x)) + x * (1 - np.tanh(softplus(x)) ** 2) * sigmoid(x),
    ),
    "gelu": (
        lambda x: 0.5 * x * (1 + ERF(x / np.sqrt(2))),
        lambda x: 0.5 * (1 + ERF(x / np.sqrt(2))) + x * np.exp(-x * x / 2) / np.sqrt(2 * np.pi),
    ),
    "gelu_new": (
        lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))),
        None,  # checked by finite differences
    ),
    "elu": (lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))), lambda x: np.where(x > 0, 1, np.exp(x))),
    "softplus": (softplus, sigmoid),
}
X = np.concatenate([[-7, -2.5, -1, -0.3, 0.2, 1, 2.5, 7, 40, -40], np.linspace(-4, 4, 14)]).astype(np.float32)


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activations_and_their_gradients_follow_their_formulas(name):
    f, df = ACTIVATIONS[name]
    x = X.reshape(4, 6)
    x64 = x.astype(np.float64)
    fn = activations.get(name)
    np.testing.assert_allclose(fn(pe.tensor(x)).numpy(), f(x64), rtol=2e-6, atol=2e-6, err_msg=name)
    grad = pe.grad(lambda t: fn(t).sum())(pe.tensor(x)).numpy()
    if df is None:
        h = 1e-4
        df_values = (f(x64 + h) - f(x64 - h)) / (2 * h)
    else:
        df_values = df(x64)
    assert np.isfinite(grad).all(), f"{name}: gradient not finite at {x[~np.isfinite(grad)]}"
    np.testing.assert_allclose(grad, df_values, rtol=1e-4, atol=1e-5, err_msg=f"{name} gradient")


def test_softmax_and_log_softmax_activations_work_over_the_last_axis():
    x = np.random.default_rng(1).normal(size=(3, 5)).astype(np.float32)
    shifted = x - x.max(-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    np.testing.assert_allclose(activations.get("log_softmax")(pe.tensor(x)).numpy(), log_p, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(activations.get("logSoftmax")(pe.tensor(x)).numpy(), log_p, rtol=1e-5, atol=1e-6)
    w = np.random.default_rng(2).normal(size=(3, 5))
    grad = pe.grad(lambda t: (activations.get("log_softmax")(t) * pe.tensor(w.astype(np.float32))).sum())(pe.tensor(x))
    want = w - np.exp(log_p) * w.sum(-1, keepdims=True)
    np.testing.assert_allclose(grad.numpy(), want, rtol=1e-4, atol=1e-5)


def test_activation_names_tfjs_and_keras_spellings_and_refusals():
    assert activations.normalize("hardSigmoid", "l") == "hard_sigmoid"
    assert activations.normalize("silu", "l") == "swish"
    assert activations.normalize({"class_name": "function", "config": "mish"}, "l") == "mish"
    assert activations.normalize(None, "l") == "linear"
    with pytest.raises(ValueError, match="dense_x: unknown activation 'swishy'; supported: linear, relu"):
        activations.normalize("swishy", "dense_x")
    assert set(activations.TFJS_NAMES.values()) >= {"hardSigmoid", "logSoftmax", "gelu_new", "softsign", "selu"}


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("name", ["softsign", "selu", "hard_sigmoid", "mish", "gelu", "gelu_new", "log_softmax"])
def test_every_layer_that_takes_an_activation_takes_the_new_ones_and_trains(name):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 5, 5, 2)).astype(np.float32)
    inputs = L.Input(shape=(5, 5, 2))
    h = L.Conv2D(3, 3, activation=name)(inputs)
    h = L.DepthwiseConv2D(3, activation=name)(h)
    h = L.Flatten()(h)
    h = L.Dense(4, activation=name)(h)
    outputs = L.Activation(name)(h)
    model = pe.Model(inputs, outputs)
    try:
        f = activations.get(name)
        conv, depthwise, dense = model.layers[1], model.layers[2], model.layers[4]
        y = model(pe.tensor(x))
        # the same chain, by hand
        z = f(pe.conv2d(pe.tensor(x), conv.weights[0]) + conv.weights[1])
        z = f(pe.depthwise_conv2d(z, depthwise.weights[0]) + depthwise.weights[1])
        z = f(f(pe.matmul(pe.reshape(z, (4, -1)), dense.weights[0]) + dense.weights[1]))
        np.testing.assert_allclose(y.numpy(), z.numpy(), rtol=1e-5, atol=1e-6)
        model.compile(optimizer="sgd", loss="mse")
        history = model.fit(x, rng.normal(size=(4, 4)).astype(np.float32), epochs=2, verbose=0).history
        assert all(np.isfinite(history["loss"]))
        assert model.layers[4].get_config()["activation"] == name
    finally:
        model.optimizer.dispose()
        model.dispose()


# ---- initializers ------------------------------------------------------------------------------------------------


def test_fans_are_tfjs_compute_fans():
    assert initializers.compute_fans((4, 6)) == (4, 6)
    assert initializers.compute_fans((3, 3, 8, 16)) == (72, 144)
    assert initializers.compute_fans((5, 8, 16)) == (40, 80)
    assert initializers.compute_fans((2, 2, 2, 8, 16)) == (64, 128)
    assert initializers.compute_fans((9,)) == (3, 3)  # sqrt(size), as TF.js (Keras takes 9 and 9)
    assert initializers.compute_fans(()) == (1, 1)


@pytest.mark.parametrize("mode", ["fan_in", "fan_out", "fan_avg"])
@pytest.mark.parametrize("distribution", ["normal", "truncated_normal", "untruncated_normal", "uniform"])
def test_variance_scaling_draws_with_tfjs_variance_in_every_mode_and_distribution(mode, distribution):
    shape = (3, 3, 40, 60)
    fan_in, fan_out = 3 * 3 * 40, 3 * 3 * 60
    n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
    sigma = math.sqrt(2.0 / n)
    config = {"scale": 2.0, "mode": mode, "distribution": distribution, "seed": 7}
    w = initializers.initialize({"class_name": "VarianceScaling", "config": config}, shape)
    assert w.dtype == np.float32 and w.shape == shape
    if distribution == "normal":  # TF.js: truncated at 2 sigma, not rescaled
        assert abs(w.std() - 0.8796 * sigma) < 0.02 * sigma and np.abs(w).max() <= 2 * sigma * (1 + 1e-6)
    elif distribution == "truncated_normal":  # Keras: rescaled to variance scale / n
        assert abs(w.std() - sigma) < 0.02 * sigma and np.abs(w).max() <= 2 * sigma / 0.8796 * (1 + 1e-6)
    elif distribution == "untruncated_normal":
        assert abs(w.std() - sigma) < 0.02 * sigma and np.abs(w).max() > 2.5 * sigma
    else:
        limit = math.sqrt(3) * sigma
        assert abs(w.std() - sigma) < 0.02 * sigma and limit * 0.99 < np.abs(w).max() <= limit
    # the camelCase spelling of TF.js's code means the same
    camel = {**config, "mode": {"fan_in": "fanIn", "fan_out": "fanOut", "fan_avg": "fanAvg"}[mode]}
    again = initializers.initialize({"class_name": "VarianceScaling", "config": camel}, shape)
    np.testing.assert_array_equal(w, again)


@pytest.mark.parametrize(
    ("name", "scale", "mode", "distribution"),
    [
        ("glorot_uniform", 1, "fan_avg", "uniform"),
        ("glorot_normal", 1, "fan_avg", "normal"),
        ("he_uniform", 2, "fan_in", "uniform"),
        ("he_normal", 2, "fan_in", "normal"),
        ("lecun_uniform", 1, "fan_in", "uniform"),
        ("lecun_normal", 1, "fan_in", "normal"),
    ],
)
def test_presets_are_their_variance_scaling(name, scale, mode, distribution):
    preset = initializers.get({"class_name": initializers.CLASS_NAMES[name], "config": {"seed": 3}})
    plain = initializers.VarianceScaling(scale, mode, distribution, seed=3)
    np.testing.assert_array_equal(preset((30, 50)), plain((30, 50)))
    assert initializers.serialize(name) == {"class_name": initializers.CLASS_NAMES[name], "config": {"seed": None}}


def test_initializer_names_in_every_spelling():
    tfjs_identifiers = {  # tfjs-layers initializers.ts's INITIALIZER_IDENTIFIER_REGISTRY_SYMBOL_MAP
        "constant": "Constant",
        "glorotNormal": "GlorotNormal",
        "glorotUniform": "GlorotUniform",
        "heNormal": "HeNormal",
        "heUniform": "HeUniform",
        "identity": "Identity",
        "leCunNormal": "LeCunNormal",
        "leCunUniform": "LeCunUniform",
        "ones": "Ones",
        "orthogonal": "Orthogonal",
        "randomNormal": "RandomNormal",
        "randomUniform": "RandomUniform",
        "truncatedNormal": "TruncatedNormal",
        "varianceScaling": "VarianceScaling",
        "zeros": "Zeros",
    }
    for identifier, class_name in tfjs_identifiers.items():
        assert initializers.get(identifier).class_name == class_name
        assert initializers.get(class_name).class_name == class_name
    for spelling in ("lecun_normal", "leCunNormal", "LecunNormal", "LeCunNormal"):
        assert initializers.serialize(spelling)["class_name"] == "LeCunNormal"
    for spelling in ("glorotUniform", "glorot_uniform", "GlorotUniform"):
        assert initializers.serialize(spelling)["class_name"] == "GlorotUniform"
    assert initializers.serialize({"class_name": "LecunUniform", "config": {"seed": 2}}) == {
        "class_name": "LeCunUniform",
        "config": {"seed": 2},
    }
    assert initializers.serialize(initializers.Orthogonal(gain=2.0, seed=1)) == {
        "class_name": "Orthogonal",
        "config": {"gain": 2.0, "seed": 1},
    }
    with pytest.raises(ValueError, match="unknown initializer 'orthogonally'"):
        initializers.serialize("orthogonally")
    # a config of a class we do not know loads; it fails when it has to initialize something
    unknown = {"class_name": "MyInit", "config": {}}
    assert initializers.serialize(unknown) == unknown
    with pytest.raises(ValueError, match="unknown initializer 'MyInit'"):
        initializers.initialize(unknown, (2, 2))


def test_deterministic_initializers_and_their_checks():
    np.testing.assert_array_equal(initializers.initialize("zeros", (2, 3)), np.zeros((2, 3)))
    np.testing.assert_array_equal(initializers.initialize("ones", (2,)), [1, 1])
    np.testing.assert_array_equal(initializers.Constant(2.5)((2,)), [2.5, 2.5])
    np.testing.assert_array_equal(initializers.Identity(gain=3)((3, 3)), 3 * np.eye(3))
    np.testing.assert_array_equal(initializers.initialize("identity", (2, 4)), np.eye(2, 4))
    with pytest.raises(ValueError, match="only a 2-D shape"):
        initializers.initialize("identity", (2, 2, 2))
    # a 0 bound is 0 (TF.js 4.22 reads `minval || -0.05`)
    w = initializers.RandomUniform(minval=0, maxval=1, seed=0)((1000,))
    assert w.min() >= 0 and w.max() <= 1 and w.min() < 0.01
    t = initializers.TruncatedNormal(mean=1.0, stddev=0.5, seed=0)((20000,))
    assert abs(t.mean() - 1.0) < 0.01 and t.min() >= 0.0 and t.max() <= 2.0
    r = initializers.RandomNormal(mean=-1.0, stddev=0.1, seed=0)((20000,))
    assert abs(r.mean() + 1) < 0.005 and abs(r.std() - 0.1) < 0.005
    with pytest.raises(ValueError, match="VarianceScaling: mode must be one of fan_in, fan_out, fan_avg"):
        initializers.VarianceScaling(mode="fan_sum")
    with pytest.raises(ValueError, match="scale must be a positive number"):
        initializers.VarianceScaling(scale=0)


@pytest.mark.parametrize("shape", [(20, 6), (6, 20), (3, 3, 4, 8), (3, 3, 8, 4)])
def test_orthogonal_gives_orthonormal_rows_or_columns_times_gain(shape):
    w = initializers.Orthogonal(gain=1.5, seed=4)(shape)
    flat = w.reshape(-1, shape[-1])
    small = flat.T @ flat if flat.shape[0] >= flat.shape[1] else flat @ flat.T
    np.testing.assert_allclose(small, 2.25 * np.eye(len(small)), atol=1e-5)
    with pytest.raises(ValueError, match="at least 2 axes"):
        initializers.Orthogonal()((5,))


# ---- regularizers ------------------------------------------------------------------------------------------------


def test_l1l2_penalty_and_its_forms():
    w = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    for regularizer, l1, l2 in [
        (regularizers.l1(0.1), 0.1, 0),
        (regularizers.l2(0.2), 0, 0.2),
        (regularizers.l1l2(0.1, 0.3), 0.1, 0.3),
        (regularizers.L1L2(), 0.01, 0.01),  # TF.js's defaults
        (regularizers.get("l1"), 0.01, 0),
        (regularizers.get("L2"), 0, 0.01),
        (regularizers.get("l1_l2"), 0.01, 0.01),
        (regularizers.get({"class_name": "L2", "config": {"l2": 0.5}}), 0, 0.5),  # Keras's class
        (regularizers.get({"class_name": "L1L2", "config": {"l1": 0.2}}), 0.2, 0.01),  # TF.js: a missing factor
    ]:
        assert (regularizer.l1, regularizer.l2) == pytest.approx((l1, l2))
        want = l1 * np.abs(w).sum() + l2 * (w.astype(np.float64) ** 2).sum()
        assert float(regularizer(pe.tensor(w)).numpy()) == pytest.approx(want, rel=1e-5)
    assert regularizers.serialize("l2") == {"class_name": "L1L2", "config": {"l1": 0.0, "l2": 0.01}}
    assert regularizers.serialize(None) is None
    odd = {"class_name": "OrthogonalRegularizer", "config": {"factor": 0.01}}
    assert regularizers.serialize(odd) == odd  # kept: the model loads, compile refuses it
    with pytest.raises(ValueError, match="unknown regularizer 'l3'"):
        regularizers.get("l3")
    with pytest.raises(ValueError, match="l1 must be a finite number >= 0"):
        regularizers.l1(-1)


def _dense_model(**dense_args):
    model = pe.Sequential([L.Dense(3, input_shape=(4,), kernel_initializer="ones", **dense_args)])
    model.compile(optimizer=pe.optimizers.SGD(0.1), loss="mse")
    return model


def test_weight_penalties_add_to_the_loss_in_fit_and_evaluate_and_train():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(8, 4)).astype(np.float32), rng.normal(size=(8, 3)).astype(np.float32)
    plain = _dense_model(bias_initializer="ones")
    regular = _dense_model(
        bias_initializer="ones", kernel_regularizer=regularizers.l1l2(0.1, 0.2), bias_regularizer="l2"
    )
    try:
        extra = 0.1 * 12 + 0.2 * 12 + 0.01 * 3
        assert regular.evaluate(x, y) - plain.evaluate(x, y) == pytest.approx(extra, rel=1e-5)
        # one SGD step: the penalty's gradient l1 * sign(w) + 2 * l2 * w adds to the kernel's
        before = regular.get_weights()[0]
        loss = regular.train_on_batch(x, y)
        plain.train_on_batch(x, y)
        shift = regular.get_weights()[0] - plain.get_weights()[0]
        np.testing.assert_allclose(shift, -0.1 * (0.1 * np.sign(before) + 2 * 0.2 * before), rtol=1e-5)
        assert isinstance(loss, float)
    finally:
        for model in (plain, regular):
            model.optimizer.dispose()
            model.dispose()


@pytest.mark.usefixtures("each_backend")
def test_activity_regularizers_add_their_penalty_per_example_as_tf_keras():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(6, 4)).astype(np.float32), rng.normal(size=(6, 2)).astype(np.float32)
    inputs = L.Input(shape=(4,))
    hidden = L.Dense(3, activation="tanh", activity_regularizer=regularizers.l1l2(0.05, 0.1), name="hidden")(inputs)
    outputs = L.Dense(2, name="out")(hidden)
    model = pe.Model(inputs, outputs)
    model.compile(optimizer=pe.optimizers.SGD(0.5), loss="mse")
    try:
        k1, b1, k2, b2 = (w.astype(np.float64) for w in model.get_weights())

        def total(k1, b1, k2, b2):
            h = np.tanh(x @ k1 + b1)
            penalty = (0.05 * np.abs(h).sum() + 0.1 * (h**2).sum()) / len(x)
            return ((h @ k2 + b2 - y) ** 2).mean() + penalty

        assert model.evaluate(x, y) == pytest.approx(total(k1, b1, k2, b2), rel=1e-5)
        assert model.test_on_batch(x, y) == pytest.approx(total(k1, b1, k2, b2), rel=1e-5)
        # one step follows the gradient of that total (central differences in float64)
        params = [k1, b1, k2, b2]
        grads = []
        for i, p in enumerate(params):
            g = np.zeros_like(p)
            for index in np.ndindex(p.shape):
                up = [q.copy() for q in params]
                down = [q.copy() for q in params]
                up[i][index] += 1e-6
                down[i][index] -= 1e-6
                g[index] = (total(*up) - total(*down)) / 2e-6
            grads.append(g)
        model.train_on_batch(x, y)
        for got, p, g in zip(model.get_weights(), params, grads):
            np.testing.assert_allclose(got, p - 0.5 * g, rtol=1e-4, atol=1e-6)
        assert "hidden (Dense): activity_regularizer L1L2(l1=0.05, l2=0.1)" in model.summary()
    finally:
        model.optimizer.dispose()
        model.dispose()


def test_penalties_reach_the_layers_inside_a_bidirectional():
    model = pe.Sequential(
        [
            L.Bidirectional(
                L.LSTM(2, kernel_regularizer=regularizers.l2(0.1), recurrent_regularizer="l1"),
                input_shape=(3, 2),
            )
        ]
    )
    try:
        model.compile(optimizer="sgd", loss="mse")
        assert len(model.training_config.penalties) == 4  # kernel and recurrent kernel, forward and backward
        weights = dict(zip(model.weight_names, model.get_weights()))
        want = sum(
            0.1 * (w.astype(np.float64) ** 2).sum() if name.endswith("/kernel") else 0.01 * np.abs(w).sum()
            for name, w in weights.items()
            if name.endswith(("/kernel", "recurrent_kernel"))
        )
        got = sum(float(p().numpy()) for p in model.training_config.penalties)
        assert got == pytest.approx(want, rel=1e-5)
        lines = [line for line in model.summary().splitlines() if "recurrent_regularizer" in line]
        wrapper = model.layers[0].name
        assert [line.split(":")[0].strip().split("/")[0] for line in lines] == [wrapper, wrapper]
        assert "/forward_lstm" in lines[0] and "/backward_lstm" in lines[1]
    finally:
        model.dispose()


def test_an_unknown_regularizer_from_a_config_loads_and_compile_names_it():
    model = pe.Sequential(
        [L.Dense(2, input_shape=(3,), kernel_regularizer={"class_name": "OrthogonalRegularizer", "config": {}})]
    )
    try:
        with pytest.raises(NotImplementedError, match=r"dense\S* \(Dense\) kernel_regularizer: regularizer"):
            model.compile(optimizer="sgd", loss="mse")
    finally:
        model.dispose()


# ---- constraints -------------------------------------------------------------------------------------------------


def _norms(w, axis):
    return np.sqrt((w.astype(np.float64) ** 2).sum(axis=axis, keepdims=True))


@pytest.mark.usefixtures("each_backend")
def test_constraints_project_by_their_formulas():
    rng = np.random.default_rng(2)
    w = rng.normal(size=(5, 4)).astype(np.float32)
    k = rng.normal(size=(2, 2, 3, 4)).astype(np.float32)
    eps = 1e-7
    cases = [
        (constraints.MaxNorm(1.5), w, lambda w: w * np.clip(_norms(w, 0), 0, 1.5) / (eps + _norms(w, 0))),
        (constraints.MaxNorm(1.0, axis=1), w, lambda w: w * np.clip(_norms(w, 1), 0, 1) / (eps + _norms(w, 1))),
        (
            constraints.MaxNorm(0.8, axis=[0, 1, 2]),
            k,
            lambda w: w * np.clip(_norms(w, (0, 1, 2)), 0, 0.8) / (eps + _norms(w, (0, 1, 2))),
        ),
        (
            constraints.MinMaxNorm(1.0, 2.0, rate=0.4),
            w,
            lambda w: w * (0.4 * np.clip(_norms(w, 0), 1, 2) + 0.6 * _norms(w, 0)) / (eps + _norms(w, 0)),
        ),
        (constraints.NonNeg(), w, lambda w: np.maximum(w, 0)),
        (constraints.UnitNorm(), w, lambda w: w / (eps + _norms(w, 0))),
        (constraints.UnitNorm(axis=-1), k, lambda w: w / (eps + _norms(w, -1))),
    ]
    for constraint, value, want in cases:
        got = constraint(pe.tensor(value)).numpy()
        np.testing.assert_allclose(got, want(value), rtol=1e-5, atol=1e-7, err_msg=repr(constraint))


def test_constraint_names_configs_and_refusals():
    assert constraints.serialize("max_norm") == {"class_name": "MaxNorm", "config": {"max_value": 2.0, "axis": 0}}
    assert constraints.serialize("maxNorm") == constraints.serialize("MaxNorm")
    assert constraints.serialize("non_neg") == {"class_name": "NonNeg", "config": {}}
    assert constraints.serialize("unitNorm") == {"class_name": "UnitNorm", "config": {"axis": 0}}
    assert constraints.serialize("min_max_norm") == {
        "class_name": "MinMaxNorm",
        "config": {"min_value": 0.0, "max_value": 1.0, "rate": 1.0, "axis": 0},
    }
    tfjs = constraints.get({"class_name": "MaxNorm", "config": {"maxValue": 3, "axis": [0, 1]}})  # TF.js's keys
    assert (tfjs.max_value, tfjs.axis) == (3.0, [0, 1])
    with pytest.raises(ValueError, match="unknown constraint 'radial'"):
        constraints.get("radial")
    with pytest.raises(ValueError, match=r"min_value 2\.0 is greater than max_value 1\.0"):
        constraints.MinMaxNorm(2, 1)
    odd = {"class_name": "RadialConstraint", "config": {}}
    assert constraints.serialize(odd) == odd
    model = pe.Sequential([L.Dense(2, input_shape=(3,), kernel_constraint=odd)])
    try:
        with pytest.raises(NotImplementedError, match=r"kernel_constraint: constraint .*RadialConstraint"):
            model.compile(optimizer="sgd", loss="mse")
    finally:
        model.dispose()


@pytest.mark.usefixtures("each_backend")
def test_constraints_apply_after_every_update_in_fit_and_train_on_batch():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(16, 4)).astype(np.float32), rng.normal(size=(16, 3)).astype(np.float32) * 5
    model = pe.Sequential(
        [
            L.Dense(6, input_shape=(4,), kernel_constraint=constraints.MaxNorm(0.5), bias_constraint="non_neg"),
            L.Dense(3, kernel_constraint="unit_norm", name="frozen"),
        ]
    )
    model.layers[1].trainable = False
    frozen_before = model.layers[1].get_weights()
    model.compile(optimizer=pe.optimizers.SGD(0.5), loss="mse")
    try:
        model.fit(x, y, batch_size=4, epochs=2, verbose=0)
        kernel, bias = model.layers[0].get_weights()
        assert _norms(kernel, 0).max() <= 0.5 + 1e-6 and bias.min() >= 0
        assert _norms(kernel, 0).max() > 0.49  # the updates pushed them out: the projection brought them back
        for got, want in zip(model.layers[1].get_weights(), frozen_before):  # not trainable: left alone
            np.testing.assert_array_equal(got, want)
        model.layers[0].set_weights([kernel * 10, bias - 1])  # set_weights does not project (Keras)
        assert model.layers[0].get_weights()[1].min() < 0
        model.train_on_batch(x, y)
        kernel, bias = model.layers[0].get_weights()
        assert _norms(kernel, 0).max() <= 0.5 + 1e-6 and bias.min() >= 0
        text = model.summary()
        assert "dense" in text and "kernel_constraint MaxNorm(max_value=0.5, axis=0), bias_constraint NonNeg()" in text
    finally:
        model.optimizer.dispose()
        model.dispose()


def test_loading_projects_constrained_weights_once_as_tfjs(tmp_path):
    model = pe.Sequential([L.Dense(3, input_shape=(4,), kernel_constraint=constraints.MaxNorm(1.0))])
    big = np.full((4, 3), 2.0, np.float32)
    model.layers[0].set_weights([big, np.zeros(3, np.float32)])
    model.save(tmp_path)
    model.dispose()
    loaded = asyncio.run(pe.load_layers_model(tmp_path))
    try:
        np.testing.assert_allclose(loaded.get_weights()[0], np.full((4, 3), 0.5), rtol=1e-6)
    finally:
        loaded.dispose()
    outline = asyncio.run(pe.load_layers_model(tmp_path, weights=False))  # zeros: nothing to project
    outline.dispose()


# ---- losses and metrics ------------------------------------------------------------------------------------------

EPS = 1e-7
RNG = np.random.default_rng(4)
T = RNG.normal(size=(5, 4)).astype(np.float32)
P = RNG.normal(size=(5, 4)).astype(np.float32)
PT = RNG.uniform(0.05, 1, size=(5, 4)).astype(np.float32)
PP = RNG.uniform(0.05, 1, size=(5, 4)).astype(np.float32)
SIGNS = np.sign(T)
ONE_HOT = np.eye(4, dtype=np.float32)[[0, 3, 1, 1, 2]]


def _normalize(x):
    return x / np.sqrt(np.maximum((x.astype(np.float64) ** 2).sum(-1, keepdims=True), EPS))


# name: (y_true, y_pred, numpy per-example loss)
LOSSES = {
    "mean_absolute_percentage_error": (
        T,
        P,
        lambda t, p: 100 * np.mean(np.abs((t - p) / np.maximum(np.abs(t), EPS)), -1),
    ),
    "mean_squared_logarithmic_error": (
        PT,
        P,
        lambda t, p: np.mean((np.log1p(np.maximum(p, EPS)) - np.log1p(np.maximum(t, EPS))) ** 2, -1),
    ),
    "hinge": (SIGNS, P, lambda t, p: np.mean(np.maximum(1 - t * p, 0), -1)),
    "squared_hinge": (SIGNS, P, lambda t, p: np.mean(np.maximum(1 - t * p, 0) ** 2, -1)),
    "categorical_hinge": (
        ONE_HOT,
        P,
        lambda t, p: np.maximum(0, 1 + np.max((1 - t) * p, -1) - np.sum(t * p, -1)),
    ),
    "logcosh": (T, P, lambda t, p: np.mean(np.log(np.cosh(p - t)), -1)),
    "kullback_leibler_divergence": (
        PT,
        PP,
        lambda t, p: np.sum(t * np.log(np.clip(t, EPS, 1) / np.clip(p, EPS, 1)), -1),
    ),
    "poisson": (PT, PP, lambda t, p: np.mean(p - t * np.log(p + EPS), -1)),
    "cosine_proximity": (T, P, lambda t, p: -np.sum(_normalize(t) * _normalize(p), -1)),
}
ALIASES = {
    "mape": "mean_absolute_percentage_error",
    "MAPE": "mean_absolute_percentage_error",
    "meanAbsolutePercentageError": "mean_absolute_percentage_error",
    "msle": "mean_squared_logarithmic_error",
    "meanSquaredLogarithmicError": "mean_squared_logarithmic_error",
    "squaredHinge": "squared_hinge",
    "categoricalHinge": "categorical_hinge",
    "log_cosh": "logcosh",
    "kld": "kullback_leibler_divergence",
    "KLD": "kullback_leibler_divergence",
    "kullbackLeiblerDivergence": "kullback_leibler_divergence",
    "cosine": "cosine_proximity",
    "cosineProximity": "cosine_proximity",
}


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("name", list(LOSSES))
def test_losses_follow_their_formulas_as_losses_and_metrics(name):
    t, p, formula = LOSSES[name]
    want = formula(t.astype(np.float64), p.astype(np.float64))
    loss = losses.get(name)
    assert loss.name == name and loss.tfjs_name is not None
    np.testing.assert_allclose(loss.per_example(t, p).numpy(), want, rtol=1e-5, atol=1e-6)
    assert float(loss(t, p).numpy()) == pytest.approx(want.mean(), rel=1e-5)
    log_name, fn = metrics.get(name)
    assert log_name == name
    np.testing.assert_allclose(fn(t, p).numpy(), want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ShapeError, match="must have the same shape"):
        loss.check((5, 4), "float32", (None, 3))


def test_loss_aliases_resolve_to_their_loss():
    for alias, name in ALIASES.items():
        assert losses.get(alias).name == name, alias
    assert losses.get(losses.kld).name == "kullback_leibler_divergence"
    assert losses.get("KLDivergence").name == "kullback_leibler_divergence"


def test_a_model_trains_with_each_new_loss():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(12, 3)).astype(np.float32)
    targets = {
        "hinge": np.sign(rng.normal(size=(12, 4))),
        "squared_hinge": np.sign(rng.normal(size=(12, 4))),
        "categorical_hinge": np.eye(4)[rng.integers(0, 4, 12)],
        "logcosh": rng.normal(size=(12, 4)),
        "kld": np.eye(4)[rng.integers(0, 4, 12)],
        "poisson": rng.poisson(2, size=(12, 4)),
        "cosine": rng.normal(size=(12, 4)),
        "mape": rng.normal(size=(12, 4)) + 3,
        "msle": np.abs(rng.normal(size=(12, 4))),
    }
    for name, y in targets.items():
        activation = "softmax" if name in ("kld", "poisson") else "linear"
        model = pe.Sequential([L.Dense(4, input_shape=(3,), activation=activation)])
        model.compile(optimizer=pe.optimizers.Adam(0.05), loss=name)
        try:
            history = model.fit(x, y.astype(np.float32), epochs=8, batch_size=12, verbose=0).history["loss"]
            assert history[-1] < history[0], f"{name}: {history}"
        finally:
            model.optimizer.dispose()
            model.dispose()


@pytest.mark.usefixtures("each_backend")
def test_precision_recall_and_r2_score_follow_tfjs_formulas():
    t = np.array([[1, 0, 1, 1], [0, 1, 1, 0]], np.float32)
    p = np.array([[1, 1, 0, 1], [0, 1, 1, 1]], np.float32)
    tp, fp, fn = 4, 2, 1
    assert float(metrics.precision(t, p).numpy()) == pytest.approx(tp / (tp + fp))
    assert float(metrics.recall(t, p).numpy()) == pytest.approx(tp / (tp + fn))
    assert float(metrics.precision(t, np.zeros_like(p)).numpy()) == 0  # nothing predicted positive
    assert float(metrics.recall(np.zeros_like(t), p).numpy()) == 0
    soft = np.array([[0.9, 1, 0.1, 1]], np.float32)  # only exact 1s and 0s count, as TF.js
    assert float(metrics.precision(t[:1], soft).numpy()) == pytest.approx(1 / 2)
    y_true, y_pred = T.astype(np.float64), P.astype(np.float64)
    r2 = 1 - ((y_true - y_pred) ** 2).sum() / ((y_true - y_true.mean()) ** 2).sum()
    assert float(metrics.r2_score(T, P).numpy()) == pytest.approx(r2, rel=1e-5)
    for name in ("precision", "recall", "r2_score", "r2Score", "mape", "MAPE", "cosine", "cosineProximity", "msle"):
        assert metrics.get(name)[0] == name


def test_fit_averages_batch_metrics_by_batch_size():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(10, 3)).astype(np.float32)
    y = (rng.uniform(size=(10, 2)) > 0.5).astype(np.float32)
    model = pe.Sequential([L.Dense(2, input_shape=(3,), activation="sigmoid")])
    model.compile(optimizer="sgd", loss="binary_crossentropy", metrics=["r2_score", "precision"])
    try:
        logs = model.evaluate(x, y, batch_size=4, return_dict=True)
        p = model.predict(x).numpy().astype(np.float64)
        r2 = [
            1 - ((y[s] - p[s]) ** 2).sum() / ((y[s] - y[s].mean()) ** 2).sum()
            for s in (slice(0, 4), slice(4, 8), slice(8, 10))
        ]
        assert logs["r2_score"] == pytest.approx((4 * r2[0] + 4 * r2[1] + 2 * r2[2]) / 10, rel=1e-5)
        assert logs["precision"] == 0  # sigmoid outputs are never exactly 1
    finally:
        model.optimizer.dispose()
        model.dispose()


def test_a_saved_training_config_names_what_tfjs_can_compile(tmp_path):
    model = pe.Sequential([L.Dense(2, input_shape=(3,))])
    model.compile(
        optimizer=pe.optimizers.Adamax(0.01, decay=0.1),
        loss="logcosh",
        metrics=["mean_absolute_percentage_error", "recall", "r2_score", "cosine_proximity", "precision", "mse"],
    )
    try:
        model.save(tmp_path)
        saved = json.loads((tmp_path / "model.json").read_text())["trainingConfig"]
        assert saved["loss"] == "logcosh"
        assert saved["metrics"] == ["mape", "cosine", "precision", "mse"]
        assert saved["optimizer_config"] == {
            "class_name": "Adamax",
            "config": {"learningRate": 0.01, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-7, "decay": 0.1},
        }
        loaded = asyncio.run(pe.load_layers_model(tmp_path))
        try:
            assert isinstance(loaded.optimizer, pe.optimizers.Adamax) and loaded.optimizer.decay == 0.1
            assert loaded.training_config.log_names == ["loss", "mape", "cosine", "precision", "mse"]
        finally:
            loaded.dispose()
    finally:
        model.dispose()
    assert metrics.tfjs_name("binary_accuracy") == "binary_accuracy"  # TF.js camel-cases it when loading
    assert metrics.tfjs_name("sparse_categorical_accuracy") is None  # not in TF.js's compile map
    assert metrics.tfjs_name("acc") == "acc"
