"""pe.capture on the wasm backend (backends/wasm/capture.py), in the served Pyodide in Node: a replay gives what the
function computes uncaptured, bit for bit (the same kernels on the same arrays), for a layers model's predict, and
graph models' execute and fit with Adam and dropout on one thread and two; the steps it records (native calls or
kernel functions) and the packing it never repeats for a weight; flat memory over 100 replays and what dispose gives
back; variables updated in place; inputs of another array shape; the errors, and the programs recorded again (a
variable reassigned or disposed, a backend switch, a new pool of threads). On two threads: the split steps (the
pool's calls replayed), the bytes a replay copies into and out of the pool, its shared blocks flat and given back,
a graph model's program about one thread's in size (blocks shared by lifetime, the weights' kept blocks read, not
copied), fit with every kernel split, a training step's whole chain of big kernels in the pool (its copies a step
counted), sums split by columns, and a pool lost during a replay."""

import numpy as np
import pytest

from .graph_model_cases import model_inputs
from .pyodide import start_node_pyodide
from .test_wasm_backend import ALL_NATIVE
from .test_wasm_threads import SPLIT_MODEL as THREADS_SPLIT_MODEL

# What the function computes uncaptured: the same call with the backend's capturing turned off (pe.capture then runs
# fn as it is, as on numpy).
UNCAPTURED = """
import contextlib
from py_engine.engine import ENGINE

@contextlib.contextmanager
def uncaptured():
    backend = ENGINE.active()
    backend.captures = False
    try:
        yield
    finally:
        del backend.captures

def capture_stats():
    return {k: v for k, v in pe.stats().items() if k.startswith("capture")}

def capture_error(fn):
    # [the CaptureError's message (None: none), the programs left] of pe.capture(fn) called on a tensor of 4 ones
    x = pe.tensor(np.ones((4,), np.float32))
    captured = pe.capture(fn)
    try:
        captured(x)
        error = None
    except pe.CaptureError as e:
        error = str(e)
    stats = capture_stats()
    captured.dispose(); x.dispose()
    return [error, stats["capture_programs"]]

def packs_per_replay(captured):
    # how many times a replay of captured's one program packs a GEMM's panels
    from py_engine.backends.wasm import native
    (recorded,) = captured._programs.values()
    return sum(call is native.exports.pack_b for step in recorded.program.steps if step[0] for call, _ in step[1])
"""

# a CNN whose step has every kind of kernel: native convolutions and products, numpy's (softmax, dropout's mask),
# the optimizer's fused update, and (with all_native) every size on the module
CNN = """
def cnn(optimizer, dropout=0.25):
    pe.set_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((70, 12, 12, 3)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[x.mean(axis=(1, 2)).argmax(axis=1)]
    model = pe.Sequential([
        pe.layers.Conv2D(8, 3, activation="relu", input_shape=(12, 12, 3)),
        pe.layers.DepthwiseConv2D(3, padding="same", activation="relu"),
        pe.layers.MaxPooling2D(2),
        pe.layers.Flatten(),
        pe.layers.Dropout(dropout),
        pe.layers.Dense(16, activation="relu"),
        pe.layers.Dense(3, activation="softmax"),
    ])
    model.compile(optimizer=optimizer, loss="categorical_crossentropy")
    return x, y, model
"""


@pytest.fixture(scope="module")
def node():
    pyodide = start_node_pyodide()
    pyodide.run(ALL_NATIVE)
    pyodide.run(UNCAPTURED)
    pyodide.run(CNN)
    pyodide.run('assert await pe.set_backend("wasm", threads=1)')
    yield pyodide
    pyodide.close()


def test_the_recording_and_its_program_implement_the_capture_protocols(node):
    problems = node.run(
        """
        import inspect
        from py_engine.backend_protocols import CaptureRecording, Recorder, ReplayProgram

        def problems(protocol, obj):
            found = []
            for name, value in vars(protocol).items():
                if inspect.isfunction(value) and not name.startswith("_"):
                    member = getattr(obj, name, None)
                    want = list(inspect.signature(value).parameters)[1:]
                    if member is None or list(inspect.signature(member).parameters) != want:
                        found.append(name)
            return found + [name for name in getattr(protocol, "__annotations__", {}) if not hasattr(obj, name)]

        x = pe.tensor(np.ones((4, 4), np.float32))
        captured = pe.capture(lambda t: t * 2.0 + 1.0)
        pe.dispose(captured(x))
        (recorded,) = captured._programs.values()
        recording = ENGINE.active().record("f", [x._buf.handle])
        found = [problems(CaptureRecording, recording), problems(ReplayProgram, recorded.program)]
        captured.dispose(); x.dispose()
        found
        """
    )
    assert problems == [[], []]


def test_a_layers_models_predict_replays_bit_for_bit_with_flat_memory_and_dispose_frees_it(node):
    result = node.run(
        """
        x, _, model = cnn(pe.optimizers.SGD(0.1))
        batch = pe.tensor(x[:8])
        with all_native():
            model.predict(batch).dispose()  # the model's inference plan, built on first use
            with uncaptured():
                want = model.predict(batch).numpy()
            forward = pe.capture(lambda t: model.predict(t))
            got = [forward(batch) for _ in range(3)]  # a recording, then two replays
            same = [bool(np.array_equal(g.numpy(), want)) for g in got]
            pe.dispose(got)
            stats = capture_stats()
            packs = packs_per_replay(forward)
            memory = []
            for i in range(100):
                pe.dispose(forward(batch))
                if i in (0, 99):
                    m = pe.memory()
                    memory.append([m.num_tensors, m.num_bytes, m.num_bytes_in_programs])
        after = capture_stats()
        forward.dispose()
        gone = [pe.memory().num_bytes_in_programs, capture_stats()["capture_programs"]]
        batch.dispose(); model.dispose()
        [same, stats, memory, after["capture_replays"] - stats["capture_replays"], gone, packs]
        """
    )
    same, stats, memory, replays, gone, packs = result
    assert packs == 0  # the weights' panels were packed when recorded: they belong to the weights
    assert same == [True, True, True]
    assert stats["capture_programs"] == 1 and stats["capture_replays"] == 2
    # convolutions, pooling, the products, the activations and the softmax call the module
    assert stats["capture_native_steps"] >= 6 and stats["capture_kernel_steps"] == 0, stats
    assert memory[0] == memory[1] and memory[0][2] == stats["capture_bytes"] > 0, memory
    assert replays == 100
    assert gone == [0, 0]


def test_slices_are_native_steps_while_a_capture_records(node):
    """kernels/shape.c's slice_rows: float32 (NaNs' payloads too) and int32 slices of rank 1 to 4, cut in the middle,
    at the ends and whole on the last axes (merged into one longer row), replayed bit for bit as native steps; op by
    op a slice stays numpy's view."""
    result = node.run(
        """
        rng = np.random.default_rng(12)
        cases = [((4097,), (5,), (4000,)), ((2, 17), (1, 0), (1, 17)), ((2, 17), (0, 3), (2, 9)),
                 ((1, 48, 48, 17), (0, 3, 5, 0), (1, 40, 2, 17)), ((3, 5, 7, 2), (1, 2, 3, 1), (2, 3, 4, 1)),
                 ((2, 3, 4), (0, 1, 0), (2, 1, 4))]
        arrays = [rng.integers(-2**31, 2**31, shape, dtype=np.int64).astype(np.int32).view(dtype)
                  for shape, _, _ in cases for dtype in ("float32", "int32")]
        xs = [pe.tensor(a) for a in arrays]
        slices = [(begin, size) for _, begin, size in cases for _ in range(2)]

        def cut(*ts):
            return [pe.slice(t, begin, size) for t, (begin, size) in zip(ts, slices)]

        want = [a[tuple(slice(b, b + s) for b, s in zip(begin, size))].view(np.int32)
                for a, (begin, size) in zip(arrays, slices)]
        before = capture_stats()
        captured = pe.capture(cut)
        same = []
        for _ in range(3):  # a recording, then two replays
            ys = captured(*xs)
            same.append(all(np.array_equal(y.numpy().view(np.int32), w) for y, w in zip(ys, want)))
            pe.dispose(ys)
        after = capture_stats()
        with uncaptured():
            ys = cut(*xs)
            same.append(all(np.array_equal(y.numpy().view(np.int32), w) for y, w in zip(ys, want)))
            pe.dispose(ys)
        captured.dispose(); pe.dispose(xs)
        [same, after["capture_native_steps"] - before["capture_native_steps"],
         after["capture_kernel_steps"] - before["capture_kernel_steps"]]
        """
    )  # fmt: skip
    same, native_steps, kernel_steps = result
    assert same == [True] * 4
    assert (native_steps, kernel_steps) == (12, 0)


def test_small_elementwise_ops_and_a_mean_are_native_steps_replayed_bit_for_bit(node):
    result = node.run(
        """
        from py_engine.ops import elementwise_rules as rules
        rng = np.random.default_rng(1)
        x = pe.tensor(rng.standard_normal((1, 32, 32, 8)).astype(np.float32))
        b = pe.tensor(rng.standard_normal(8).astype(np.float32))
        column = pe.tensor(rng.standard_normal((5, 1)).astype(np.float32))
        image = pe.tensor(rng.standard_normal((1, 5, 3, 3)).astype(np.float32))
        channels = pe.tensor(rng.standard_normal(3).astype(np.float32))

        def hard_sigmoid(x, three, sixth):  # an elementwise chain on 8 values, as a graph model's squeeze-excite gate
            return rules.relu6(x + three) * sixth

        constants = pe.tensor(np.array([3, 1 / 6], np.float32))

        def squeeze_excite(t):  # a global average pool, then ops on 8 values: far below math.SMALL
            s = pe.relu(pe.mean(t, axis=(1, 2), keepdims=True) * 2.0 + b)
            # and an outer broadcast (a column against a row), a row of 3 repeated (an image's channels), a fused chain
            gate, = rules.fuse_elementwise(hard_sigmoid, [s], constants)
            return pe.sqrt(pe.abs(s - b)) / 3.0, pe.sigmoid(s), column - b, image * channels, gate

        with uncaptured():
            want = [y.numpy() for y in squeeze_excite(x)]
        before = capture_stats()
        captured = pe.capture(squeeze_excite)
        same = []
        for _ in range(3):  # a recording, then two replays
            ys = captured(x)
            same.append([bool(np.array_equal(y.numpy(), w)) for y, w in zip(ys, want)])
            pe.dispose(ys)
        after = capture_stats()
        captured.dispose(); pe.dispose([x, b, column, image, channels, constants])
        [same, after["capture_native_steps"] - before["capture_native_steps"],
         after["capture_kernel_steps"] - before["capture_kernel_steps"]]
        """
    )
    same, native_steps, kernel_steps = result
    assert same == [[True] * 5] * 3
    # mean (sum and division), multiply, add, relu, subtract, abs, sqrt, divide, sigmoid, the fused chain: the
    # module's, on 8 values; the outer subtract and the multiply by channels: the module's too
    assert (native_steps, kernel_steps) == (12, 0)


def test_consecutive_native_steps_replay_as_one_call_of_javascript_bit_for_bit(node):
    """A replay runs each run of native steps between kernel steps as one step, all its calls into the module one
    JavaScript call (a call from Python into the module costs about 1 us), in the recorded order: a softmax along
    another axis than the last, numpy's kernel, splits the steps in two runs."""
    result = node.run(
        """
        rng = np.random.default_rng(3)
        x = pe.tensor(rng.standard_normal((1, 32, 32, 8)).astype(np.float32))
        b = pe.tensor(rng.standard_normal(8).astype(np.float32))

        def fn(t):
            s = pe.softmax(pe.relu(t * 2.0 + b), axis=1)
            return pe.sqrt(pe.abs(s - b)) / 3.0

        with uncaptured():
            want = fn(x).numpy()
        captured = pe.capture(fn)
        same = []
        for _ in range(3):  # a recording, then two replays
            y = captured(x)
            same.append(bool(np.array_equal(y.numpy(), want)))
            y.dispose()
        (recorded,) = captured._programs.values()
        program = recorded.program
        steps = [[len(step[1]) for step in program.steps if step[0]], sum(not step[0] for step in program.steps)]
        runs = [[len(run[1]) for run in program.runs if run[0]], sum(not run[0] for run in program.runs)]
        kinds = [run[0] for run in program.runs]
        captured.dispose(); pe.dispose([x, b])
        [same, steps, runs, kinds]
        """
    )  # fmt: skip
    same, steps, runs, kinds = result
    assert same == [True] * 3
    # multiply, add, relu; softmax; subtract, abs, sqrt, divide: one call of the module each
    assert steps == [[1] * 7, 1]
    assert (runs, kinds) == ([[1, 1], 1], [True, False, True])


def test_a_losss_steps_and_its_gradients_broadcasts_are_native_steps_replayed_bit_for_bit(node):
    """categorical_crossentropy on a softmax (sums along the last axis, a division by each row's sum, clip, its
    gradient) and broadcasts of a scalar, a column, a row and a middle axis, a fill: native steps, the values of the
    same function run op by op (numpy's; the softmax and the log: the module's at every size)."""
    result = node.run(
        """
        rng = np.random.default_rng(4)
        logits = pe.tensor(rng.standard_normal((64, 10)).astype(np.float32))
        labels = pe.tensor(np.eye(10, dtype=np.float32)[rng.integers(0, 10, 64)])
        column = pe.tensor(rng.standard_normal((64, 1)).astype(np.float32))
        middle = pe.tensor(rng.integers(-9, 9, (1, 5, 1)).astype(np.int32))
        row = pe.tensor(rng.standard_normal(10).astype(np.float32))

        def step(logits, labels):
            p = pe.softmax(logits)
            loss, grad = pe.value_and_grad(lambda p: pe.mean(pe.losses.categorical_crossentropy(labels, p)))(p)
            return (loss, grad, pe.broadcast_to(column, (64, 10)), pe.broadcast_to(loss, (3, 4)),
                    pe.broadcast_to(middle, (2, 5, 3)), pe.broadcast_to(row, (4, 10)), pe.fill((2, 3), -0.0))

        with uncaptured():
            want = [y.numpy() for y in step(logits, labels)]
        before = capture_stats()
        captured = pe.capture(step)
        same = []
        for _ in range(3):  # a recording, then two replays
            ys = captured(logits, labels)
            same.append([bool(np.array_equal(y.numpy().view(np.int32), w.view(np.int32))) for y, w in zip(ys, want)])
            pe.dispose(ys)
        after = capture_stats()
        captured.dispose(); pe.dispose([logits, labels, column, middle, row])
        [same, after["capture_native_steps"] - before["capture_native_steps"],
         after["capture_kernel_steps"] - before["capture_kernel_steps"]]
        """
    )  # fmt: skip
    same, native_steps, kernel_steps = result
    assert same == [[True] * 7] * 3
    assert native_steps > 20 and kernel_steps == 0, (native_steps, kernel_steps)


def test_the_recording_holds_no_intermediate_so_its_memory_serves_later_ops(node):
    """The recording keeps what the program needs of each step's output (shape, dtype, bytes), not the array: an
    intermediate the engine frees goes while the function runs, as op by op (holding them all grew Pyodide's heap by
    every intermediate: centernet's warm-up 52 -> 389 MB), and the replays still give the uncaptured values."""
    result = node.run(
        """
        import weakref
        x = pe.tensor(np.linspace(-1, 1, 1 << 16, dtype=np.float32))
        alive = []

        def chain(t):  # each step's output disposed once the next has read it, as a graph model's run does
            outputs = []
            for _ in range(8):
                y = pe.relu(t * 1.5 + 0.25)
                outputs.append(weakref.ref(y._buf.handle))
                if t is not x:
                    t.dispose()
                t = y
            alive.append([r() is not None for r in outputs[:7]])  # while the function runs
            return t

        with uncaptured():
            want = chain(x).numpy()
        captured = pe.capture(chain)
        values = [captured(x).numpy() for _ in range(3)]  # a recording, then two replays (chain does not run)
        captured.dispose(); x.dispose()
        [alive, [bool(np.array_equal(v, want)) for v in values]]
        """
    )
    alive, same = result
    assert alive == [[False] * 7] * 2  # op by op, then recorded: the same
    assert same == [True] * 3


def save_input(request, graph_models, name):
    """The model's first input saved beside the models (mounted in Node), removed after the test: the folder holds the
    models alone for the tests that list it."""
    path = graph_models / f"{name}-input.npy"
    np.save(path, model_inputs(graph_models / name / "model.json")[0][1])
    request.addfinalizer(path.unlink)


@pytest.mark.parametrize("name", ["movenet-lightning", "blazeface"])
def test_graph_models_replay_their_uncaptured_results_bit_for_bit_on_one_and_two_threads(
    node, graph_models, name, request
):
    save_input(request, graph_models, name)
    result = node.run(
        f"""
        import pyodide_js
        if "mounted" not in globals():
            pyodide_js.mountNodeFS("/graph-models", {str(graph_models)!r})
            mounted = True

        def execute(model, x):
            ys = model.execute(x)
            ys = ys if isinstance(ys, list) else [ys]
            values = [y.numpy() for y in ys]
            pe.dispose(ys)
            return values

        async def outputs(threads):
            assert await pe.set_backend("wasm", threads=threads)
            model = await pe.load_graph_model("file:///graph-models/{name}/model.json")
            x = pe.tensor(np.load("/graph-models/{name}-input.npy"))
            with uncaptured():
                want = execute(model, x)
            before, tensors = capture_stats(), pe.memory().num_tensors
            runs = [execute(model, x) for _ in range(3)]
            stats, left = capture_stats(), pe.memory().num_tensors - tensors
            model.dispose(); x.dispose()
            return want, runs, stats, before, left

        one, two = await outputs(1), await outputs(2)
        await pe.set_backend("wasm", threads=1)
        [
            [
                [all(np.array_equal(a, b) for a, b in zip(want, run)) for run in runs],
                stats["capture_replays"] - before["capture_replays"], stats["capture_native_steps"],
                stats["capture_kernel_steps"], stats["capture_split_steps"], left,
            ]
            for want, runs, stats, before, left in (one, two)
        ] + [all(np.array_equal(a, b) for a, b in zip(one[1][-1], two[1][-1]))]
        """
    )
    one, two, threads_agree = result
    (same, replays, native_steps, kernel_steps, split_steps, left) = one
    (same2, replays2, native_steps2, kernel_steps2, split_steps2, left2) = two
    assert same == same2 == [True, True, True]
    assert replays == replays2 == 2
    # movenet's every step is the module's (its gathers, index arithmetic and slices too); blazeface keeps kernel steps
    assert native_steps > 50 and (kernel_steps == 0 if name == "movenet-lightning" else kernel_steps >= 1), (
        native_steps,
        kernel_steps,
    )
    # the kernels split over the pool are native steps too: their calls of the pool replayed without the wrapper
    assert split_steps == 0 and split_steps2 > 0, (split_steps, split_steps2)
    assert (native_steps2, kernel_steps2) == (native_steps, kernel_steps)
    assert left == left2 == 0
    assert threads_agree


def test_a_graph_models_program_on_two_threads_shares_blocks_by_lifetime_and_reads_the_kept_weights(
    node, graph_models, request
):
    """movenet-lightning's execute on two threads: its program's blocks in the pool's shared memory are shared by
    lifetime (a freed value's block serves later ops), the values only split steps read live there alone (not in
    Pyodide's arrays too), and its weights' panels are the pool's kept blocks, which op by op uses too: op by op after
    the recording adds no kept bytes, and the program holds less than twice one thread's program (1.6x measured: the
    pool's blocks are shared by lifetime, a block per value as it was on one thread (1.03x then), where one thread's
    arrays now lie at offsets of one buffer; plus the split ops' scratch and copies in; it held 4.8x one thread's
    with a block per value and weights' panels of its own). Its blocks go back with the model, and the kept
    blocks it read stay the weights' alone."""
    name = "movenet-lightning"
    save_input(request, graph_models, name)
    result = node.run(
        f"""
        import pyodide_js
        from py_engine.backends.wasm import threads
        if "mounted" not in globals():
            pyodide_js.mountNodeFS("/graph-models", {str(graph_models)!r})
            mounted = True

        async def held(n):
            assert await pe.set_backend("wasm", threads=n)
            model = await pe.load_graph_model("file:///graph-models/{name}/model.json")
            x = pe.tensor(np.load("/graph-models/{name}-input.npy"))
            runs = [[y.numpy() for y in model.execute(x)] for _ in range(3)]  # recorded, then replayed
            program = pe.memory().num_bytes_in_programs
            kept = pe.backend_info()["threads_kept_bytes"]  # the split ops' weights, kept while they live
            with uncaptured():  # op by op reads the blocks the recording's weights were kept in
                want = [y.numpy() for y in model.execute(x)]
            added = pe.backend_info()["threads_kept_bytes"] - kept
            model.dispose(); x.dispose()
            gone = [pe.memory().num_bytes_in_programs, pe.backend_info()["threads_kept_bytes"] - kept]
            if threads.pool is not None:  # its blocks back (all but the kept ones free); each kept block held by its weight alone
                p = threads.pool
                gone += [sum(size for _, size in p.free) + p.kept_bytes == p.end - threads.ARENA,
                         sorted({{count for _, count in p.holders.values()}})]
            same = all(np.array_equal(a, b) for run in runs for a, b in zip(want, run))
            return [same, program, kept, added, gone]

        one, two = await held(1), await held(2)
        await pe.set_backend("wasm", threads=1)
        [one, two]
        """
    )
    one, two = result
    assert one[0] and two[0]
    assert one[1] > 0 and one[2] == 0  # one thread: no pool
    assert two[2] > 0 and two[3] == 0, two  # the program packed no weight of its own
    assert two[1] < 2 * one[1], (two[1], one[1])
    assert one[4] == [0, 0] and two[4] == [0, 0, True, [1]], (one, two)


@pytest.mark.parametrize("threads", [1, 2])
def test_fit_with_adam_and_dropout_gives_the_same_history_and_weights_captured(node, threads):
    result = node.run(
        f"""
        assert await pe.set_backend("wasm", threads={threads})

        def train(capture):
            x, y, model = cnn(pe.optimizers.Adam(0.01))
            before = capture_stats()
            tensors = []
            count = pe.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: tensors.append(pe.memory().num_tensors))
            with all_native():
                history = model.fit(x, y, epochs=3, batch_size=16, seed=0, verbose=0, capture=capture, callbacks=[count])
            weights = [w.numpy() for w in model.weights]
            after = capture_stats()
            # the next fits replay every batch with the programs the model kept: memory flat
            kept = []
            for _ in range(3):
                with all_native():
                    model.fit(x, y, epochs=1, batch_size=16, seed=0, verbose=0, capture=capture)
                m = pe.memory()
                kept.append([m.num_tensors, m.num_bytes, m.num_bytes_in_programs, capture_stats()["capture_programs"]])
            replayed = capture_stats()["capture_replays"] - after["capture_replays"]
            model.optimizer.dispose(); model.dispose()
            gone = [pe.memory().num_bytes_in_programs, capture_stats()["capture_programs"]]
            return (history.history["loss"], weights, after["capture_replays"] - before["capture_replays"], tensors,
                    kept, replayed, gone)

        plain, captured = train(False), train(True)
        await pe.set_backend("wasm", threads=1)
        same = all(np.array_equal(a, b) for a, b in zip(plain[1], captured[1]))
        [[r[0], None, *r[2:]] for r in (plain, captured)] + [same]
        """
    )
    plain, (captured, _, replays, tensors, kept, replayed, gone), same_weights = result
    assert captured == plain[0] and plain[0][-1] < plain[0][0]
    assert same_weights
    # 5 batches (4 of 16, 1 of 6) an epoch: 2 recordings (one per shape) and a first call that makes Adam's slots
    assert replays == 15 - 3
    assert len(set(tensors)) == 1, tensors
    # the model keeps its 2 programs between fits: the next fits record nothing and hold no more; dispose frees them
    assert kept[0][2] > 0 and kept[0][3] == 2 and kept == kept[:1] * 3, kept
    assert replayed == 3 * 5
    assert gone == [0, 0]
    assert plain[4] == [kept[0][:2] + [0, 0]] * 3 and plain[5:] == [0, [0, 0]]  # uncaptured: nothing kept


def test_the_optimizers_fused_updates_are_native_steps_through_the_programs_own_pointer_tables(node):
    """FusedElementwise passes its operands' addresses in a table (native.table): the program holds its own table of
    its own arrays' addresses, so the update is a native step, also for a weight below SMALL (a bias, a small
    filter: numpy's kernel op by op, the module's while recorded), with the uncaptured fit's weights bit for bit."""
    result = node.run(
        """
        from py_engine.backends.wasm import native
        from py_engine.backends.wasm.kernels.math import _fused

        seen = []
        def look(batch, logs):
            for p in ENGINE.active().programs:
                steps = [s for s in p.steps if s[0] and any(c is native.exports.fused_elementwise for c, _ in s[1])]
                seen.append([len(steps), sum(1 for s in p.steps if not s[0] and s[1] is _fused)])

        weights = []
        for capture in (False, True):
            x, y, model = cnn(pe.optimizers.Adam(0.01))
            model.fit(x, y, epochs=1, batch_size=16, seed=0, verbose=0, capture=capture,
                      callbacks=[pe.callbacks.LambdaCallback(on_batch_end=look)])
            weights.append([w.numpy() for w in model.weights])
            model.optimizer.dispose(); model.dispose()
        [sorted(set(map(tuple, seen))), all(np.array_equal(a, b) for a, b in zip(*weights))]
        """
    )  # fmt: skip
    seen, same = result
    assert seen == [[8, 0]]  # Adam's update of each of the 8 weights: a native step, none a kernel step
    assert same


def test_reading_back_inside_the_function_is_an_error_and_leaves_no_program(node):
    result = node.run("capture_error(lambda t: t * float((t * 2.0).numpy()[0]))")
    error, programs = result
    assert "tried to read a tensor back" in error and "Return the tensor" in error
    assert programs == 0


def test_a_variable_assigned_inside_is_updated_in_place_and_its_packed_panels_follow(node):
    """The product packs w's panels: a replay packs them again from w's array, which the previous replay updated in
    place, and a product outside the function afterwards packs the new values too."""
    result = node.run(
        """
        w = pe.variable(pe.fill((64, 64), 1.0), name="w")
        own = w._buf
        x = pe.ones((64, 64))

        def step(t):
            y = pe.matmul(t, w)
            w.assign(w + 1.0)
            return y

        step = pe.capture(step)
        seen = []
        with all_native():
            for _ in range(4):
                y = step(x)
                seen.append(float(y.numpy()[0, 0]))
                y.dispose()
            y = pe.matmul(x, w)
            after = float(y.numpy()[0, 0])
        stats, packs = capture_stats(), packs_per_replay(step)
        step.dispose(); pe.dispose([y, x, w])
        [seen, after, w._buf is None or own is w._buf, stats["capture_native_steps"], packs]
        """
    )
    seen, after, kept_buffer, native_steps, packs = result
    assert seen == [64.0, 128.0, 192.0, 256.0] and after == 320.0
    assert kept_buffer and native_steps >= 1
    assert packs == 1  # w changes every replay: its panels are packed anew from its array


def test_a_program_is_not_replayed_once_a_variable_it_binds_is_reassigned_or_disposed(node):
    result = node.run(
        """
        w = pe.variable(pe.fill((64, 64), 0.5), name="weights")
        x = pe.ones((64, 64))
        captured = pe.capture(lambda t: pe.matmul(t, w))
        seen = []
        with all_native():
            for step in range(3):
                before = capture_stats()["capture_replays"]
                y = captured(x)
                seen.append([float(y.numpy()[0, 0]), capture_stats()["capture_replays"] - before])
                y.dispose()
                if step == 1:
                    w.assign(pe.fill((64, 64), 2.0))
            w.dispose()
            w = pe.variable(pe.fill((64, 64), 1.0), name="weights2")  # the function reads the new one now
            y = captured(x)
            seen.append([float(y.numpy()[0, 0]), capture_stats()["capture_replays"] - before])
        pe.dispose([y, x, w]); captured.dispose()
        seen
        """
    )
    # a recording, a replay; after the assign outside, a recording with the new values; w disposed: a recording
    assert result == [[32.0, 0], [32.0, 1], [128.0, 0], [64.0, 0]]


def test_a_program_reading_a_variable_that_another_program_updates_in_place_records_again(node):
    """predict packs w's panels once; each replay of step rewrites w in place, so predict's panels went stale: it
    records again rather than replay them."""
    result = node.run(
        """
        w = pe.variable(pe.fill((64, 64), 1.0), name="w")
        x = pe.ones((64, 64))
        step = pe.capture(lambda t: (w.assign(w + 1.0), pe.sum(t))[1])
        predict = pe.capture(lambda t: pe.matmul(t, w))
        seen = []
        with all_native():
            for _ in range(3):
                step(x).dispose()
                before = capture_stats()["capture_replays"]
                y = predict(x)
                seen.append([float(y.numpy()[0, 0]), capture_stats()["capture_replays"] - before])
                y.dispose()
            before = capture_stats()["capture_replays"]
            y = predict(x)  # w unchanged since: a replay
            seen.append([float(y.numpy()[0, 0]), capture_stats()["capture_replays"] - before])
        step.dispose(); predict.dispose(); pe.dispose([y, x, w])
        seen
        """
    )
    assert result == [[128.0, 0], [192.0, 0], [256.0, 0], [256.0, 1]]


def test_fit_with_validation_data_evaluates_each_epochs_weights_captured(node):
    """The test step's program reads the weights the training step's program rewrites in place every batch."""
    result = node.run(
        """
        def val_loss(capture):
            x, y, model = cnn(pe.optimizers.SGD(0.05), dropout=0.0)
            with all_native():
                history = model.fit(x[:60], y[:60], epochs=3, batch_size=20, verbose=0, capture=capture,
                                    validation_data=(x[60:], y[60:]), shuffle=False)
            model.optimizer.dispose(); model.dispose()
            return history.history["val_loss"]

        [val_loss(False), val_loss(True)]
        """
    )
    plain, captured = result
    assert captured == plain and len(set(plain)) == 3


def test_an_assign_outside_writes_into_the_variable_a_training_program_updates_so_it_replays_on(node):
    """A step run op by op between replays (a loop of steps, then fit) assigns w: the value is written into the
    buffer the program updates, which replays on with it; with another tensor sharing w's buffer, w takes a new
    one (the view keeps its value) and the program records again."""
    result = node.run(
        """
        w = pe.variable(np.ones(8, np.float32), name="w")  # its own buffer (pe.fill's would share the fill's)
        x = pe.ones((8,))
        step = pe.capture(lambda t: (w.assign(w * 2.0), pe.sum(t * w))[1])
        seen = []

        def call():
            before = capture_stats()["capture_replays"]
            loss = step(x)
            seen.append([float(loss.numpy()), capture_stats()["capture_replays"] - before])
            loss.dispose()

        with all_native():
            call(); call()  # a recording, a replay: w = 4
            own = w._buf
            w.assign(pe.fill((8,), 10.0))
            call()  # a replay on w = 10
            kept = w._buf is own
            view = w.reshape((2, 4))
            w.assign(pe.fill((8,), 3.0))
            call()  # a recording on w = 3
            seen.append([float(view.numpy()[0, 0]), float(w.numpy()[0])])
        step.dispose(); pe.dispose([view, x, w])
        [seen, kept]
        """
    )
    seen, kept = result
    assert seen == [[16.0, 0], [32.0, 1], [160.0, 1], [48.0, 0], [20.0, 6.0]] and kept


def test_a_variable_sharing_its_buffer_records_once_its_assign_gave_it_its_own_and_the_other_tensor_keeps(node):
    """pe.variable(t) shares t's buffer: a training step's replays rewrite the variable in place, so the call that
    first assigns it runs normally (the variable takes a buffer of its own) and the next records."""
    result = node.run(
        """
        t = pe.tensor(np.ones(4, np.float32))
        v = pe.variable(t, name="shared")
        x = pe.tensor(np.arange(4, dtype=np.float32))
        sgd = pe.optimizers.SGD(0.1)
        step = pe.capture(lambda x: sgd.minimize(lambda: pe.sum(v * x), var_list=[v], return_cost=True))
        before = capture_stats()
        with all_native():
            pe.dispose([step(x) for _ in range(4)])
        after = capture_stats()
        seen = [t.numpy().tolist(), v.numpy().tolist()]
        seen += [after[k] - before[k] for k in ("capture_programs", "capture_replays")]
        step.dispose(); pe.dispose([t, v, x])
        seen
        """
    )
    t, v, programs, replays = result
    assert t == [1.0] * 4, "the tensor the variable was made from keeps its values"
    assert v == pytest.approx([1.0 - 0.4 * k for k in range(4)]) and (programs, replays) == (1, 2)


def test_a_backend_switch_drops_the_programs(node):
    result = node.run(
        """
        x = pe.tensor(np.ones((4,), np.float32))
        captured = pe.capture(lambda t: t + 1.0)
        pe.dispose([captured(x), captured(x)])
        held = capture_stats()["capture_programs"]
        await pe.set_backend("numpy")
        y = captured(x)  # runs fn as it is on numpy
        await pe.set_backend("wasm", threads=1)
        left = capture_stats()["capture_programs"]
        y.dispose(); captured.dispose(); x.dispose()
        [held, left]
        """
    )
    assert result == [1, 0]


def test_a_program_recorded_on_one_thread_is_recorded_again_for_a_new_pool(node):
    """Which kernels split depends on the pool (a split step calls the pool, its arrays in the pool's memory): after
    set_backend("wasm", threads=2) (or the default pool's start in the background) the function records again, and
    its replays split the big kernels over the pool."""
    result = node.run(
        """
        x = pe.tensor(np.random.default_rng(0).standard_normal((1, 64, 64, 16)).astype(np.float32))
        w = pe.tensor(np.random.default_rng(1).standard_normal((3, 3, 16, 32)).astype(np.float32))
        captured = pe.capture(lambda t: pe.relu(pe.conv2d(t, w, 1, "same")))
        outputs, seen = [], []
        for threads in (1, 2):
            assert await pe.set_backend("wasm", threads=threads)
            for _ in range(3):
                calls = pe.backend_info()["threaded_calls"]
                y = captured(x)
                outputs.append(y.numpy())
                y.dispose()
                seen.append([threads, capture_stats()["capture_native_steps"], pe.backend_info()["threaded_calls"] - calls])
        await pe.set_backend("wasm", threads=1)
        captured.dispose(); pe.dispose([x, w])
        [seen, all(np.array_equal(o, outputs[0]) for o in outputs)]
        """
    )
    seen, same = result
    on_one, on_two = seen[:3], seen[3:]
    assert all(native >= 1 and calls == 0 for _, native, calls in on_one), on_one
    # recorded on the pool, then replayed there: the convolution, and the relu of its output there (threads.in_place)
    assert all(calls == 2 for _, _, calls in on_two), on_two
    assert same


SPLIT_MODEL = (
    THREADS_SPLIT_MODEL
    + """
from py_engine.backends.wasm import threads

def copied():
    return pe.backend_info()["threads_copied_bytes"]

# each call's value, and the bytes it copied into or out of the pool (its readback's too)
def replayed(captured, x, times=3):
    values, per_call = [], []
    for _ in range(times):
        before = copied()
        y = captured(x)
        values.append(y.numpy())
        y.dispose()
        per_call.append(copied() - before)
    return values, per_call
"""
)


def test_a_replay_on_two_threads_is_one_threads_and_copies_only_what_crosses_into_or_out_of_the_pool(node):
    """A program recorded on the pool keeps the split kernels' arrays in the pool's shared memory: a replay copies
    its input in and the outputs that the calling thread's steps read out, nothing per op; its shared blocks count
    in pe.memory().num_bytes_in_programs, stay over 100 replays, and go with the program."""
    node.run(SPLIT_MODEL)
    result = node.run(
        """
        await pe.set_backend("wasm", threads=1)
        model, image = split_model()
        want = model.predict(image).numpy()
        await pe.set_backend("wasm", threads=2)
        model.predict(image).dispose()  # the weights kept in the shared memory: op by op needs them too
        before, end = copied(), threads.pool.end
        model.predict(image).dispose()
        op_by_op = copied() - before
        forward = pe.capture(lambda t: model.predict(t))
        outputs, per_replay, calls, memory = [], [], [], []
        for i in range(102):
            before, threaded = copied(), pe.backend_info()["threaded_calls"]
            y = forward(image)
            outputs.append(y.numpy())
            y.dispose()
            per_replay.append(copied() - before)
            calls.append(pe.backend_info()["threaded_calls"] - threaded)
            m, info = pe.memory(), pe.backend_info()
            memory.append([m.num_tensors, m.num_bytes, m.num_bytes_in_programs, info["threads_memory_bytes"]])
        stats = capture_stats()
        forward.dispose()
        gone = [pe.memory().num_bytes_in_programs, threads.pool.end == end]
        model.dispose(); image.dispose()
        await pe.set_backend("wasm", threads=1)
        [all(np.array_equal(o, want) for o in outputs), op_by_op, per_replay[1:], calls[1:], memory[1:], stats, gone]
        """,
    )
    same, op_by_op, per_replay, calls, memory, stats, gone = result
    assert same
    # the two convolutions, the depthwise one, and the max pool: op by op it stays on the calling thread (too little
    # work per byte copied), but its input, the 1x1 convolution's output, is in the pool already (threads.in_place)
    assert stats["capture_split_steps"] == 4, stats
    assert set(calls) == {4}, calls
    image, pooled = 64 * 64 * 3 * 4, 32 * 32 * 64 * 4
    # in: the image; out: the max pool's output, which the global average pool (on the calling thread) reads. The
    # other split steps' outputs stay in the pool for the next one; the shape parameters were copied in once, when
    # recorded
    assert set(per_replay) == {image + pooled}, per_replay
    assert op_by_op > image + 64 * 64 * 64 * 4 + 2 * 64 * 64 * 32 * 4, op_by_op
    assert {tuple(m) for m in memory} == {tuple(memory[0])}, memory[:3]
    assert memory[0][2] == stats["capture_bytes"] > 0
    assert gone == [0, True], "the program's shared blocks went back to the pool"


def test_elementwise_ops_between_split_convolutions_split_in_a_replay_and_copy_nothing(node):
    """A residual block with a fused elementwise rule, a scale per channel and a sigmoid: y = conv(sigmoid((a +
    rule(a, b)) * scale)), a = conv(x), b = conv(a). Op by op the elementwise ops stay on the calling thread (a few
    operations per byte: copying their operands costs more than it saves), but recorded, their operands are split
    steps' outputs in the pool, so they split too (the rule's elements by image rows, each part with its own table of
    addresses; the product by whole repeats of the scale, a weight kept there) and the replay copies only the image
    in and y out."""
    node.run(SPLIT_MODEL)
    result = node.run(
        """
        from py_engine.ops.elementwise_rules import fuse_elementwise
        rng = np.random.default_rng(5)
        x = pe.tensor(rng.standard_normal((1, 64, 64, 16), np.float32))
        w1, w2, w3 = (pe.tensor(rng.standard_normal((1, 1, 16, 16), np.float32) / 4) for _ in range(3))
        scale = pe.tensor(rng.standard_normal(16, np.float32))
        def block(x):
            a = pe.conv2d(x, w1, 1, "valid")
            (gated,) = fuse_elementwise(lambda p, q: p * q - p, [a, pe.conv2d(a, w2, 1, "valid")])
            return pe.conv2d(pe.sigmoid((a + gated) * scale), w3, 1, "valid")
        await pe.set_backend("wasm", threads=1)
        want = block(x).numpy()
        await pe.set_backend("wasm", threads=2)
        before = pe.backend_info()["threaded_calls"]
        op_by_op = block(x).numpy()
        op_by_op_calls = pe.backend_info()["threaded_calls"] - before
        forward = pe.capture(block)
        runs, per_replay = replayed(forward, x)
        stats = capture_stats()
        forward.dispose(); x.dispose()
        await pe.set_backend("wasm", threads=1)
        [np.array_equal(op_by_op, want), all(np.array_equal(r, want) for r in runs), op_by_op_calls, stats, per_replay]
        """
    )
    same_op_by_op, same, op_by_op_calls, stats, per_replay = result
    assert same_op_by_op and same, "one thread's results, bit for bit"
    assert op_by_op_calls == 3, "op by op the three convolutions split, the elementwise ops do not"
    assert stats["capture_split_steps"] == 7 and stats["capture_native_steps"] == 7, stats
    image = 64 * 64 * 16 * 4
    assert per_replay[1:] == [2 * image, 2 * image], "the image in, y out: the other values stay in the pool"


@pytest.mark.parametrize("channels", [8, 37, 40])
def test_a_sum_down_a_split_steps_output_splits_by_columns_in_a_replay(node, channels):
    """A bias's gradient (a sum over the images and pixels) of a convolution's output in the pool: recorded, it
    splits by columns, 8 at a time (kernels/reduce.c sum_rows_strided: each column one lane's sum, whatever sits
    beside it), and the replay copies the sums out, not the convolution's output; one thread's sums, bit for bit,
    for widths of whole vectors, of 16 columns and a tail, and of a partial last vector."""
    node.run(SPLIT_MODEL)
    result = node.run(
        f"""
        rng = np.random.default_rng(6)
        x = pe.tensor(rng.standard_normal((4, 20, 20, 8), np.float32))
        w = pe.tensor(rng.standard_normal((3, 3, 8, {channels}), np.float32))
        f = lambda t: pe.sum(pe.conv2d(t, w, 1, "same"), axis=[0, 1, 2])
        await pe.set_backend("wasm", threads=1)
        want = f(x).numpy()
        await pe.set_backend("wasm", threads=2)
        captured = pe.capture(f)
        runs, per_replay = replayed(captured, x)
        split = capture_stats()["capture_split_steps"]
        captured.dispose(); pe.dispose([x, w])
        await pe.set_backend("wasm", threads=1)
        [all(np.array_equal(r, want) for r in runs), split, per_replay[1:]]
        """
    )
    same, split, per_replay = result
    assert same, "one thread's sums, bit for bit"
    assert split == 2, split
    assert per_replay == [(4 * 20 * 20 * 8 + channels) * 4] * 2, per_replay  # the image in, the sums out


def test_a_pool_lost_during_a_replay_gives_the_replay_on_one_thread_and_records_again(node):
    node.run(SPLIT_MODEL)
    result = node.run(
        """
        await pe.set_backend("wasm", threads=1)
        model, image = split_model()
        want = model.predict(image).numpy()
        await pe.set_backend("wasm", threads=2)
        forward = pe.capture(lambda t: model.predict(t))
        pe.dispose([forward(image), forward(image)])  # recorded, replayed
        p = threads.pool
        p._run = lambda *args: "a worker did not finish its share within 10000 ms"
        y = forward(image)
        lost = [y.numpy(), pe.backend_info()["threads"], pe.backend_info()["threads_reason"]]
        y.dispose()
        recorded = capture_stats()["capture_split_steps"]
        y = forward(image)  # recorded again, on one thread
        again = [y.numpy(), capture_stats()["capture_split_steps"]]
        y.dispose(); forward.dispose(); model.dispose(); image.dispose()
        await pe.set_backend("wasm", threads=1)
        [np.array_equal(lost[0], want), lost[1:], np.array_equal(again[0], want), again[1]]
        """
    )
    same, (threads, reason), same_again, split_steps = result
    assert same and same_again
    assert threads == 1
    assert reason == (
        "the pool of workers stopped (a worker did not finish its share within 10000 ms in conv2d); running on one "
        "thread"
    ), reason
    assert split_steps == 0


def test_a_value_two_split_steps_read_is_copied_into_the_pool_once_per_replay(node):
    """Two convolutions of one input (as a convolution and its filter's gradient read the same activation): the
    second finds the first's copy of it in the pool (it stays there while the value lives), one thread's results."""
    node.run(SPLIT_MODEL)
    result = node.run(
        """
        rng = np.random.default_rng(0)
        x = pe.tensor(rng.standard_normal((2, 32, 32, 8)).astype(np.float32))
        w1, w2 = (pe.tensor(rng.standard_normal((3, 3, 8, 16)).astype(np.float32)) for _ in range(2))
        f = lambda t: [pe.ops.conv2d(t, w1, 1, "same"), pe.ops.conv2d(t, w2, 1, "same")]
        await pe.set_backend("wasm", threads=1)
        want = [y.numpy() for y in f(x)]
        await pe.set_backend("wasm", threads=2)
        captured = pe.capture(f)
        seen, per_replay = [], []
        for _ in range(4):
            before = copied()
            ys = captured(x)
            per_replay.append(copied() - before)
            seen.append(all(np.array_equal(y.numpy(), v) for y, v in zip(ys, want)))
            pe.dispose(ys)
        split = capture_stats()["capture_split_steps"]
        captured.dispose(); pe.dispose([x, w1, w2])
        await pe.set_backend("wasm", threads=1)
        [seen, per_replay[1:], split]
        """
    )
    seen, per_replay, split = result
    assert seen == [True] * 4 and split == 2
    image, output = 2 * 32 * 32 * 8 * 4, 2 * 32 * 32 * 16 * 4
    assert per_replay == [image + 2 * output] * 3, per_replay  # the input in once, both outputs out


def test_fit_with_every_kernel_split_replays_one_threads_steps_bit_for_bit(node):
    """A captured training step on two threads (Adam, dropout; every convolution, pool, product and their gradients
    split, the thresholds at 0): one thread's losses and weights, bit for bit, with flat memory. The weights' kept
    blocks the step's program reads stay its own when the variables change (their kept entries go): never free."""
    result = node.run(
        """
        from py_engine.backends.wasm import threads
        from py_engine.engine import ENGINE

        def held():
            # [no block a program holds is free or unknown, some is held by a program alone (its weight changed)]
            p = threads.pool
            holding = [at for program in ENGINE.active().programs for at in program.holding]
            kept = {entry[1] for entry in p.kept.values()}
            blocks = [(at, p.holders[at][0]) for at in holding if at in p.holders]
            free = any(a < f + n and f < a + b for a, b in blocks for f, n in p.free)
            return [len(blocks) == len(holding) and not free, any(at not in kept for at in holding)]

        async def train(n):
            split, safe = [], []
            await pe.set_backend("wasm", threads=n)
            x, y, model = cnn(pe.optimizers.Adam(0.01))
            seen = []
            def count(epoch, logs):
                m, info = pe.memory(), pe.backend_info()
                seen.append([m.num_tensors, m.num_bytes, m.num_bytes_in_programs, info["threads_memory_bytes"]])
                split.append(capture_stats()["capture_split_steps"])
                safe.append(held() if n == 2 else [True, True])
            saved = threads.MIN_WORK, threads.MIN_INTENSITY
            threads.MIN_WORK = threads.MIN_INTENSITY = 0
            try:
                with all_native():
                    history = model.fit(x, y, epochs=4, batch_size=16, seed=0, verbose=0,
                                        callbacks=[pe.callbacks.LambdaCallback(on_epoch_end=count)])
            finally:
                threads.MIN_WORK, threads.MIN_INTENSITY = saved
            weights = [w.numpy() for w in model.weights]
            model.optimizer.dispose(); model.dispose()
            return history.history["loss"], weights, seen, max(split), safe

        one, two = await train(1), await train(2)
        await pe.set_backend("wasm", threads=1)
        [one[0], two[0], all(np.array_equal(a, b) for a, b in zip(one[1], two[1])), two[2], one[3], two[3], two[4]]
        """
    )
    want, losses, same_weights, seen, split_one, split_two, safe = result
    assert safe == [[True, True]] * 4, safe
    assert losses == want and want[-1] < want[0]
    assert same_weights
    assert split_one == 0 and split_two >= 8, split_two  # the forward's and the gradients' big kernels
    assert {tuple(s) for s in seen[1:]} == {tuple(seen[1])}, seen


def test_a_training_step_on_two_threads_keeps_its_activations_and_gradients_in_the_pool(node):
    """bench/train_step.py's small CNN, batch 64, at the pool's own thresholds: once its recording runs an op under a
    gradient tape, no op counts its output as copied out (Pool.gradients), so the first layer's chain splits too
    (its convolution, max pool, their gradients, the activation's gradient and the bias sums, by columns) and a step
    copies little more than its batch in; one thread's and capture=False's losses and weights, bit for bit, memory
    flat over fits, freed on dispose."""
    result = node.run(
        """
        def small_cnn():
            pe.set_seed(0)
            rng, L = np.random.default_rng(0), pe.layers
            x = rng.normal(size=(128, 28, 28, 1)).astype(np.float32)
            y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)]
            model = pe.Sequential([
                L.Conv2D(8, 3, activation="relu", input_shape=(28, 28, 1)), L.MaxPooling2D(2),
                L.Conv2D(16, 3, activation="relu"), L.Flatten(), L.Dense(10, activation="softmax"),
            ])
            model.compile(optimizer=pe.optimizers.SGD(0.01), loss="categorical_crossentropy")
            return x, y, model

        async def train(n, capture):
            await pe.set_backend("wasm", threads=n)
            x, y, model = small_cnn()
            losses, held, copied = [], [], []
            for _ in range(4):
                before = pe.backend_info()["threads_copied_bytes"]
                history = model.fit(x, y, batch_size=64, shuffle=False, verbose=0, capture=capture)
                losses += history.history["loss"]
                copied.append((pe.backend_info()["threads_copied_bytes"] - before) // 2)  # 2 batches a fit
                m = pe.memory()
                held.append([m.num_tensors, m.num_bytes, m.num_bytes_in_programs,
                             pe.backend_info()["threads_memory_bytes"]])
            split = capture_stats()["capture_split_steps"]
            weights = [w.numpy() for w in model.weights]
            model.dispose()
            return [losses, weights, copied[1:], held[1:], split, capture_stats()["capture_programs"]]

        one, two, plain = await train(1, True), await train(2, True), await train(2, False)
        await pe.set_backend("wasm", threads=1)
        same = all(np.array_equal(a, b) and np.array_equal(a, c) for a, b, c in zip(one[1], two[1], plain[1]))
        [one[0], two[0], plain[0], same, two[2:], plain[2]]
        """
    )
    want, losses, uncaptured, same_weights, (copied, held, split, left), plain_copied = result
    assert losses == want == uncaptured and same_weights
    # the 3 convolutions, 2 pools and 3 products (forward and gradients), 2 activations' gradients, 2 bias sums and
    # the convolution's input gradient: every big step of the program (the loss, softmax and the updates on the
    # calling thread)
    assert split == 14, split
    batch, dense = 64 * 28 * 28 * 4, 1936 * 10 * 4
    # the batch in; the dense kernel in for the forward product and its input gradient (it changes every step) and its
    # gradient out to the update; the convolutions' weights in, their gradients out, the (64, 10) activation out and
    # its gradient in: 19.3 KiB (before: 1.44 MB, the first layer's activations and gradients crossing; op by op 3.8)
    assert copied == copied[:1] * 3 and copied[0] <= batch + 3 * dense + (20 << 10), copied
    assert plain_copied[0] > 3 * copied[0], plain_copied
    assert held == held[:1] * 3, held
    assert left == 0


def test_a_kernel_pinned_to_numpy_inside_the_function_is_an_error(node):
    """Moving a tensor between numpy and wasm copies nothing, so no readback would stop it (as on webgpu): the numpy
    kernel's result would become a constant of the program."""
    result = node.run(
        """
        def f(t):
            with pe.on_backend("numpy"):
                return t + 1.0

        capture_error(f)
        """
    )
    error, programs = result
    assert "ran on the numpy backend (pe.on_backend)" in error and "Run the function's ops" in error
    assert programs == 0


def test_an_input_whose_array_has_another_shape_replays_right(node):
    """A reshaped tensor shares its array, of the original shape: the signature (the tensor's shape) is the same."""
    result = node.run(
        """
        w = pe.tensor(np.arange(64 * 32, dtype=np.float32).reshape(64, 32) / 100)
        captured = pe.capture(lambda t: pe.relu(pe.matmul(t, w) - 1.0))
        flat = pe.tensor(np.linspace(-1, 1, 128 * 64, dtype=np.float32))
        square = pe.tensor(np.linspace(1, -1, 128 * 64, dtype=np.float32).reshape(128, 64))
        def values(x):
            y = captured(x)
            value = y.numpy()
            y.dispose()
            return value

        view = flat.reshape((128, 64))
        with all_native():
            want = [values(square), values(view)]  # recorded, then a replay
            with uncaptured():
                plain = [values(square), values(view)]
        replays = capture_stats()["capture_replays"]
        captured.dispose(); pe.dispose([w, flat, square, view])
        [all(np.array_equal(a, b) for a, b in zip(want, plain)), replays]
        """
    )
    assert result[0] and result[1] >= 1
