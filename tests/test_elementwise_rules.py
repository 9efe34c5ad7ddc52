"""ops.elementwise_rules: a traced elementwise rule runs as one kernel, with the values of its ops run one at a time;
the optimizers' updates take one dispatch per variable on webgpu; bad rules and inputs are refused with what to do."""

import asyncio

import numpy as np
import pytest

import py_engine as pe
from py_engine.engine import ENGINE
from py_engine.errors import DisposedTensorError, DTypeError, ShapeError
from py_engine.ops import elementwise_rules
from py_engine.ops.elementwise_rules import fuse_elementwise, trace
from py_engine.train import optimizers

ADAM = [0.9, 0.1, 0.999, 0.001, 1e-7, 0.19, 0.0019, -0.01]  # betas, epsilon, bias corrections, -lr
RMSPROP = [0.9, 0.1, 1e-7, 0.5, 0.01]
# rule -> (its tensors, those that go under a square root, its scalars)
RULES = {
    optimizers._adam: (4, {3}, ADAM),
    optimizers._adamw: (4, {3}, [0.004, *ADAM]),
    optimizers._rmsprop: (4, {2}, RMSPROP),
    optimizers._rmsprop_centered_averages: (3, {1}, RMSPROP),
    optimizers._rmsprop_centered_step: (5, {3}, RMSPROP),
    optimizers._nesterov: (3, set(), [-0.01, 0.9]),
    optimizers._adagrad: (3, {2}, [1e-7, -0.01]),
}


@pytest.mark.parametrize("rule", list(RULES), ids=lambda rule: rule.__name__)
def test_a_fused_rule_gives_its_ops_values_bit_for_bit(each_backend, rule, rng):
    count, rooted, numbers = RULES[rule]
    arrays = [rng.normal(size=(37, 11)).astype(np.float32) for _ in range(count)]
    tensors = [pe.tensor(np.abs(a) if k in rooted else a) for k, a in enumerate(arrays)]
    scalars = pe.tensor(np.array(numbers, np.float32))
    fused = fuse_elementwise(rule, tensors, scalars)
    one_at_a_time = rule(*tensors, *(scalars[k] for k in range(len(numbers))))
    assert len(fused) == len(one_at_a_time)
    for f, e in zip(fused, one_at_a_time):
        np.testing.assert_array_equal(f.numpy(), e.numpy())


def test_a_rule_is_traced_once_into_its_steps():
    program = trace(optimizers._momentum, 3, 2)
    assert program.describe() == "3+2 in; Mul(4,2) Add(5,1) Mul(3,6) Add(7,0) -> 6,8"
    assert trace(optimizers._momentum, 3, 2) is program


def test_the_adam_update_of_each_variable_is_one_dispatch():
    ENGINE.forget_backend("webgpu")
    assert asyncio.run(pe.set_backend("webgpu")), ENGINE.fallback_reason
    weights = [pe.variable(np.ones(shape, np.float32), name=f"w{k}") for k, shape in enumerate([(4, 3), (3,), (5,)])]
    optimizer = pe.optimizers.Adam(0.01)
    grads = {w.var_name: pe.ones(w.shape) for w in weights}
    optimizer.apply_gradients(grads)  # makes the slots (a fill each)
    before = pe.stats()["dispatches"]
    optimizer.apply_gradients(grads)
    assert pe.stats()["dispatches"] - before == len(weights)
    pe.dispose(list(grads.values()))
    optimizer.dispose()


def scale(x, s):
    return x * s


def test_a_value_of_scalars_alone_takes_the_tensors_shape(each_backend):
    (z,) = fuse_elementwise(lambda x, s: s * s, [pe.ones((2, 3))], pe.tensor(np.float32([2])))
    np.testing.assert_array_equal(z.numpy(), np.full((2, 3), 4, np.float32))


def test_bad_inputs_and_rules_are_refused_with_what_to_do():
    x, s = pe.ones((2, 3)), pe.tensor(np.float32([2]))
    with pytest.raises(ShapeError, match=r"shapes \(2, 3\) and \(3,\); they must be of one shape"):
        fuse_elementwise(scale, [x, pe.ones((3,))])
    with pytest.raises(ShapeError, match=r"scalars must be a vector, got shape \(\)"):
        fuse_elementwise(scale, [x], pe.tensor(np.float32(2)))
    with pytest.raises(DTypeError, match="scalars of scale is int32; the rules are float32"):
        fuse_elementwise(scale, [x], pe.tensor(np.int32([2])))
    with pytest.raises(TypeError, match=r"tensor 1 of scale must be a tensor, got 2\.0"):
        fuse_elementwise(scale, [x, 2.0])
    with pytest.raises(ValueError, match="needs at least one tensor"):
        fuse_elementwise(scale, [], s)
    gone = pe.ones((2, 3))
    gone.dispose()
    with pytest.raises(DisposedTensorError):
        fuse_elementwise(scale, [x, gone])

    def with_a_number(x, s):
        return x * 2.0

    with pytest.raises(TypeError, match="pass a constant as one of the scalars"):
        fuse_elementwise(with_a_number, [x], s)

    def branching(x, s):
        return x if x else s

    with pytest.raises(TypeError, match="cannot branch on a traced value"):
        fuse_elementwise(branching, [x], s)

    def returns_an_input(x, s):
        return x

    with pytest.raises(TypeError, match="must return values it computed"):
        fuse_elementwise(returns_an_input, [x], s)

    def too_wide(a, b, c, d, e, s):
        return a * s, b * s, c * s

    with pytest.raises(
        ValueError, match=r"binds 9 buffers \(5 tensors, the scalars, 3 outputs\); a kernel binds at most 8"
    ):
        fuse_elementwise(too_wide, [x] * 5, s)
    assert elementwise_rules.maximum(x, pe.zeros((2, 3))).numpy().min() == 1  # on tensors, the functions are the ops
