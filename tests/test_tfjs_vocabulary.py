"""The training vocabulary against the real TensorFlow.js (npm @tensorflow/tfjs 4.22.0, test-only, pure JS in Node).

tests/tfjs/vocabulary_functions.mjs records what TF.js computes for each activation (values and gradients), each
loss compile() takes (per example, and the gradient with respect to y_pred), each tf.metrics function and metric
name, each regularizer and constraint, and each initializer (its draws' moments: the numbers are its generator's),
and here the engine must compute the same from the same inputs, looking each one up by TF.js's own name.
"""

import json

import numpy as np
import pytest

import py_engine as pe
from py_engine.layers import activations, initializers
from py_engine.train import constraints, losses, metrics, regularizers
from tests.tfjs_node import run_tfjs


@pytest.fixture(scope="module")
def tfjs(tmp_path_factory):
    out = tmp_path_factory.mktemp("vocabulary") / "functions.json"
    run_tfjs("vocabulary_functions.mjs", out)
    return json.loads(out.read_text())


def array(entry):
    return np.array(entry["data"], np.float32).reshape(entry["shape"])


def close(got, want, rtol=1e-5, atol=1e-6, what=""):
    got = got.numpy() if isinstance(got, pe.Tensor) else np.asarray(got)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


@pytest.mark.usefixtures("each_backend")
def test_every_activation_computes_what_tfjs_computes_with_its_gradient(tfjs):
    data = dict(tfjs["activations"])
    x, w = array(data.pop("x")), array(data.pop("w"))
    assert len(data) == 16
    for name, want in data.items():
        fn = activations.get(name)  # TF.js's name ("hardSigmoid", "gelu_new")
        close(fn(pe.tensor(x)), array(want["y"]), what=name)
        grad = pe.grad(lambda t, fn=fn: (fn(t) * pe.tensor(w)).sum())(pe.tensor(x))
        close(grad, array(want["grad"]), rtol=1e-4, atol=1e-5, what=f"{name} gradient")


@pytest.mark.usefixtures("each_backend")
def test_every_loss_compile_takes_computes_what_tfjs_computes_with_its_gradient(tfjs):
    data = tfjs["losses"]
    assert len(data) == 14
    for name, case in data.items():
        loss = losses.get(name)  # TF.js's compile name ("kullbackLeiblerDivergence", "logcosh", ...)
        y_true, y_pred, w = array(case["y_true"]), array(case["y_pred"]), array(case["w"])
        if name.startswith("sparse"):
            y_true = y_true.astype(np.int32)
        close(loss.per_example(y_true, pe.tensor(y_pred)), array(case["value"]), what=name)
        grad = pe.grad(lambda p, loss=loss, y_true=y_true, w=w: (loss.per_example(y_true, p) * pe.tensor(w)).sum())(
            pe.tensor(y_pred)
        )
        close(grad, array(case["grad"]), rtol=1e-4, atol=1e-5, what=f"{name} gradient")


@pytest.mark.usefixtures("each_backend")
def test_every_tfjs_metric_function_and_compile_name_computes_what_tfjs_computes(tfjs):
    for name, case in tfjs["metrics"].items():
        _, fn = metrics.get(name.split("/")[0])  # tf.metrics' function names ("r2Score", "MAPE", ...)
        y_true, y_pred = array(case["y_true"]), array(case["y_pred"])
        if name == "sparseCategoricalAccuracy":
            y_true = y_true.astype(np.int32)
        close(fn(y_true, y_pred), array(case["value"]), what=name)
    for name, case in tfjs["compiled"].items():
        y_true, y_pred = array(case["y_true"]), array(case["y_pred"])
        log_name, fn = metrics.get(name, loss="mse", output_shape=(None, y_pred.shape[-1]))
        assert log_name == name
        if name.startswith("sparse"):
            y_true = y_true.astype(np.int32)
        close(fn(y_true, y_pred), array(case["value"]), what=f"compile metric {name}")
        assert metrics.tfjs_name(name) == name


def test_regularizers_compute_tfjs_penalties_and_write_its_configs(tfjs):
    data = tfjs["regularizers"]
    weight = array(tfjs["constraints"]["weight"])
    cases = {
        "l1": regularizers.l1(0.03),
        "l2": regularizers.l2(0.07),
        "l1l2": regularizers.l1l2(l1=0.02, l2=0.05),
        "l1l2_default": regularizers.L1L2(),
    }
    for name, regularizer in cases.items():
        close(regularizer(pe.tensor(weight)), array(data[name]), what=name)
    assert regularizers.l1l2(l1=0.02, l2=0.05).get_config() == pytest.approx(data["l1l2_config"])
    assert regularizers.l1(0.03).get_config() == pytest.approx(data["l1_config"])


@pytest.mark.usefixtures("each_backend")
def test_constraints_project_as_tfjs_from_its_configs(tfjs):
    data = dict(tfjs["constraints"])
    weights = {"weight": array(data.pop("weight")), "kernel": array(data.pop("kernel"))}
    for name, case in data.items():
        constraint = constraints.get({"class_name": case["class_name"], "config": case["config"]})
        w = weights["kernel" if name.endswith("conv") else "weight"]
        close(constraint(pe.tensor(w)), array(case["value"]), what=name)
        # and back: our config, read by the same get
        assert constraints.get(constraint.to_config()).get_config() == constraint.get_config()


def test_initializers_draw_from_the_distributions_tfjs_draws_from(tfjs):
    for name, case in tfjs["initializers"].items():
        initializer = initializers.get({"class_name": case["class_name"], "config": case["config"]})
        shape = tuple(case["shape"])
        got = initializer(shape)
        assert got.shape == shape and got.dtype == np.float32, name
        if case["value"] is not None:
            np.testing.assert_array_equal(got, array(case["value"]), err_msg=name)
            continue
        want = case["moments"]
        std = want["std"]
        assert abs(got.std() - std) <= 0.04 * std, f"{name}: std {got.std()} vs TF.js's {std}"
        if not name.startswith("orthogonal"):  # both draws' means: within 5 standard errors of each other
            tolerance = 5 * std * np.sqrt(2 / got.size)
            assert abs(got.mean() - want["mean"]) <= tolerance, f"{name}: mean {got.mean()} vs TF.js's {want['mean']}"
        if "uniform" in name.lower() or "truncated" in name.lower() or name.endswith("normal"):
            # bounded: uniform limits or two standard deviations; the extremes of 10^4 draws come close to them
            assert abs(got.min() - want["min"]) <= 0.05 * std * 4, f"{name}: min {got.min()} vs {want['min']}"
            assert abs(got.max() - want["max"]) <= 0.05 * std * 4, f"{name}: max {got.max()} vs {want['max']}"
        if name.startswith("orthogonal"):
            gain = case["config"]["gain"]
            flat = got.reshape(-1, shape[-1])
            small = flat.T @ flat if flat.shape[0] >= flat.shape[1] else flat @ flat.T
            np.testing.assert_allclose(small, gain**2 * np.eye(len(small)), atol=1e-4, err_msg=name)


def test_tfjs_adadelta_ignores_rho_and_epsilon_in_its_first_step_and_ours_follows_keras(tfjs):
    """What pe.optimizers.Adadelta's docstring says of TF.js 4.22's AdadeltaOptimizer, checked on TF.js: its first
    update is lr * g whatever rho and epsilon are; Keras's (and ours) is lr * sqrt(eps) / sqrt((1 - rho) g^2 + eps) g."""
    case = tfjs["optimizers"]["adadelta_first_step"]
    g = array(case["gradient"])
    np.testing.assert_allclose(array(case["value"]), -g)  # TF.js: lr = 1, rho = 0.9, epsilon = 1e-6
    variable = pe.variable(np.zeros(3, np.float32), name="adadelta_first_step")
    optimizer = pe.optimizers.Adadelta(learning_rate=1.0, rho=0.9, epsilon=1e-6)
    try:
        optimizer.apply_gradients([(pe.tensor(g), variable)])
        close(variable, -np.sqrt(1e-6) / np.sqrt(0.1 * g * g + 1e-6) * g)
    finally:
        optimizer.dispose()
        pe.dispose(variable)
