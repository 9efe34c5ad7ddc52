"""The memory model: tidy, scopes across await, keep, dispose, variables, views, counters, debugging."""

import asyncio

import numpy as np
import pytest

import py_engine as pe

pytestmark = pytest.mark.usefixtures("each_backend")  # every behaviour holds on numpy and on webgpu


def counts():
    m = pe.memory()
    return m.num_tensors, m.num_data_buffers, m.num_bytes


# ---- tidy ---------------------------------------------------------------------------------------


def test_tidy_releases_everything_but_the_result():
    x = pe.tensor([1.0, 2.0, 3.0])
    before = counts()
    y = pe.tidy(lambda: (x * 2 + 1).sum())
    assert y.item() == 15.0
    assert counts() == (before[0] + 1, before[1] + 1, before[2] + 4)
    assert not x.is_disposed


def test_tidy_keeps_tensors_returned_in_nested_structures():
    def f():
        a, b, c = pe.ones((2,)), pe.zeros((3,)), pe.fill((1,), 7.0)
        pe.ones((5,))  # dropped
        return {"pair": [a, (b, "text")], "c": c, "n": 3}

    out = pe.tidy(f)
    assert pe.memory().num_tensors == 3
    assert out["n"] == 3 and out["pair"][1][1] == "text"
    assert out["c"].tolist() == [7.0]


def test_tidy_passes_arguments():
    assert pe.tidy(lambda a, b: a + b, 2, b=3) == 5


def test_nested_tidy_moves_the_inner_result_to_the_outer_scope():
    def outer():
        a = pe.tensor([1.0, 2.0])
        inner = pe.tidy(lambda: pe.square(a))  # the square survives the inner tidy ...
        assert not inner.is_disposed and not a.is_disposed
        assert pe.memory().num_tensors == 2
        return None

    pe.tidy(outer)
    assert pe.memory().num_tensors == 0  # ... and the outer tidy releases it


def test_tidy_releases_tensors_when_the_function_raises():
    def boom():
        pe.ones((4,))
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        pe.tidy(boom)
    assert counts() == (0, 0, 0)


def test_tidy_rejects_an_async_function_and_points_to_scope():
    async def f():
        return pe.ones((1,))

    with pytest.raises(TypeError, match=r"pe\.scope\(\)"):
        pe.tidy(f)
    assert counts() == (0, 0, 0)


def test_tidy_rejects_a_function_that_returns_an_awaitable():
    async def work():
        return 1

    with pytest.raises(TypeError, match="synchronous"):
        pe.tidy(lambda: work())  # the coroutine is closed, so no "never awaited" warning


def test_keep_survives_tidy():
    def f():
        pe.keep(pe.ones((2,)))
        pe.zeros((2,))
        return None

    pe.tidy(f)
    assert pe.memory().num_tensors == 1
    pe.tidy(lambda: None)
    assert pe.memory().num_tensors == 1


def test_a_tensor_made_before_tidy_is_not_released_by_it():
    x = pe.ones((3,))
    pe.tidy(lambda: x + 1)
    assert not x.is_disposed


# ---- scopes -------------------------------------------------------------------------------------


def test_scope_context_manager_releases_and_exports():
    with pe.scope() as s:
        a = pe.ones((2, 2))
        b = s.export(a * 3)
    assert a.is_disposed and not b.is_disposed
    assert pe.memory().num_tensors == 1


def test_scope_releases_on_exception():
    with pytest.raises(RuntimeError), pe.scope():
        pe.ones((2,))
        raise RuntimeError
    assert counts() == (0, 0, 0)


def test_nested_scopes_move_exports_one_level_up():
    with pe.scope():
        with pe.scope() as inner:
            t = inner.export(pe.ones((1,)))
        assert not t.is_disposed
    assert t.is_disposed


def test_start_and_end_scope_like_tensorflow_js():
    pe.start_scope()
    a = pe.ones((2,))
    b = pe.zeros((2,))
    pe.end_scope(b)
    assert a.is_disposed and not b.is_disposed
    with pytest.raises(RuntimeError, match="start_scope"):
        pe.end_scope()


def test_scope_works_across_await():
    async def main():
        with pe.scope() as s:
            a = pe.ones((4,))
            await asyncio.sleep(0)
            total = s.export(a.sum())
            await asyncio.sleep(0)
            assert (await total.data()).tolist() == [4.0]
        return total

    total = asyncio.run(main())
    assert pe.memory().num_tensors == 1 and total.item() == 4.0


def test_concurrent_tasks_release_only_their_own_tensors():
    """Two asyncio tasks interleave inside their own scopes; ending one must not touch the other's tensors."""
    made = {"a": [], "b": []}

    async def task(name, linger):
        with pe.scope():
            made[name].append(pe.fill((3,), 1.0))
            await asyncio.sleep(0)  # the other task runs and opens its scope here
            made[name] += [made[name][0] + i for i in range(3)]
            await asyncio.sleep(linger)

    async def main():
        ta = asyncio.create_task(task("a", 0))
        tb = asyncio.create_task(task("b", 0.05))
        await ta  # a's scope has closed while b is still inside its own
        assert all(t.is_disposed for t in made["a"])
        assert not any(t.is_disposed for t in made["b"]), "task a's scope released task b's tensors"
        await tb

    asyncio.run(main())
    assert all(t.is_disposed for t in made["b"])
    assert counts() == (0, 0, 0)


def test_a_tensor_created_outside_any_scope_is_not_tracked():
    x = pe.ones((2,))
    with pe.scope():
        pass
    assert not x.is_disposed


# ---- dispose and use after dispose --------------------------------------------------------------


def test_dispose_nested_structures_and_is_idempotent():
    a, b = pe.ones((1,)), pe.ones((2,))
    pe.dispose({"x": [a, (b,)]})
    pe.dispose(a)
    a.dispose()
    assert counts() == (0, 0, 0)


def test_use_after_dispose_names_the_tensor():
    x = pe.ones((2, 3))
    x.dispose()
    with pytest.raises(pe.DisposedTensorError, match=rf"Tensor#{x.id} \(shape \(2, 3\), float32\) was disposed"):
        x + 1
    with pytest.raises(pe.DisposedTensorError, match="set_debug"):
        x.numpy()
    assert "disposed" in repr(x)


def test_debug_mode_says_where_a_tensor_was_created_and_disposed():
    pe.set_debug(True)
    x = pe.ones((2,))  # created here
    line_created = test_debug_mode_says_where_a_tensor_was_created_and_disposed.__code__.co_firstlineno + 2
    x.dispose()
    with pytest.raises(pe.DisposedTensorError) as err:
        x.sum()
    message = str(err.value)
    assert f"test_memory.py:{line_created}" in message
    assert f"disposed at {__file__}:{line_created + 2}" in message


# ---- variables ----------------------------------------------------------------------------------


def test_variables_outlive_tidy_and_scopes():
    def make():
        return pe.variable(pe.ones((2,)) * 5)

    v = pe.tidy(make)
    with pe.scope():
        w = pe.variable(pe.zeros((3,)), name="w")
    assert not v.is_disposed and not w.is_disposed
    assert v.tolist() == [5.0, 5.0]
    assert pe.memory().num_tensors == 2


def test_variable_shares_its_initial_value_buffer():
    x = pe.tensor([1.0, 2.0])
    v = pe.variable(x)
    assert pe.memory().num_data_buffers == 1
    x.dispose()
    assert v.tolist() == [1.0, 2.0] and pe.memory().num_data_buffers == 1


def test_variable_assign_names_trainable_and_dispose_variables():
    v = pe.variable([1.0, 2.0], name="weights", trainable=False)
    assert v.name == "weights" and not v.trainable
    new = pe.tensor([3.0, 4.0])
    v.assign(new)
    assert counts()[:2] == (2, 1)  # the variable now shares new's buffer; the old one is freed
    new.dispose()
    v.assign([5.0, 6.0])
    assert v.tolist() == [5.0, 6.0]
    assert counts()[:2] == (1, 1)
    with pytest.raises(pe.ShapeError, match=r"weights has shape \(2,\), the new value has shape \(3,\)"):
        v.assign([1.0, 2.0, 3.0])
    ints = pe.tensor([1, 2])
    with pytest.raises(pe.DTypeError, match="weights is float32, the new value is int32"):
        v.assign(ints)
    ints.dispose()
    assert counts()[:2] == (1, 1), "a failed assign lost or leaked memory"
    with pytest.raises(ValueError, match="'weights' already exists"):
        pe.variable([0.0], name="weights")
    a, b = pe.variable([0.0]), pe.variable([0.0])
    assert len({a.name, b.name, "weights"}) == 3
    pe.dispose_variables()
    assert counts() == (0, 0, 0)
    assert v.is_disposed


# ---- views --------------------------------------------------------------------------------------


def test_views_share_one_refcounted_buffer():
    x = pe.tensor(np.arange(6, dtype=np.float32))
    views = [x.reshape((2, 3)), pe.expand_dims(x, 0), x.reshape((1, 6)).squeeze(), x.reshape((3, 2)).flatten()]
    assert [v.tolist() for v in views[2:]] == [list(range(6))] * 2
    m = pe.memory()
    assert m.num_tensors == 1 + 4 + 2  # the squeeze and flatten sources count too
    assert m.num_data_buffers == 1 and m.num_bytes == 24


def test_a_view_outlives_its_source():
    x = pe.tensor([[1.0, 2.0], [3.0, 4.0]])
    y = pe.tidy(lambda: x.reshape((4,)))
    x.dispose()
    assert y.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert counts() == (1, 1, 16)
    y.dispose()
    assert counts() == (0, 0, 0)


def test_tidy_returning_a_view_of_an_intermediate_keeps_the_data():
    y = pe.tidy(lambda: (pe.ones((2, 2)) * 3).reshape((4,)))
    assert y.tolist() == [3.0] * 4 and counts() == (1, 1, 16)


# ---- memory(), profile(), leaks() ---------------------------------------------------------------


def test_memory_reports_all_fields(each_backend):
    x = pe.ones((10,))
    m = pe.memory()
    on_gpu = 40 if each_backend == "webgpu" else 0
    assert (m.num_tensors, m.num_data_buffers, m.num_bytes, m.num_bytes_in_gpu) == (1, 1, 40, on_gpu)
    assert m.num_bytes_in_gpu_allocated >= on_gpu
    assert m.unreliable is False and m.reasons == []
    assert set(m.to_dict()) == {
        "num_tensors",
        "num_data_buffers",
        "num_bytes",
        "num_bytes_in_gpu",
        "num_bytes_in_gpu_allocated",
        "unreliable",
        "reasons",
        "num_bytes_in_threads",
        "num_bytes_in_programs",
    }
    assert m.num_bytes_in_threads == m.num_bytes_in_programs == 0  # the wasm backend's (tests/test_wasm_capture.py)
    x.dispose()


def test_bool_tensors_take_one_byte_per_element_on_numpy_four_on_the_gpu(each_backend):
    pe.fill((8,), True, "bool")
    assert pe.memory().num_bytes == (32 if each_backend == "webgpu" else 8)  # WGSL storage has no 1-byte type


def test_profile_reports_new_tensors_bytes_peak_and_kernels():
    x = pe.ones((256,))

    def f():
        return pe.tidy(lambda: (x * 2 + 1).sum())

    info = pe.profile(f)
    assert info.new_tensors == 1 and info.new_bytes == 4
    assert info.peak_bytes == 3 * 1024 + 4  # x, x*2, the scalar 1 and x*2+1 were alive together
    assert [k.name for k in info.kernels] == ["Mul", "Add", "Sum"]
    assert info.kernels[0].input_shapes == [(256,), ()] and info.kernels[0].output_shapes == [(256,)]
    assert info.kernels[0].bytes_added == 1024 and info.kernels[0].time_ms >= 0
    assert info.result.item() == 768.0


def test_leaks_groups_live_tensors_by_creation_site():
    pe.set_debug(True)
    for _ in range(3):
        pe.ones((2,)) + 1  # leaks a tensor on this line each time
    pe.variable([1.0])
    sites = pe.leaks()
    assert len(sites) == 1, "the variable is not a leak"
    assert sites[0].count == 6 and sites[0].site.endswith(f"test_memory.py:{_line_of('leaks a tensor')}")
    assert sites[0].num_bytes == 48 and sites[0].shapes == [(2,)]
    assert sum(s.count for s in pe.leaks(include_variables=True)) == 7


def test_leaks_without_debug_still_counts():
    pe.ones((2,))
    (site,) = pe.leaks()
    assert site.count == 1 and "set_debug" in site.site


def test_tensors_a_program_loads_for_itself_get_the_site_it_names():
    before = set(pe.ENGINE.live)
    weights = [pe.ones((3,)), pe.zeros((2, 2))]
    pe.ENGINE.name_site(set(pe.ENGINE.live) - before, "the page's classifier (models/x/model.json)")
    pe.ones((1,))
    sites = {s.site: s.count for s in pe.leaks()}
    assert sites["the page's classifier (models/x/model.json)"] == 2 and len(sites) == 2, sites
    pe.dispose(weights)


def _line_of(text):
    with open(__file__) as source:
        for number, line in enumerate(source, 1):
            if text in line and "_line_of" not in line:
                return number
    raise AssertionError(text)


# ---- fit-style loops: the tensor count is the leak detector ------------------------------------


def test_training_step_inside_tidy_keeps_the_tensor_count_flat():
    w = pe.variable(pe.zeros((3, 1)))
    xs = pe.tensor(np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32))
    ys = xs @ pe.tensor([[1.0], [2.0], [3.0]])

    def step():
        loss, grads = pe.variable_grads(lambda: pe.mean(pe.square(xs @ w - ys)))
        w.assign(w - grads[w.name] * 0.1)
        return loss

    counts_per_step = []
    for _ in range(30):
        loss = pe.tidy(step)
        counts_per_step.append(pe.memory().num_tensors)
        loss.dispose()
    assert len(set(counts_per_step)) == 1
    assert loss.is_disposed


def test_the_same_loop_without_tidy_leaks_a_fixed_amount_per_step():
    x = pe.ones((4,))
    growth = []
    for _ in range(5):
        before = pe.memory().num_tensors
        (x * 2 + 1).sum()
        growth.append(pe.memory().num_tensors - before)
    assert growth == [3] * 5
