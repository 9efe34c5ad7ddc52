"""The wasm backend on threads (set_backend("wasm", threads=n)): the served Pyodide in Node, whose worker_threads run
the page's pool scripts (static/worker/wasm_pool.js, wasm_pool_worker.js; tests/pyodide/run.mjs provides them as the page's
worker does). The conformance suite with every big kernel split over two threads, the threaded kernels against one
thread's bit for bit, backend_info's threads and reasons, a failing worker's fallback, memory over 100 passes."""

import itertools
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from .pyodide import start_node_pyodide
from .test_wasm_backend import ALL_NATIVE, DIFFERENTIAL, FAST, SMALL_CNN, _conv_out, _spec, paddings

ROOT = Path(__file__).resolve().parent.parent
EVERY_KERNEL_THREADED = """
from py_engine.backends.wasm import threads

@contextlib.contextmanager
def every_kernel_threaded():
    saved = threads.MIN_WORK, threads.MIN_INTENSITY
    threads.MIN_WORK = threads.MIN_INTENSITY = 0
    try:
        with all_native():
            yield
    finally:
        threads.MIN_WORK, threads.MIN_INTENSITY = saved
"""


@pytest.fixture(scope="module")
def node():
    pyodide = start_node_pyodide()
    pyodide.run(ALL_NATIVE)
    pyodide.run(EVERY_KERNEL_THREADED)
    pyodide.run(DIFFERENTIAL)
    yield pyodide
    pyodide.close()


def test_the_conformance_suite_passes_with_every_big_kernel_on_two_threads(node):
    report = node.run(
        """
        from py_engine.testing.conformance import all_cases, run_suite
        assert await pe.set_backend("wasm", threads=2)
        before = pe.backend_info()["threaded_calls"]
        with every_kernel_threaded():
            report = await run_suite("wasm")
        info = pe.backend_info()
        {**report, "total": len(all_cases()), "threads": info["threads"], "calls": info["threaded_calls"] - before}
        """
    )
    assert report["failed"] == {}, str(report["failed"])[:5000]
    assert report["passed"] == report["total"] > 1000
    assert report["threads"] == 2 and report["calls"] > 300, report["calls"]


def test_threaded_kernels_give_one_threads_results_bit_for_bit(node):
    """Each thread computes whole output rows with the same code, so the split changes no sum's order."""
    compared = node.run(
        """
        rng = np.random.default_rng(3)
        x = pe.tensor(rng.standard_normal((2, 41, 37, 24), np.float32))
        w, dw = pe.tensor(rng.standard_normal((3, 3, 24, 40), np.float32)), pe.tensor(rng.standard_normal((5, 5, 24, 1), np.float32))
        w1, b = pe.tensor(rng.standard_normal((1, 1, 24, 72), np.float32)), pe.tensor(rng.standard_normal((72,), np.float32))
        a, m = pe.tensor(rng.standard_normal((3, 123, 150), np.float32)), pe.tensor(rng.standard_normal((150, 97), np.float32))
        def outputs():
            return {
                "conv": pe.conv2d(x, w, strides=2, padding="same").numpy(),
                "conv1x1": pe.relu6(pe.conv2d(x, w1, strides=1, padding="valid") + b).numpy(),
                "depthwise": pe.depthwise_conv2d(x, dw, strides=1, padding="same").numpy(),
                "max_pool": pe.max_pool(x, 3, 2, "same").numpy(),
                "avg_pool": pe.avg_pool(x, 2, 2, "valid").numpy(),
                "matmul": pe.matmul(a, m).numpy(),
            }
        await pe.set_backend("wasm", threads=1)
        one = outputs()
        await pe.set_backend("wasm", threads=2)
        calls = pe.backend_info()["threaded_calls"]
        with every_kernel_threaded():  # the pools here are below the size worth splitting
            two = outputs()
        calls = pe.backend_info()["threaded_calls"] - calls
        await pe.set_backend("numpy")
        ref = outputs()
        [calls, {k: [bool(np.array_equal(one[k], two[k])), bool(np.allclose(two[k], ref[k], rtol=1e-4, atol=1e-3))] for k in one}]
        """
    )
    calls, same = compared
    assert calls == 6, "each of the six ops went to the pool"
    assert same == {k: [True, True] for k in same}, same


def test_threaded_gradients_give_one_threads_results_bit_for_bit(node):
    """The input gradients split by images, the filter gradients by taps (convolutions) or channels (depthwise), each
    element summed by one thread in one thread's order: one thread's results, bit for bit, and numpy's."""
    compared = node.run(
        """
        rng = np.random.default_rng(5)
        x = pe.tensor(rng.standard_normal((3, 19, 17, 12), np.float32))
        w = pe.variable(rng.standard_normal((3, 3, 12, 20), np.float32))
        w1 = pe.variable(rng.standard_normal((1, 1, 12, 16), np.float32))
        dw = pe.variable(rng.standard_normal((5, 5, 12, 1), np.float32))
        a, m = pe.tensor(rng.standard_normal((37, 150), np.float32)), pe.variable(rng.standard_normal((150, 29), np.float32))
        # one channel over 2 * 68 * 68 windows: the filter's gradient splits by blocks of rows, the others' by taps
        gray, w3 = pe.tensor(rng.standard_normal((2, 70, 70, 1), np.float32)), pe.variable(rng.standard_normal((3, 3, 1, 8), np.float32))
        def gradients():
            def loss(x):
                conv = pe.conv2d(x, w, strides=2, padding="same")
                wide = pe.conv2d(x, w1, strides=1, padding="valid")
                depth = pe.depthwise_conv2d(x, dw, strides=1, padding="same")
                pooled = pe.max_pool(x, 3, 2, "same")
                return (pe.sum(conv * conv) + pe.sum(pe.sin(wide)) + pe.sum(depth * depth) + pe.sum(pooled * pooled)
                        + pe.sum(pe.matmul(a, m) ** 2) + pe.sum(pe.conv2d(gray, w3, 1, "valid") ** 2))
            grads = pe.grads(loss)(x)[0]
            _, by_variable = pe.variable_grads(lambda: loss(x), [w, w1, dw, m, w3])
            return {"x": grads.numpy(), **{k: g.numpy() for k, g in zip("w w1 dw m w3".split(), by_variable.values())}}
        await pe.set_backend("wasm", threads=1)
        one = gradients()
        await pe.set_backend("wasm", threads=2)
        p, calls = threads.pool, []
        run = p.run
        p.run = lambda name, *args, **kw: calls.append(name) or run(name, *args, **kw)
        with every_kernel_threaded():
            two = gradients()
        del p.run
        await pe.set_backend("numpy")
        ref = gradients()
        [sorted(set(calls)), {k: [bool(np.array_equal(one[k], two[k])), bool(np.allclose(two[k], ref[k], rtol=1e-3, atol=1e-2))] for k in one}]
        """
    )
    calls, same = compared
    assert same == {k: [True, True] for k in same}, same
    assert calls == [
        "conv2d",
        "conv2d_filter_grad_blocks",
        "conv2d_filter_grad_taps",
        "conv2d_input_grad",
        "depthwise",
        "depthwise_filter_grad",
        "depthwise_input_grad",
        "gemm",
        "gemm_narrow_edge",  # the 1x1 convolution's input gradient: 12 columns, a last panel of 4
        "max_pool_grad",
        "pool",
        "sum_rows_strided",  # the blocks' partial sums added up
    ], calls


def test_backend_info_says_how_many_threads_and_why_one(node):
    info = node.run(
        """
        from py_engine.engine import ENGINE
        import js
        ENGINE.forget_backend("wasm")
        await pe.set_backend("wasm")  # the default: Node 20 has no navigator.hardwareConcurrency, so one core
        default = pe.backend_info()
        await pe.set_backend("wasm", threads=2)
        two = pe.backend_info()
        await pe.set_backend("wasm")  # the number chosen stays
        kept = pe.backend_info()["threads"]
        host = js.pyEngineWasmPool
        js.Reflect.deleteProperty(js.globalThis, "pyEngineWasmPool")
        await pe.set_backend("wasm", threads=3)
        hostless = pe.backend_info()
        js.globalThis.pyEngineWasmPool = host
        await pe.set_backend("wasm", threads=1)
        one = pe.backend_info()
        [[d["threads"], d["threads_reason"], d["threads_memory_bytes"]] for d in (default, two, hostless, one)] + [kept]
        """
    )
    default, two, hostless, one, kept = info
    assert default[:2] == [1, "the default on 1 core (navigator.hardwareConcurrency)"], default
    assert two[:2] == [2, None] and two[2] > 4096, two
    assert kept == 2
    assert hostless[:2] == [
        1,
        "the host provides no worker pool (globalThis.pyEngineWasmPool: static/worker/wasm_pool.js)",
    ]
    assert one == [1, "one thread was asked for", 0]


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("wasm", {"threads": 0}, "threads must be a whole number from 1 to 16, got 0"),
        ("wasm", {"threads": "2"}, "threads must be a whole number from 1 to 16, got '2'"),
        ("wasm", {"threads": True}, "threads must be a whole number from 1 to 16, got True"),
        ("numpy", {"threads": 2}, "backend 'numpy' takes no options; got threads"),
    ],
)
def test_a_wrong_thread_count_is_refused_with_what_to_pass(node, name, options, message):
    error = node.run(
        f"""
        try:
            await pe.set_backend({name!r}, **{options!r})
            error = None
        except (ValueError, pe.BackendError) as e:
            error = str(e)
        error
        """
    )
    assert error == message


def test_a_kernel_that_fails_on_the_pool_leaves_one_thread_with_the_reason(node):
    """A trap in a kernel (here: a GEMM told to write past the end of the shared memory) ends the pool; that op and
    every later one run on the calling thread, right."""
    outcome = node.run(
        """
        await pe.set_backend("wasm", threads=2)
        p = threads.pool
        past_the_end = (0, 1, 1, 0, 0x7FFFFFF0, 8, 0, 8, 1, 0, 0, 0)
        first, last = (0, 0, 0, 0, 32, 0, -1, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0)
        ran = p.run("gemm", 64, past_the_end, first, last, multiple=4)
        info = pe.backend_info()
        a, b = np.ones((300, 200), np.float32), np.ones((200, 100), np.float32)
        right = bool(np.array_equal(pe.matmul(a, b).numpy(), a @ b))
        [ran, info["threads"], info["threads_reason"], right, await pe.set_backend("wasm", threads=2) and pe.backend_info()["threads"]]
        """
    )
    ran, threads, reason, right, again = outcome
    assert ran is False and threads == 1 and right
    assert reason == "the pool of workers stopped (a kernel failed in gemm); running on one thread", reason
    assert again == 2, "a new pool starts when asked again"


def test_a_pool_whose_split_differs_from_one_thread_fails_its_self_test_with_the_reason(node):
    """The pool's self-test runs the big kernels and gradients split and on one thread: a split that differs (here:
    a filter gradient whose threaded result is nudged by one ulp) leaves one thread, saying which kernel differed."""
    outcome = node.run(
        """
        from py_engine.backends.wasm import backend
        await pe.set_backend("wasm", threads=1)
        real = backend._threads_cases
        def nudged():
            cases = real()
            filter_grad = cases["Conv2DBackpropFilter"]
            def case():
                got = filter_grad()
                return np.nextafter(got, np.inf) if threads.pool is not None else got
            cases["Conv2DBackpropFilter"] = case
            return cases
        backend._threads_cases = nudged
        try:
            started = await pe.set_backend("wasm", threads=2)
        finally:
            backend._threads_cases = real
        info = pe.backend_info()
        [started, info["threads"], info["threads_reason"], await pe.set_backend("wasm", threads=2) and pe.backend_info()["threads"]]
        """
    )
    started, threads, reason, again = outcome
    assert started is True and threads == 1, "the backend runs, on one thread"
    assert reason == (
        "the threaded kernels' self-test failed: Conv2DBackpropFilter differs from one thread's; running on one thread"
    ), reason
    assert again == 2


# a model whose two convolutions and depthwise convolution split over the threads, and the image it runs on
SPLIT_MODEL = """
def split_model():
    pe.set_seed(0)
    model = pe.Sequential([
        pe.layers.Conv2D(32, 3, padding="same", activation="relu", input_shape=(64, 64, 3)),
        pe.layers.DepthwiseConv2D(3, padding="same", activation="relu"),
        pe.layers.Conv2D(64, 1, activation="relu"),
        pe.layers.MaxPooling2D(2),
        pe.layers.GlobalAveragePooling2D(),
        pe.layers.Dense(10),
    ])
    image = pe.tensor(np.random.default_rng(0).standard_normal((1, 64, 64, 3)).astype(np.float32))
    return model, image
"""


def test_memory_stays_flat_over_100_threaded_forward_passes(node):
    node.run(SPLIT_MODEL)
    counts = node.run(
        """
        await pe.set_backend("wasm", threads=2)
        model, image = split_model()
        seen = []
        for i in range(100):
            model.predict(image).dispose()
            info, memory = pe.backend_info(), pe.memory()
            seen.append([memory.num_tensors, memory.num_bytes, info["threads_memory_bytes"], memory.num_bytes_in_threads,
                         info["threaded_calls"], info["threads_copied_bytes"], info["threads_spared_bytes"]])
        kept = [seen[-1][3], sum(w.size * 4 for layer in model.layers[:3] for w in layer.weights)]
        model.dispose()
        [seen, kept, pe.memory().num_bytes_in_threads]
        """
    )
    counts, (kept, conv_weights), after = counts
    assert {tuple(c[:4]) for c in counts[1:]} == {tuple(counts[1][:4])}, counts[:3]
    per_pass = {b[4] - a[4] for a, b in itertools.pairwise(counts)}
    # the two convolutions, and the depthwise convolution, whose input (the first's output) is in the shared memory
    # already; the pool does too little per byte copied (MIN_INTENSITY)
    assert per_pass == {3}, f"each pass splits its two convolutions and the depthwise one over the threads: {per_pass}"
    depthwise_panels = 9 * 32 * 4  # its 3x3 taps of 32 channels as the GEMM's panels (kernels/nn.c)
    assert kept == conv_weights + depthwise_panels > depthwise_panels, (
        "the weights and biases of those three, and the depthwise filter's panels, are kept in the shared memory, once"
    )
    copied = {b[5] - a[5] for a, b in itertools.pairwise(counts)}
    spared = {b[6] - a[6] for a, b in itertools.pairwise(counts)}
    image, first_output = 64 * 64 * 3 * 4, 64 * 64 * 32 * 4
    # each pass copies the image and two shape blocks (13 int32) in and the three outputs out; the weights, and the
    # inputs of the depthwise convolution and of the last one (the outputs of the ops before them) are there already
    assert copied == {image + 2 * 13 * 4 + first_output * 2 + 64 * 64 * 64 * 4}, copied
    assert spared == {conv_weights + depthwise_panels + first_output * 2}, spared
    assert after == 0, "and freed with their tensors"


def test_fit_on_two_threads_gives_one_threads_losses_with_flat_memory(node):
    """A CNN's whole training step (forward, gradients) splits over the threads: the same loss history as on one
    thread, bit for bit; tensors, bytes, the weights kept in the shared memory and the shared memory's size stay flat
    from epoch to epoch, and the kept weights go with the model."""
    node.run(SMALL_CNN)
    runs = node.run(
        """
        async def train(n):
            await pe.set_backend("wasm", threads=n)
            x, y, model = small_cnn()
            seen = []
            def count(epoch, logs):
                memory, info = pe.memory(), pe.backend_info()
                seen.append([memory.num_tensors, memory.num_bytes, memory.num_bytes_in_threads,
                             info["threads_memory_bytes"]])
            calls = pe.backend_info()["threaded_calls"]
            with every_kernel_threaded():
                history = model.fit(x, y, epochs=8, batch_size=16, shuffle=False, verbose=0,
                                    callbacks=[pe.callbacks.LambdaCallback(on_epoch_end=count)])
            calls = pe.backend_info()["threaded_calls"] - calls
            model.dispose()
            return [history.history["loss"], seen, calls, pe.memory().num_bytes_in_threads]
        [await train(1), await train(2)]
        """
    )
    (want, _, _, _), (losses, seen, calls, left) = runs
    assert losses == want, f"two threads {losses} against one {want}"
    assert losses[-1] < 0.5 * losses[0], losses
    assert calls >= 8 * 4 * 6, f"each step's convolutions, pool, product and their gradients went to the pool: {calls}"
    assert {tuple(s) for s in seen[1:]} == {tuple(seen[1])}, seen
    assert left == 0, "the kept weights went with the model"


# ---- differential tests: two threads against one, bit for bit, on random shapes (one thread against numpy and webgpu:
# tests/test_wasm_backend.py) -------------------------------------------------------------------------------------


def _same_on_two_threads(node, spec):
    one, two, calls = node.run(f"""
        await pe.set_backend("wasm", threads=1)
        with all_native():
            one = evaluate({spec!r})
        await pe.set_backend("wasm", threads=2)
        before = pe.backend_info()["threaded_calls"]
        with every_kernel_threaded():
            two = evaluate({spec!r})
        [one, two, pe.backend_info()["threaded_calls"] - before]
        """)
    assert calls > 0, "the op went to the pool"
    for i, (a, b) in enumerate(zip(one, two, strict=True)):
        assert a == b, f"{spec['op']} {spec['kwargs']} output {i}: two threads differ from one"


@FAST
@given(
    n=st.integers(1, 3), h=st.integers(1, 13), w=st.integers(1, 13), c=st.integers(1, 9), out=st.integers(1, 19),
    k=st.sampled_from([1, 3, 5]), strides=st.sampled_from([1, 2, (2, 1)]), padding=paddings,
    activation=st.sampled_from(["linear", "relu6"]), seed=st.integers(0, 2**16),
)  # fmt: skip
# the filter's gradient split by its blocks of rows (kernels/nn.c conv2d_filter_grad_blocks): the small CNN's first
# layer (one channel, windows read in place) over 2 blocks, the last short; a 5x5 filter's padded border's patch rows
@example(n=11, h=28, w=28, c=1, out=8, k=3, strides=1, padding="valid", activation="relu6", seed=0)
@example(n=3, h=13, w=13, c=9, out=5, k=5, strides=1, padding="same", activation="linear", seed=1)
def test_conv2d_and_its_gradients_on_two_threads_are_one_threads(node, n, h, w, c, out, k, strides, padding,
                                                                  activation, seed):  # fmt: skip
    shape = _conv_out(np.empty((n, h, w, c)), np.empty((k, k)), strides, padding, 1, out)
    if min(shape) < 1:
        return
    kwargs = {"activation": activation, "strides": strides, "padding": padding}
    _same_on_two_threads(
        node, _spec("fused_conv2d", seed, [(n, h, w, c), (k, k, c, out), (out,)], kwargs, lambda *_: shape)
    )


@FAST
@given(
    n=st.integers(1, 3), h=st.integers(1, 13), w=st.integers(1, 13), c=st.integers(1, 19), k=st.sampled_from([3, 5]),
    strides=st.sampled_from([1, 2]), padding=paddings, seed=st.integers(0, 2**16),
)  # fmt: skip
def test_depthwise_conv2d_and_its_gradients_on_two_threads_are_one_threads(node, n, h, w, c, k, strides, padding, seed):
    shape = _conv_out(np.empty((n, h, w, c)), np.empty((k, k)), strides, padding, 1, c)
    if min(shape) < 1:
        return
    kwargs = {"activation": "relu", "strides": strides, "padding": padding}
    spec = _spec("fused_depthwise_conv2d", seed, [(n, h, w, c), (k, k, c, 1), (c,)], kwargs, lambda *_: shape)
    _same_on_two_threads(node, spec)


@FAST
@given(
    batch=st.sampled_from([(), (3,)]), m=st.integers(1, 37), k=st.integers(1, 41), n=st.integers(1, 37),
    transpose_a=st.booleans(), transpose_b=st.booleans(), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_matmul_and_its_gradients_on_two_threads_are_one_threads(node, batch, m, k, n, transpose_a, transpose_b, seed):
    transpose_a = (
        transpose_a and not batch
    )  # a batch against one matrix, or a transposed matrix: the products that split
    a = (*batch, k, m) if transpose_a else (*batch, m, k)
    b = (n, k) if transpose_b else (k, n)
    kwargs = {"transpose_a": transpose_a, "transpose_b": transpose_b}
    _same_on_two_threads(node, _spec("matmul", seed, [a, b], kwargs, lambda *_: (*batch, m, n)))


@FAST
@given(
    op=st.sampled_from(["max_pool", "avg_pool"]), n=st.integers(2, 3), h=st.integers(2, 13), w=st.integers(2, 13),
    c=st.integers(1, 9), size=st.sampled_from([2, 3, (3, 2)]), strides=st.sampled_from([1, 2, (1, 3)]),
    padding=st.sampled_from(["same", "valid"]), seed=st.integers(0, 2**16),
)  # fmt: skip
# an image narrower than the window: no output's window lies inside the width (the 3x3 path read past the row)
@example(op="max_pool", n=2, h=5, w=2, c=8, size=3, strides=(1, 3), padding="same", seed=0)
# the gradient's zeroed dx, placed after 8 bytes of dy and 72 of x, rounded up over the forward's output y (still in
# the arena, read in place): y's first value zeroed, the first image's gradient lost
@example(op="max_pool", n=2, h=3, w=3, c=1, size=2, strides=2, padding="valid", seed=0)
def test_pooling_and_its_gradients_on_two_threads_are_one_threads(node, op, n, h, w, c, size, strides, padding, seed):
    kh, kw = (size, size) if isinstance(size, int) else size
    sh, sw = (strides, strides) if isinstance(strides, int) else strides
    if padding == "valid" and (h < kh or w < kw):
        return
    shape = (n, -(-h // sh), -(-w // sw), c) if padding == "same" else (n, (h - kh) // sh + 1, (w - kw) // sw + 1, c)
    kwargs = {"filter_size": size, "strides": strides, "padding": padding}
    _same_on_two_threads(node, _spec(op, seed, [(n, h, w, c)], kwargs, lambda *_: shape))


@pytest.mark.parametrize(("cores", "threads"), [(1, 1), (2, 1), (3, 1), (4, 4), (8, 4), (16, 4)])
def test_the_default_is_one_thread_per_core_from_four_cores_up_at_most_four(monkeypatch, cores, threads):
    from py_engine.backends.wasm import backend

    monkeypatch.setattr(backend._threads, "cores", lambda: cores)
    assert backend.default_threads() == threads


def test_the_pool_script_and_python_agree_on_the_layout():
    """static/worker/wasm_pool.js states the shared memory's layout and limits; Python and the module's build use
    them."""
    from py_engine.backends.wasm import backend, threads

    from .test_wasm_build import wasm_kernels

    source = (ROOT / "static" / "worker" / "wasm_pool.js").read_text()
    layout = {name: int(value) for name, value in re.findall(r"^  (\w+): (\d+),", source, re.M)}
    assert layout["MAX_PAGES"] == wasm_kernels.SHARED_MAX_PAGES, (
        "the memory's maximum must be the module's declared one"
    )
    assert layout["ARENA"] == threads.ARENA
    assert layout["MAX_THREADS"] == backend.MAX_THREADS
    for name in ("CALL", "FN", "ARGC", "FIRST", "LAST", "SLOTS", "SLOT", "BOUNDS"):
        assert layout[name] == getattr(threads, name), (
            f"a call's image (Pool.run) writes {name} where the pool reads it"
        )
    assert layout["SLOTS"] + layout["MAX_THREADS"] * layout["SLOT"] <= layout["BOUNDS"], "slots before the bounds"
    assert layout["BOUNDS"] < layout["ARENA"] // 4, "the bounds before the arena"


@pytest.mark.parametrize("workers", [2, 3, 16])
def test_a_calls_chunks_shrink_to_the_end_and_fit_the_control_block(workers):
    """Pool.bounds: every row in one chunk, big chunks first and small ones last (each thread finishes close to the
    others), each a multiple of the kernel's rows (the GEMM's 4-row tiles, 8-column panels); at most as many as the
    control block holds."""
    from py_engine.backends.wasm import threads

    pool = object.__new__(threads.Pool)  # bounds() needs only the thread count
    pool.threads = workers
    for rows, multiple in itertools.product([1, 7, 49, 196, 1000, 12544, 1 << 20], [1, 4, 8]):
        bounds = pool.bounds(rows, multiple)
        sizes = [b - a for a, b in itertools.pairwise(bounds)]
        assert bounds[0] == 0 and bounds[-1] == rows and min(sizes) > 0, (rows, multiple, bounds)
        assert all(b % multiple == 0 for b in bounds[:-1]), (rows, multiple, bounds)
        assert sizes[:-1] == sorted(sizes[:-1], reverse=True), (rows, multiple, sizes)
        assert sizes[0] <= max(pool.chunk(rows, multiple), rows / (threads.GUIDED * workers) + multiple), sizes
        assert sizes[-1] <= pool.chunk(rows, multiple), sizes  # the smallest: 1 / (16 threads) of the rows
        assert len(sizes) <= threads.ARENA // 4 - threads.BOUNDS - 1, (rows, multiple, len(sizes))
    step = -(-12 // workers)  # one chunk a thread (a filter gradient's taps: each chunk packs dy again)
    assert pool.bounds(12, per_thread=1) == [*range(0, 12, step), 12]
