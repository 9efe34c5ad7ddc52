"""The tape: gradient APIs, custom gradients, registration, and that it leaks nothing."""

import numpy as np
import pytest

import py_engine as pe
from py_engine.engine import TAPE


def test_grad_and_value_and_grad():
    x = pe.tensor([1.0, 2.0, 3.0])
    g = pe.grad(lambda t: (t * t).sum())(x)
    assert g.tolist() == [2.0, 4.0, 6.0]
    value, g2 = pe.value_and_grad(lambda t: (t * t).sum())(x)
    assert value.item() == 14.0 and g2.tolist() == [2.0, 4.0, 6.0]


def test_grads_with_several_inputs_and_dy():
    a, b = pe.tensor([[1.0, 2.0]]), pe.tensor([[3.0], [4.0]])
    ga, gb = pe.grads(lambda x, y: x @ y)(a, b, dy=pe.tensor([[2.0]]))
    assert ga.tolist() == [[6.0, 8.0]] and gb.tolist() == [[2.0], [4.0]]
    value, (ga2, gb2) = pe.value_and_grads(lambda x, y: (x @ y).sum())(a, b)
    assert value.item() == 11.0 and ga2.tolist() == [[3.0, 4.0]] and gb2.tolist() == [[1.0], [2.0]]


def test_gradients_accumulate_over_every_use():
    x = pe.tensor(3.0)
    assert pe.grad(lambda t: t * t * t + t)(x).item() == 28.0  # 3x^2 + 1


def test_the_tape_leaks_nothing_and_saved_tensors_are_released():
    x = pe.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    w = pe.tensor(np.ones((4, 2), np.float32))
    before = pe.memory()

    def loss(a, b):
        h = pe.relu(a @ b)
        return pe.mean(pe.softmax(h) * pe.tanh(h))

    gx, gw = pe.grads(loss)(x, w)
    after = pe.memory()
    assert after.num_tensors == before.num_tensors + 2
    assert after.num_data_buffers == before.num_data_buffers + 2
    assert after.num_bytes == before.num_bytes + gx.size * 4 + gw.size * 4


def test_no_tape_exists_outside_gradient_calls():
    assert TAPE.get() is None
    seen = []
    pe.grad(lambda t: seen.append(TAPE.get()) or t * 2)(pe.tensor(1.0))
    assert seen[0] is not None and TAPE.get() is None


def test_only_ops_that_touch_watched_tensors_are_recorded():
    x, unrelated = pe.tensor(2.0), pe.tensor(5.0)
    tapes = []

    def f(t):
        unrelated * 3 + 1  # not on the path from x: not recorded
        assert TAPE.get().nodes == [], "ops on tensors that do not depend on x were recorded"
        y = t * 4
        assert [node.kernel for node in TAPE.get().nodes] == ["Mul"]
        tapes.append(TAPE.get())
        return y

    assert pe.grad(f)(x).item() == 4.0
    assert tapes[0].nodes == []  # the tape was emptied and its saved tensors released


def test_an_input_that_needs_no_gradient_costs_no_backward_kernel():
    """A layer's input is data: its gradient (dy @ w.T, a convolution's BackpropInput) is never computed."""
    w = pe.variable(np.ones((4, 3), np.float32), name="w")
    f = pe.variable(np.ones((3, 3, 2, 5), np.float32), name="f")
    x, image = pe.ones((2, 4)), pe.ones((1, 6, 6, 2))

    def kernels(loss):
        info = pe.profile(lambda: pe.dispose(pe.variable_grads(loss)))
        return sorted(r.name for r in info.kernels if r.name in ("BatchMatMul", "Conv2D") or "Backprop" in r.name)

    assert kernels(lambda: (x @ w).sum()) == ["BatchMatMul", "BatchMatMul"]  # forward, dw
    assert kernels(lambda: pe.conv2d(image, f, 1, "same").sum()) == ["Conv2D", "Conv2DBackpropFilter"]
    pe.dispose([w, f, x, image])


def test_gradient_through_views():
    x = pe.tensor([[1.0, 2.0], [3.0, 4.0]])
    g = pe.grad(lambda t: (t.reshape((4,)) * pe.tensor([1.0, 2.0, 3.0, 4.0])).sum())(x)
    assert g.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_unconnected_input_is_a_clear_error():
    x, y = pe.tensor(1.0), pe.tensor(2.0)
    with pytest.raises(pe.GradientError, match=r"argument 1.*does not depend on it"):
        pe.grads(lambda a, b: a * 2)(x, y)
    assert pe.memory().num_tensors == 2


def test_bad_function_results_are_clear_errors():
    x = pe.tensor(1.0)
    with pytest.raises(pe.GradientError, match="must return one tensor"):
        pe.grad(lambda t: 3.0)(x)
    with pytest.raises(pe.GradientError, match="int32"):
        pe.grad(lambda t: pe.cast(t, "int32"))(x)
    with pytest.raises(pe.GradientError, match=r"shape \(\)"):
        pe.grad(lambda t: t * 2)(x, dy=pe.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="must be a Tensor"):
        pe.grad(lambda t: t)([1.0])


def test_missing_gradient_names_the_kernel():
    pe.register_kernel("NoGradYet", "numpy", lambda x: x * 2)
    try:
        from py_engine.engine import ENGINE

        with pytest.raises(pe.GradientError, match=r"no gradient is registered for kernel 'NoGradYet'"):
            pe.grad(lambda t: ENGINE.run_kernel("NoGradYet", (t,)))(pe.tensor(1.0))
    finally:
        pe.unregister_kernel("NoGradYet", "numpy")


def test_register_gradient_for_a_custom_kernel():
    from py_engine.engine import ENGINE

    pe.register_kernel("Cube", "numpy", lambda x: x**3)
    pe.register_gradient("Cube", lambda dy, ins, outs, attrs: dy * ins[0] * ins[0] * 3.0)
    try:
        assert pe.grad(lambda t: ENGINE.run_kernel("Cube", (t,)))(pe.tensor(2.0)).item() == 12.0
    finally:
        pe.unregister_kernel("Cube", "numpy")


def test_custom_grad_replaces_the_gradient_and_records_nothing_inside():
    @pe.custom_grad
    def clipped_identity(x):
        def grad_fn(dy):
            return pe.clip_by_value(dy, -1.0, 1.0)

        return x * 1.0, grad_fn

    x = pe.tensor([1.0, 2.0])
    g = pe.grad(lambda t: clipped_identity(t * 5.0).sum() * 3.0)(x)
    assert g.tolist() == [5.0, 5.0]  # dy = 3 is clipped to 1, then times 5
    assert clipped_identity(x).tolist() == [1.0, 2.0]  # plain calls just compute


def test_custom_grad_errors():
    @pe.custom_grad
    def bad(x):
        return x * 2

    with pytest.raises(TypeError, match=r"\(value, grad_fn\)"):
        bad(pe.tensor(1.0))

    @pe.custom_grad
    def wrong_count(x, y):
        return x * y, lambda dy: dy

    with pytest.raises(pe.GradientError, match="gave 1 values for 2 inputs"):
        pe.grads(lambda a, b: wrong_count(a, b))(pe.tensor(1.0), pe.tensor(2.0))


def test_variable_grads_uses_trainable_variables():
    w = pe.variable([1.0, 2.0], name="w")
    b = pe.variable([0.5], name="b")
    frozen = pe.variable([3.0], name="frozen", trainable=False)
    unused = pe.variable([9.0], name="unused")
    value, grads = pe.variable_grads(lambda: (w * frozen + b).sum())
    assert value.item() == 10.0
    assert set(grads) == {"w", "b"}
    assert grads["w"].tolist() == [3.0, 3.0] and grads["b"].tolist() == [2.0]
    value2, only_b = pe.variable_grads(lambda: (w * b).sum(), [b])
    assert value2.item() == 1.5 and set(only_b) == {"b"} and only_b["b"].tolist() == [3.0]
    with pytest.raises(pe.GradientError, match="does not depend on any"):
        pe.variable_grads(lambda: unused * 0.0 + pe.tensor(1.0), [w])


def test_gradients_inside_tidy_leave_only_what_is_returned():
    x = pe.tensor([1.0, 2.0])
    before = pe.memory().num_tensors
    g = pe.tidy(lambda: pe.grad(lambda t: pe.exp(t).sum())(x) * 2)
    assert pe.memory().num_tensors == before + 1
    np.testing.assert_allclose(g.numpy(), 2 * np.exp([1.0, 2.0]), rtol=1e-6)


def test_returned_gradients_never_alias_each_other_dy_or_inputs():
    a, b, d = pe.tensor([1.0]), pe.tensor([2.0]), pe.tensor([5.0])
    ga, gb = pe.grads(lambda x, y: x + y)(a, b)  # both gradients are dy itself inside the tape
    assert ga is not gb
    ga.dispose()
    assert gb.tolist() == [1.0]
    g = pe.grad(lambda x: x + 1.0)(a, dy=d)
    assert g is not d and g.tolist() == [5.0]
    value, g2 = pe.value_and_grad(lambda x: x)(a)
    assert value is not a and g2.tolist() == [1.0]


def test_comparing_with_none_falls_back_to_identity():
    t = pe.tensor([1.0])
    assert t != None  # noqa: E711 - the point of the test
    assert t in [None, t]


@pytest.mark.parametrize(
    ("forward", "derivative"),
    [
        (pe.relu, "ActivationGrad"),
        (pe.relu6, "ActivationGrad"),
        (pe.tanh, "ActivationGrad"),
        (lambda t: pe.clip_by_value(t, -0.5, 0.5), "ClipByValueGrad"),
    ],
)
def test_an_activation_or_a_clip_takes_one_kernel_backward(forward, derivative):
    # written in ops, relu's derivative was a compare, a cast and a multiply; clip's two compares, an and, a select
    x, dy = pe.tensor([-1.0, 0.25, 2.0, 7.0]), pe.tensor([1.0, 2.0, 3.0, 4.0])
    kernels = [k.name for k in pe.ENGINE.profile(pe.grad(forward), x, dy=dy).kernels]
    assert kernels[1:] == [derivative], kernels  # the forward op, then its derivative
