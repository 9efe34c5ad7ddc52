"""The memory model in the page, on webgpu, on the numpy fallback (a browser without WebGPU) and on wasm.

Counts come from the engine (num_tensors, num_data_buffers, num_bytes_in_gpu) and must return
exactly to the baseline after tidy and scopes, also across awaits and concurrent asyncio tasks.
"""

COUNTS = ("num_tensors", "num_data_buffers", "num_bytes", "num_bytes_in_gpu")


def counts(memory):
    return {k: memory[k] for k in COUNTS}


def test_tidy_scope_and_scope_across_await_return_to_the_baseline(any_page):
    got = any_page.run(
        """
        def counts():
            m = pe.memory()
            return [m.num_tensors, m.num_data_buffers, m.num_bytes, m.num_bytes_in_gpu]

        x = pe.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
        base = counts()
        pe.tidy(lambda: [x * 2.0, (x + 1.0).exp(), x.sum(axis=1)] and None)
        after_tidy = counts()
        kept = pe.tidy(lambda: (x * x).sum())
        after_kept = counts()
        kept.dispose()
        with pe.scope():
            a = x * 3.0
            b = a.reshape((12,)).sum()
            inside_scope = counts()
        after_scope = counts()
        with pe.scope():
            a = x - 1.0
            first = await a.data()
            b = a.abs()
            second = await b.data()
            inside_async = counts()
        after_async = counts()
        {"base": base, "after_tidy": after_tidy, "after_kept": after_kept, "inside_scope": inside_scope,
         "after_scope": after_scope, "inside_async": inside_async, "after_async": after_async,
         "values": [float(first.sum()), float(second.sum())], "disposed": [a.is_disposed, b.is_disposed],
         "backend": pe.get_backend()}
        """
    )
    assert got["backend"] == any_page.backend
    base = got["base"]
    gpu = 48 if got["backend"] == "webgpu" else 0
    assert base == [1, 1, 48, gpu]
    assert got["after_tidy"] == base
    assert got["after_kept"] == [2, 2, 52, gpu + (4 if gpu else 0)]  # the scalar result survives tidy
    assert got["inside_scope"][0] > base[0] and got["inside_async"][0] > base[0]
    assert got["after_scope"] == base and got["after_async"] == base
    assert got["values"] == [54.0, 56.0] and got["disposed"] == [True, True]
    assert counts(any_page.memory()) == dict(zip(COUNTS, base))  # memory() of the page agrees


def test_concurrent_tasks_with_scopes_do_not_free_each_others_tensors(any_page):
    got = any_page.run(
        """
        import asyncio

        x = pe.tensor([1.0, 2.0, 3.0])
        base = pe.memory().num_tensors
        a_made, b_done = asyncio.Event(), asyncio.Event()
        seen = {}

        async def task_a():
            with pe.scope():
                mine = x * 10.0
                a_made.set()
                await b_done.wait()  # task b opens and closes its scope in between
                seen["a_alive_after_b"] = not mine.is_disposed
                seen["a_values"] = (await mine.data()).tolist()
                seen["count_in_a"] = pe.memory().num_tensors
            return mine

        async def task_b():
            await a_made.wait()
            with pe.scope():
                theirs = x + 100.0
                seen["b_values"] = (await theirs.data()).tolist()
                seen["count_in_b"] = pe.memory().num_tensors
            seen["b_disposed"] = theirs.is_disposed
            seen["count_after_b"] = pe.memory().num_tensors
            b_done.set()

        mine, _ = await asyncio.gather(task_a(), task_b())
        seen["a_disposed_at_its_end"] = mine.is_disposed
        seen["base"], seen["final"] = base, pe.memory().num_tensors
        seen
        """
    )
    assert got["a_alive_after_b"] and got["a_values"] == [10.0, 20.0, 30.0]
    assert got["b_values"] == [101.0, 102.0, 103.0] and got["b_disposed"]
    assert got["count_in_b"] == got["base"] + 2  # a's tensor and b's own
    assert got["count_after_b"] == got["base"] + 1  # b freed only its own
    assert got["count_in_a"] == got["base"] + 1
    assert got["a_disposed_at_its_end"] and got["final"] == got["base"]


def test_300_iterations_inside_tidy_leak_nothing_and_200_without_tidy_leak_exactly(any_page):
    got = any_page.run(
        """
        def snapshot():
            m = pe.memory()
            return {"tensors": m.num_tensors, "buffers": m.num_data_buffers, "bytes": m.num_bytes,
                    "gpu": m.num_bytes_in_gpu, "pool": m.num_bytes_in_gpu_allocated}

        x = pe.tensor(np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8))
        w = pe.tensor(np.eye(8, dtype=np.float32))

        def step():
            h = pe.relu(x @ w + 0.1)
            return (h * h).sum(axis=1).mean()

        base = snapshot()
        for _ in range(100):  # freed buffers return to the pool at each submit: a cycle of submits fills it
            pe.tidy(step).dispose()
        after_hundred = snapshot()
        for _ in range(200):
            pe.tidy(step).dispose()
        after_tidy = snapshot()
        with pe.scope():  # only to clean up afterwards: inside it nothing is tidied
            step()
            after_one = snapshot()
            for _ in range(199):
                step()
            after_leaks = snapshot()
        value = pe.tidy(step)
        {"base": base, "after_hundred": after_hundred, "after_tidy": after_tidy, "after_one": after_one,
         "after_leaks": after_leaks, "end": snapshot(), "value": (await value.data()).tolist()}
        """,
        timeout_s=300,
    )
    base, after_tidy = got["base"], got["after_tidy"]
    for key in ("tensors", "buffers", "bytes", "gpu"):
        assert after_tidy[key] == base[key], key
    assert after_tidy["pool"] == got["after_hundred"]["pool"]  # the GPU pool reuses its buffers
    leak = {k: got["after_one"][k] - base[k] for k in ("tensors", "buffers", "bytes", "gpu")}
    assert leak["tensors"] > 0 and leak["bytes"] > 0
    for key, per_iteration in leak.items():
        assert got["after_leaks"][key] - base[key] == 200 * per_iteration, key
    assert (leak["gpu"] > 0) == (any_page.backend == "webgpu")
    assert got["end"]["tensors"] == base["tensors"] + 1  # the scope released all 200 iterations
