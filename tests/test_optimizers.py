"""Optimizers and learning-rate schedules: TF.js's update rules against numpy, clipping, memory, configs, errors.

The numpy references below are written from tfjs-core/src/optimizers/*.ts (TF.js 4.22), in float64.
"""

import functools
import math

import numpy as np
import pytest

import py_engine as pe
from py_engine.engine import ENGINE
from py_engine.train import optimizers, schedules

SHAPES = {"a": (3,), "b": (2, 2)}
STEPS = 3


# ---- numpy references (state: a dict per variable; t: the step, from 1) ---------------------------


def sgd_reference(w, g, state, t, lr):
    return w - lr * g


def momentum_reference(w, g, state, t, lr, momentum, nesterov):
    acc = momentum * state.get("acc", 0.0) + g
    state["acc"] = acc
    return w - lr * (g + momentum * acc) if nesterov else w - lr * acc


def adam_reference(w, g, state, t, lr, beta_1, beta_2, epsilon, weight_decay=0.0):
    w = w - lr * weight_decay * w  # AdamW: Keras's decoupled decay first (0 for Adam)
    m = beta_1 * state.get("m", 0.0) + (1 - beta_1) * g
    v = beta_2 * state.get("v", 0.0) + (1 - beta_2) * g * g
    state["m"], state["v"] = m, v
    m_hat, v_hat = m / (1 - beta_1**t), v / (1 - beta_2**t)
    return w - lr * m_hat / (np.sqrt(v_hat) + epsilon)


def rmsprop_reference(w, g, state, t, lr, rho, momentum, epsilon, centered):
    ms = rho * state.get("ms", 0.0) + (1 - rho) * g * g
    state["ms"] = ms
    if centered:
        mg = rho * state.get("mg", 0.0) + (1 - rho) * g
        state["mg"] = mg
        denominator = np.sqrt(ms - mg * mg + epsilon)  # TF.js subtracts epsilon here; see RMSprop's docstring
    else:
        denominator = np.sqrt(ms + epsilon)  # epsilon inside the root, as TF.js
    mom = momentum * state.get("mom", 0.0) + lr * g / denominator
    state["mom"] = mom
    return w - mom


def adadelta_reference(w, g, state, t, lr, rho, epsilon):
    """Keras's rule (keras/src/optimizers/adadelta.py): TF.js 4.22 divides by the accumulator from before the step."""
    acc_g = rho * state.get("acc_g", 0.0) + (1 - rho) * g * g
    update = np.sqrt(state.get("acc_u", 0.0) + epsilon) / np.sqrt(acc_g + epsilon) * g
    state["acc_g"], state["acc_u"] = acc_g, rho * state.get("acc_u", 0.0) + (1 - rho) * update * update
    return w - lr * update


def adamax_reference(w, g, state, t, lr, beta_1, beta_2, epsilon, decay):
    m = beta_1 * state.get("m", 0.0) + (1 - beta_1) * g
    u = np.maximum(beta_2 * state.get("u", 0.0), np.abs(g))
    state["m"], state["u"] = m, u
    lr_t = lr / (1 + decay * (t - 1))
    return w - lr_t / (1 - beta_1**t) * m / (u + epsilon)


def adagrad_reference(w, g, state, t, lr, initial_accumulator_value, epsilon):
    acc = state.get("acc", initial_accumulator_value) + g * g
    state["acc"] = acc
    return w - lr * g / np.sqrt(acc + epsilon)


# id: (optimizer factory, reference, slot names for variables a and b in TF.js's order)
CASES = {
    "sgd": (lambda: optimizers.SGD(0.1), functools.partial(sgd_reference, lr=0.1), []),
    "momentum": (
        lambda: optimizers.SGD(0.1, momentum=0.9),
        functools.partial(momentum_reference, lr=0.1, momentum=0.9, nesterov=False),
        ["a/momentum", "b/momentum"],
    ),
    "nesterov": (
        lambda: optimizers.SGD(0.1, momentum=0.8, nesterov=True),
        functools.partial(momentum_reference, lr=0.1, momentum=0.8, nesterov=True),
        ["a/momentum", "b/momentum"],
    ),
    "adam": (
        lambda: optimizers.Adam(0.05, beta_1=0.8, beta_2=0.99),
        functools.partial(adam_reference, lr=0.05, beta_1=0.8, beta_2=0.99, epsilon=1e-7),
        ["a/m", "b/m", "a/v", "b/v"],
    ),
    "adamw": (
        lambda: optimizers.AdamW(0.05, weight_decay=0.1, epsilon=1e-3),
        functools.partial(adam_reference, lr=0.05, beta_1=0.9, beta_2=0.999, epsilon=1e-3, weight_decay=0.1),
        ["a/m", "b/m", "a/v", "b/v"],
    ),
    "rmsprop": (
        lambda: optimizers.RMSprop(0.01),
        functools.partial(rmsprop_reference, lr=0.01, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False),
        ["a/rms", "b/rms", "a/momentum", "b/momentum"],
    ),
    "rmsprop_momentum": (
        lambda: optimizers.RMSprop(0.01, rho=0.8, momentum=0.5, epsilon=1e-2),
        functools.partial(rmsprop_reference, lr=0.01, rho=0.8, momentum=0.5, epsilon=1e-2, centered=False),
        ["a/rms", "b/rms", "a/momentum", "b/momentum"],
    ),
    "rmsprop_centered": (
        lambda: optimizers.RMSprop(0.01, momentum=0.5, centered=True),
        functools.partial(rmsprop_reference, lr=0.01, rho=0.9, momentum=0.5, epsilon=1e-7, centered=True),
        ["a/rms", "b/rms", "a/momentum", "b/momentum", "a/mg", "b/mg"],
    ),
    "adagrad": (
        lambda: optimizers.Adagrad(0.1, initial_accumulator_value=0.2),
        functools.partial(adagrad_reference, lr=0.1, initial_accumulator_value=0.2, epsilon=1e-7),
        ["a/accumulator", "b/accumulator"],
    ),
    "adadelta": (
        lambda: optimizers.Adadelta(1.0, rho=0.8, epsilon=1e-4),
        functools.partial(adadelta_reference, lr=1.0, rho=0.8, epsilon=1e-4),
        ["a/accum_grad", "b/accum_grad", "a/accum_var", "b/accum_var"],
    ),
    "adamax": (
        lambda: optimizers.Adamax(0.05, beta_1=0.8, beta_2=0.9, decay=0.2),
        functools.partial(adamax_reference, lr=0.05, beta_1=0.8, beta_2=0.9, epsilon=1e-7, decay=0.2),
        ["a/m", "b/m", "a/v", "b/v"],
    ),
}


def make_problem(seed=0):
    """Float32 starting values away from 0 (relative tolerances) and STEPS gradients per variable."""
    rng = np.random.default_rng(seed)
    values = {
        name: (rng.uniform(0.5, 2.0, shape) * rng.choice([-1, 1], shape)).astype(np.float32)
        for name, shape in SHAPES.items()
    }
    grads = [{name: rng.normal(0, 1, shape).astype(np.float32) for name, shape in SHAPES.items()} for _ in range(STEPS)]
    return values, grads


def make_variables(values):
    return {name: pe.variable(v, name=name) for name, v in values.items()}


def apply(optimizer, grads_np):
    """One apply_gradients with the given numpy gradients as tensors; the gradients are disposed after."""
    grads = {name: pe.tensor(g) for name, g in grads_np.items()}
    optimizer.apply_gradients(grads)
    assert not any(g.is_disposed for g in grads.values()), "apply_gradients must leave the gradients to the caller"
    pe.dispose(grads)


@pytest.mark.parametrize("case", list(CASES))
def test_each_step_follows_the_tfjs_rule(each_backend, case):
    make_optimizer, reference, slot_names = CASES[case]
    values, grads = make_problem()
    variables = make_variables(values)
    optimizer = make_optimizer()
    expected = {name: v.astype(np.float64) for name, v in values.items()}
    states = {name: {} for name in values}
    for t, step_grads in enumerate(grads, start=1):
        apply(optimizer, step_grads)
        for name, v in variables.items():
            expected[name] = reference(expected[name], step_grads[name].astype(np.float64), states[name], t)
            np.testing.assert_allclose(v.numpy(), expected[name], rtol=1e-6, err_msg=f"{case} step {t} {name}")
    assert optimizer.iterations == STEPS
    assert [s.name for s in optimizer.variables] == slot_names
    assert all(not s.trainable for s in optimizer.variables)
    optimizer.dispose()
    pe.dispose(list(variables.values()))


def test_pairs_and_dict_give_the_same_update(each_backend):
    values, grads = make_problem(1)
    results = []
    for form in ("dict", "pairs"):
        variables = make_variables(values)
        optimizer = optimizers.Adam(0.1)
        for step_grads in grads:
            g = {name: pe.tensor(a) for name, a in step_grads.items()}
            optimizer.apply_gradients(g if form == "dict" else [(g[name], variables[name]) for name in g])
            pe.dispose(g)
        results.append({name: v.numpy() for name, v in variables.items()})
        optimizer.dispose()
        pe.dispose(list(variables.values()))
    for name in values:
        np.testing.assert_array_equal(results[0][name], results[1][name])


def test_a_none_gradient_leaves_its_variable_alone():
    w, u = pe.variable(np.ones(2, np.float32), name="w"), pe.variable(np.ones(2, np.float32), name="u")
    g = pe.tidy(lambda: pe.ones((2,)))
    optimizer = optimizers.SGD(0.5)
    optimizer.apply_gradients({"w": g, "u": None})
    assert w.tolist() == [0.5, 0.5] and u.tolist() == [1.0, 1.0]
    pe.dispose([w, u, g])


def test_centered_rmsprop_stays_finite_where_the_gradient_is_zero():
    # TF.js 4.22 computes sqrt(rms - (mg^2 + eps)) = sqrt(-eps) here, a NaN
    w = pe.variable(np.array([1.0, 2.0], np.float32), name="w")
    g = pe.tensor([0.0, 1.0])
    optimizer = optimizers.RMSprop(0.01, centered=True)
    optimizer.apply_gradients({"w": g})
    assert np.isfinite(w.numpy()).all() and w.numpy()[0] == 1.0
    optimizer.dispose()
    pe.dispose([w, g])


# ---- clipping --------------------------------------------------------------------------------------


def clipped_by(kwargs, grads):
    """The gradients Keras's clipping makes of `grads` (numpy, float64)."""
    if "clipnorm" in kwargs:
        c = kwargs["clipnorm"]
        return {k: g * c / max(np.sqrt((g * g).sum()), c) for k, g in grads.items()}
    if "global_clipnorm" in kwargs:
        c = kwargs["global_clipnorm"]
        norm = np.sqrt(sum((g * g).sum() for g in grads.values()))
        return {k: g * c / max(norm, c) for k, g in grads.items()}
    c = kwargs["clipvalue"]
    return {k: np.clip(g, -c, c) for k, g in grads.items()}


@pytest.mark.parametrize("kwargs", [{"clipnorm": 1.0}, {"global_clipnorm": 2.0}, {"clipvalue": 0.5}], ids=str)
def test_clipping_on_the_device(each_backend, kwargs):
    # a's gradient is longer than every bound, b's shorter than clipnorm: both sides of each rule
    grads_np = {"a": np.array([3.0, -4.0, 0.0]), "b": np.array([[0.1, -0.2], [0.3, 0.4]])}
    values = {"a": np.zeros(3, np.float32), "b": np.zeros((2, 2), np.float32)}
    variables = make_variables(values)
    grads = {k: pe.tensor(g, dtype="float32") for k, g in grads_np.items()}
    optimizer = optimizers.SGD(1.0, **kwargs)
    readbacks = pe.stats()["readbacks"]
    optimizer.apply_gradients(grads)
    assert pe.stats()["readbacks"] == readbacks, "clipping read a value back to the host"
    for name, g in clipped_by(kwargs, grads_np).items():
        np.testing.assert_allclose(variables[name].numpy(), -g, rtol=1e-6, atol=1e-7)
    ((argument, bound),) = kwargs.items()
    assert optimizer.get_config()[{"global_clipnorm": "globalClipnorm"}.get(argument, argument)] == bound
    pe.dispose([list(variables.values()), list(grads.values())])


def test_clipnorm_keeps_a_zero_gradient_zero():
    w = pe.variable(np.ones(3, np.float32), name="w")
    g = pe.zeros((3,))
    optimizers.SGD(1.0, clipnorm=1.0).apply_gradients({"w": g})
    assert w.tolist() == [1.0, 1.0, 1.0]
    pe.dispose([w, g])


def test_clipping_arguments_are_checked():
    with pytest.raises(ValueError, match="only one of clipnorm, clipvalue and global_clipnorm"):
        optimizers.SGD(clipnorm=1.0, clipvalue=1.0)
    with pytest.raises(ValueError, match="clipnorm must be > 0, got -1"):
        optimizers.Adam(clipnorm=-1)
    with pytest.raises(TypeError, match="clipvalue must be a finite number"):
        optimizers.Adam(clipvalue="1")


# ---- schedules -------------------------------------------------------------------------------------


def test_exponential_decay_follows_its_formula():
    smooth = schedules.ExponentialDecay(0.1, decay_steps=4, decay_rate=0.5)
    stairs = schedules.ExponentialDecay(0.1, decay_steps=4, decay_rate=0.5, staircase=True)
    for step in range(12):
        assert smooth(step) == pytest.approx(0.1 * 0.5 ** (step / 4), rel=1e-12)
        assert stairs(step) == pytest.approx(0.1 * 0.5 ** (step // 4), rel=1e-12)


def test_cosine_decay_follows_its_formula_and_stays_at_alpha_after_decay_steps():
    schedule = schedules.CosineDecay(0.2, decay_steps=10, alpha=0.1)
    for step in range(15):
        s = min(step, 10)
        cosine = 0.5 * (1 + math.cos(math.pi * s / 10))
        assert schedule(step) == pytest.approx(0.2 * (0.9 * cosine + 0.1), rel=1e-12)
    assert schedule(0) == pytest.approx(0.2) and schedule(100) == pytest.approx(0.02)


def test_an_optimizer_evaluates_its_schedule_at_its_iterations(each_backend):
    schedule = schedules.ExponentialDecay(0.5, decay_steps=1, decay_rate=0.5)
    optimizer = optimizers.SGD(schedule)
    w = pe.variable(np.zeros(2, np.float32), name="w")
    g = pe.ones((2,))
    expected = 0.0
    for step in range(4):
        assert optimizer.learning_rate == 0.5 * 0.5**step
        optimizer.apply_gradients({"w": g})
        expected -= 0.5 * 0.5**step
        np.testing.assert_allclose(w.numpy(), [expected, expected], rtol=1e-6)
    pe.dispose([w, g])


def test_schedules_round_trip_and_are_checked():
    for schedule in (schedules.ExponentialDecay(0.1, 5, 0.9, staircase=True), schedules.CosineDecay(0.1, 7, 0.2)):
        again = schedules.deserialize(schedules.serialize(schedule))
        assert type(again) is type(schedule) and again.get_config() == schedule.get_config()
        assert [again(s) for s in range(10)] == [schedule(s) for s in range(10)]
    assert schedules.serialize(schedules.CosineDecay(0.1, 7)) == {
        "class_name": "CosineDecay",
        "config": {"initial_learning_rate": 0.1, "decay_steps": 7, "alpha": 0.0},
    }
    with pytest.raises(ValueError, match="decay_steps must be > 0, got 0"):
        schedules.ExponentialDecay(0.1, 0, 0.5)
    with pytest.raises(ValueError, match="unknown learning-rate schedule 'Linear'; known: ExponentialDecay"):
        schedules.deserialize({"class_name": "Linear", "config": {}})
    with pytest.raises(ValueError, match=r"CosineDecay\.from_config: .*warmup"):
        schedules.deserialize(
            {"class_name": "CosineDecay", "config": {"initial_learning_rate": 1, "decay_steps": 2, "warmup_steps": 3}}
        )
    with pytest.raises(ValueError, match=r"SGD: learning_rate must be >= 0, got -0\.1"):
        optimizers.SGD(-0.1)
    with pytest.raises(TypeError, match="learning_rate must be a number or a schedule"):
        optimizers.Adam(learning_rate="fast")


# ---- memory -----------------------------------------------------------------------------------------


def counts():
    m = pe.memory()
    return m.num_tensors, m.num_bytes


@pytest.mark.parametrize("case", list(CASES))
def test_memory_grows_by_the_slots_once_then_stays_flat(each_backend, case):
    make_optimizer, _, slot_names = CASES[case]
    start = counts()
    values, grads_np = make_problem(2)
    variables = make_variables(values)
    grads = {name: pe.tensor(g) for name, g in grads_np[0].items()}
    baseline = counts()
    optimizer = make_optimizer()
    readbacks = pe.stats()["readbacks"]
    optimizer.apply_gradients(grads)
    slot_bytes = sum(s.size * 4 for s in optimizer.variables)
    assert counts() == (baseline[0] + len(slot_names), baseline[1] + slot_bytes)
    for _ in range(4):
        optimizer.apply_gradients(grads)
        assert counts() == (baseline[0] + len(slot_names), baseline[1] + slot_bytes)
    assert pe.stats()["readbacks"] == readbacks, "an update read a value back to the host"
    optimizer.dispose()
    assert counts() == baseline and optimizer.variables == [] and optimizer.iterations == 5
    pe.dispose([list(variables.values()), list(grads.values())])
    assert counts() == start


def test_one_update_is_one_scope(each_backend, monkeypatch):
    values, grads_np = make_problem(3)
    variables = make_variables(values)
    grads = {name: pe.tensor(g) for name, g in grads_np[0].items()}
    optimizer = optimizers.SGD(0.1, momentum=0.9)
    optimizer.apply_gradients(grads)  # makes the slots
    opened = []
    scope = ENGINE.scope
    monkeypatch.setattr(ENGINE, "scope", lambda name=None: opened.append(name) or scope(name))
    optimizer.apply_gradients(grads)
    assert opened == ["apply_gradients"], "each update must release its temporaries in one scope"
    monkeypatch.undo()
    optimizer.dispose()
    pe.dispose([list(variables.values()), list(grads.values())])


def test_minimize_leaves_only_the_slots(each_backend):
    w = pe.variable(np.array([1.0, -2.0], np.float32), name="w")
    frozen = pe.variable(np.array([3.0], np.float32), name="frozen")
    x = pe.tensor([0.5, 0.25])
    before = counts()

    def loss():
        return pe.sum(pe.square(w * x)) + pe.sum(frozen)

    optimizer = optimizers.Adam(0.1)
    assert optimizer.minimize(loss, var_list=[w]) is None
    assert counts() == (before[0] + 2, before[1] + 16)  # w/m and w/v; frozen was left out
    assert frozen.tolist() == [3.0]
    w_before = w.numpy().astype(np.float64)
    cost = optimizer.minimize(loss, return_cost=True)  # every trainable variable: frozen gets slots too
    assert cost.shape == () and counts() == (before[0] + 5, before[1] + 16 + 8 + 4)
    np.testing.assert_allclose(cost.numpy(), ((w_before * [0.5, 0.25]) ** 2).sum() + 3.0, rtol=1e-6)
    assert frozen.numpy()[0] < 3.0
    cost.dispose()
    optimizer.dispose()
    assert counts() == before and optimizer.iterations == 2
    pe.dispose([w, frozen, x])


def test_dispose_keeps_the_optimizer_usable_with_fresh_slots():
    w = pe.variable(np.zeros(2, np.float32), name="w")
    g = pe.ones((2,))
    optimizer = optimizers.SGD(1.0, momentum=0.5)
    optimizer.apply_gradients({"w": g})
    optimizer.apply_gradients({"w": g})  # acc 1.5
    assert w.tolist() == [-2.5, -2.5]
    optimizer.dispose()
    optimizer.apply_gradients({"w": g})  # acc starts again at 0: 1
    assert w.tolist() == [-3.5, -3.5] and [s.name for s in optimizer.variables] == ["w/momentum"]
    optimizer.dispose()
    pe.dispose([w, g])


def test_slots_of_disposed_variables_are_freed_and_names_never_clash():
    taken = pe.variable(np.zeros(1, np.float32), name="w/m")
    w = pe.variable(np.zeros(2, np.float32), name="w")
    g = pe.ones((2,))
    optimizer = optimizers.Adam()
    optimizer.apply_gradients({"w": g})
    assert [s.name for s in optimizer.variables] == ["w/m_1", "w/v"]
    w.dispose()
    u = pe.variable(np.zeros(2, np.float32), name="u")
    before = pe.memory().num_tensors
    optimizer.apply_gradients({"u": g})
    assert [s.name for s in optimizer.variables] == ["u/m", "u/v"]
    assert pe.memory().num_tensors == before  # w's two slots went, u's two came
    optimizer.dispose()
    pe.dispose([taken, u, g])


# ---- configs ---------------------------------------------------------------------------------------


TFJS_CONFIG_KEYS = {
    "sgd": ("SGD", {"learningRate"}),
    "momentum": ("Momentum", {"learningRate", "momentum", "useNesterov"}),
    "adam": ("Adam", {"learningRate", "beta1", "beta2", "epsilon"}),
    "adamw": ("AdamW", {"learningRate", "beta1", "beta2", "epsilon", "weightDecay"}),
    "rmsprop": ("RMSProp", {"learningRate", "decay", "momentum", "epsilon", "centered"}),
    "adagrad": ("Adagrad", {"learningRate", "initialAccumulatorValue"}),
    "adadelta": ("Adadelta", {"learningRate", "rho", "epsilon"}),
    "adamax": ("Adamax", {"learningRate", "beta1", "beta2", "epsilon", "decay"}),
}


@pytest.mark.parametrize("case", list(TFJS_CONFIG_KEYS))
def test_config_is_tfjs_and_round_trips(case):
    optimizer = CASES[case][0]()
    class_name, keys = TFJS_CONFIG_KEYS[case]
    saved = optimizer.to_json_config()
    assert saved["class_name"] == class_name and set(saved["config"]) == keys
    again = optimizers.get(saved)
    assert type(again) is type(optimizer) and again.to_json_config() == saved


def test_configs_as_tfjs_writes_them():
    momentum = optimizers.get(
        {"class_name": "Momentum", "config": {"learningRate": 0.1, "momentum": 0.9, "useNesterov": True}}
    )
    assert (type(momentum), momentum.learning_rate, momentum.momentum, momentum.nesterov) == (
        optimizers.SGD,
        0.1,
        0.9,
        True,
    )
    rms = optimizers.get(
        {
            "class_name": "RMSProp",
            "config": {"learningRate": 0.01, "decay": 0.8, "momentum": 0.1, "epsilon": 1e-6, "centered": False},
        }
    )
    assert (type(rms), rms.rho, rms.momentum, rms.epsilon) == (optimizers.RMSprop, 0.8, 0.1, 1e-6)
    adam = optimizers.get({"class_name": "Adam", "config": {"learningRate": 0.01, "beta1": 0.5, "epsilon": None}})
    assert (adam.beta_1, adam.beta_2, adam.epsilon) == (0.5, 0.999, 1e-7)  # TF.js: a null epsilon is the backend's


def test_extras_round_trip_schedule_clipping_and_adagrad_epsilon():
    schedule = schedules.CosineDecay(0.1, 10, alpha=0.5)
    optimizer = optimizers.Adagrad(schedule, epsilon=1e-4, global_clipnorm=3.0)
    optimizer.iterations = 4
    config = optimizer.get_config()
    assert config["learningRate"] == schedule(4)  # what TF.js, which knows no schedules, will use
    assert config["epsilon"] == 1e-4 and config["globalClipnorm"] == 3.0
    again = optimizers.get(optimizer.to_json_config())
    assert again.get_config() == optimizers.Adagrad(schedule, epsilon=1e-4, global_clipnorm=3.0).get_config()
    assert isinstance(again._schedule, schedules.CosineDecay) and again.global_clipnorm == 3.0


def test_get_by_name_and_instance():
    adam = optimizers.Adam()
    assert optimizers.get(adam) is adam
    for name, cls, lr in [
        ("sgd", optimizers.SGD, 0.01),
        ("ADAM", optimizers.Adam, 0.001),
        ("AdamW", optimizers.AdamW, 0.001),
        ("RMSProp", optimizers.RMSprop, 0.001),
        ("adagrad", optimizers.Adagrad, 0.01),  # TF.js's getOptimizer('adagrad')
        ("adadelta", optimizers.Adadelta, 1.0),  # TF.js's getOptimizer('adadelta')
        ("Adamax", optimizers.Adamax, 0.002),
    ]:
        made = optimizers.get(name)
        assert type(made) is cls and made.learning_rate == lr and made.iterations == 0


def test_get_errors_name_what_is_known():
    with pytest.raises(
        ValueError, match="unknown optimizer 'nadam'; known names: sgd, adam, adamw, rmsprop, adagrad, adadelta, adamax"
    ):
        optimizers.get("nadam")
    with pytest.raises(ValueError, match="unknown optimizer class 'Nadam'; known classes: sgd, momentum"):
        optimizers.get({"class_name": "Nadam", "config": {}})
    with pytest.raises(ValueError, match=r"Adam.from_config: unknown config keys \['beta_1'\]"):
        optimizers.get({"class_name": "Adam", "config": {"beta_1": 0.9}})
    with pytest.raises(TypeError, match="cannot make an optimizer from 3"):
        optimizers.get(3)
    with pytest.raises(ValueError, match=r"Adam: beta_1 must be in \[0, 1\), got 1.0"):
        optimizers.Adam(beta_1=1.0)


# ---- errors ----------------------------------------------------------------------------------------


def test_update_errors_name_the_variable_and_change_nothing(each_backend):
    w = pe.variable(np.ones((2, 3), np.float32), name="w")
    u = pe.variable(np.ones(3, np.float32), name="u")
    good = pe.ones((3,))
    wrong_shape, ints = pe.ones((3, 2)), pe.ones((2, 3), dtype="int32")
    disposed = pe.ones((2, 3))
    disposed.dispose()
    optimizer = optimizers.Adam()
    bad_inputs = [
        ({"u": good, "w": wrong_shape}, pe.ShapeError, r"gradient of 'w' has shape \(3, 2\), the variable has shape"),
        ({"u": good, "w": ints}, pe.DTypeError, "gradient of 'w' is int32; gradients must be float32"),
        ({"u": good, "w": disposed}, pe.DisposedTensorError, r"the gradient of 'w' \(Tensor#\d+\) was disposed"),
        ({"u": good, "nope": good}, ValueError, "'nope' is not a live variable"),
        ({"u": good, "w": np.ones((2, 3))}, TypeError, "gradient of 'w' must be a tensor, got ndarray"),
        ([(good, u), (good, "w")], TypeError, "each pair must be"),
        ([(good, u), (good, u)], ValueError, "variable 'u' has two gradients"),
    ]
    for grads, error, message in bad_inputs:
        with pytest.raises(error, match=message):
            optimizer.apply_gradients(grads)
    assert optimizer.iterations == 0 and optimizer.variables == []
    assert w.tolist() == [[1.0] * 3] * 2 and u.tolist() == [1.0] * 3
    u.dispose()
    with pytest.raises(pe.DisposedTensorError, match="variable 'u' was disposed"):
        optimizer.apply_gradients([(good, u)])
    pe.dispose([w, good, wrong_shape, ints])
