"""The wasm backend, where it runs: Pyodide in Node with the served Pyodide and the engine wheel (tests/pyodide).

The conformance suite, the list of native and fallback kernels, the self-test's fallback, memory growth between
calls, training a CNN, and property-based differential tests against numpy and webgpu in CPython.
"""

import asyncio

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import py_engine as pe
from py_engine.backends.wasm import native

from .pyodide import start_node_pyodide

# Below a size the wasm kernels run numpy's (a call costs more than it saves there); all_native() lowers those
# thresholds to zero, so small test shapes reach the module.
ALL_NATIVE = """
import contextlib
from py_engine.backends.wasm.kernels import linalg as wasm_linalg, math as wasm_math

@contextlib.contextmanager
def all_native():
    saved = wasm_math.SMALL, wasm_linalg.SMALL_PRODUCT
    wasm_math.SMALL = wasm_linalg.SMALL_PRODUCT = 0
    try:
        yield
    finally:
        wasm_math.SMALL, wasm_linalg.SMALL_PRODUCT = saved

# outputs() on numpy, on wasm, and on wasm with every size on the module (all_native): the three results
async def on_every_path(outputs):
    results = []
    for backend, native in (("numpy", False), ("wasm", False), ("wasm", True)):
        assert await pe.set_backend(backend)
        with all_native() if native else contextlib.nullcontext():
            results.append(outputs())
    return results
"""


@pytest.fixture(scope="module")
def node():
    pyodide = start_node_pyodide()
    pyodide.run(ALL_NATIVE)
    pyodide.run(DIFFERENTIAL)
    yield pyodide
    pyodide.close()


def test_conformance_suite_passes_on_wasm(node):
    report = node.run(
        """
        from py_engine.testing.conformance import all_cases, run_suite
        report = await run_suite("wasm")
        {**report, "total": len(all_cases()), "info": pe.backend_info() if await pe.set_backend("wasm") else None}
        """
    )
    assert report["info"]["name"] == "wasm", report["info"]
    assert report["failed"] == {}, str(report["failed"])[:5000]
    assert report["passed"] == report["total"] > 1000


def test_conformance_suite_passes_with_every_kernel_native(node):
    """The suite's arrays are small, so most of its cases run numpy's kernels on wasm by default: run it again with
    every size going to the module."""
    report = node.run(
        """
        from py_engine.testing.conformance import run_suite
        with all_native():
            report = await run_suite("wasm")
        report
        """
    )
    assert report["failed"] == {}, str(report["failed"])[:5000]


# What runs natively is where the time goes in a forward pass, a training step and a vision task's resizes and crops;
# the rest runs numpy's kernels on the same arrays. A kernel moving between the lists is a deliberate change: update
# this list with it.
NATIVE = {
    "Abs", "ActivationGrad", "Add", "ArgMax", "AvgPool", "BatchMatMul", "BroadcastTo", "Cast", "ClipByValue",
    "ClipByValueGrad", "Concat", "Conv2D", "Conv2DBackpropFilter", "Conv2DBackpropInput", "CropAndResize",
    "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropFilter", "DepthwiseConv2dNativeBackpropInput", "Equal",
    "Fill", "FloorDiv", "FusedConv2D", "FusedDepthwiseConv2D", "FusedElementwise", "GatherNd", "Log", "MaxPool",
    "MaxPoolGrad", "Maximum", "Mean", "Minimum", "Mod", "Mul", "Neg", "RealDiv", "Relu", "Relu6", "ResizeBilinear",
    "Sigmoid", "Slice", "Softmax", "Sqrt", "Square", "SquaredDifference", "Sub", "Sum", "TopK",
}  # fmt: skip


def test_backend_info_lists_each_kernel_as_native_or_fallback(node):
    info = node.run('await pe.set_backend("wasm") and pe.backend_info()')
    native_kernels, fallback = set(info["native_kernels"]), set(info["fallback_kernels"])
    print(f"wasm: {len(native_kernels)} native kernels, {len(fallback)} on numpy's: {sorted(fallback)}")
    assert native_kernels == NATIVE
    assert not native_kernels & fallback and len(fallback) > 50
    # the module downloads with the page: 95 KB with the loss's kernels, the narrow GEMM panel, a copy of the binary
    # ops' loops per op and the depthwise filters' panel paths; a jump is bloat
    assert info["fallback_reason"] is None and 10_000 < info["module_bytes"] < 100_000


def test_a_module_that_fails_its_self_test_falls_back_to_numpy_with_the_reason(node):
    """A module that compiles but computes wrong answers (here: a GEMM, whole panels or a narrow last one, that drops
    the last term of each inner product) must not be used."""
    outcome = node.run(
        """
        from types import SimpleNamespace
        from py_engine.backends.wasm import native
        from py_engine.engine import ENGINE

        def wrong(data):
            good = real(data)
            def dropping(product):
                def call(a, sai, sak, bp, c, ldc, m, n, k, *rest):
                    product(a, sai, sak, bp, c, ldc, m, n, max(k - 1, 0), *rest)
                return call
            return SimpleNamespace(**{**vars(good), "gemm": dropping(good.gemm),
                                      "gemm_narrow_edge": dropping(good.gemm_narrow_edge)})

        ENGINE.forget_backend("wasm")
        native.instantiate, real = wrong, native.instantiate
        try:
            result = [await pe.set_backend("wasm"), pe.backend_info()["name"], pe.backend_info()["fallback_reason"]]
        finally:
            native.instantiate = real
            ENGINE.forget_backend("wasm")
        result + [await pe.set_backend("wasm")]
        """
    )
    assert outcome[:2] == [False, "numpy"]
    assert "self-test failed" in outcome[2] and "BatchMatMul" in outcome[2], outcome[2]
    assert outcome[3] is True, "a good module starts again after the bad one"


def test_a_corrupt_module_falls_back_to_numpy_with_the_reason(node):
    reason = node.run(
        """
        from py_engine.backends.wasm import native
        from py_engine.engine import ENGINE
        ENGINE.forget_backend("wasm")
        native.module_bytes, real = (lambda: real() [:-9]), native.module_bytes
        try:
            result = [await pe.set_backend("wasm"), pe.backend_info()["fallback_reason"]]
        finally:
            native.module_bytes = real
            ENGINE.forget_backend("wasm")
        result
        """
    )
    assert reason[0] is False and "did not compile" in reason[1], reason


def test_kernels_stay_right_when_the_memory_grows_between_calls(node):
    """numpy's allocations grow the interpreter's memory; the module keeps no view of it, so nothing goes stale."""
    ok = node.run(
        """
        import pyodide_js
        await pe.set_backend("wasm")
        rng = np.random.default_rng(1)
        a, b = rng.standard_normal((64, 70), np.float32), rng.standard_normal((70, 33), np.float32)
        before = pe.matmul(a, b).numpy()
        memory = pyodide_js._module.resolveGlobalSymbol("memory").sym
        size = memory.buffer.byteLength
        ballast = np.ones(size, np.uint8)  # as large as the whole memory: it must grow
        grew = memory.buffer.byteLength > size
        after = pe.matmul(a, b).numpy()
        del ballast
        [grew, bool(np.array_equal(before, after)), bool(np.allclose(after, a @ b, rtol=1e-4, atol=1e-4))]
        """
    )
    assert ok == [True, True, True]


def test_a_tensors_weights_are_packed_once_and_the_packing_goes_with_the_tensor(node):
    """A convolution's filter and a product's B that are tensors (read-only buffers) are packed into the GEMM's
    panels at their first use only (a model's weights: not on every run); the packed copy goes when the tensor
    does, and backend_info() counts the bytes kept."""
    packs, same, left, kept_bytes = node.run(
        """
        import gc
        from py_engine.backends.wasm.kernels import linalg
        await pe.set_backend("wasm")
        rng = np.random.default_rng(2)
        x, w = rng.standard_normal((1, 16, 16, 8), np.float32), rng.standard_normal((3, 3, 8, 16), np.float32)
        a, b = rng.standard_normal((64, 72), np.float32), rng.standard_normal((72, 16), np.float32)
        x, w, a, b = pe.tensor(x), pe.tensor(w), pe.tensor(a), pe.tensor(b)
        packs, original = [], linalg.pack
        linalg.pack = lambda *args: packs.append(args[1:3]) or original(*args)
        try:
            runs = [(pe.conv2d(x, w, 1, "same").numpy(), pe.matmul(a, b).numpy()) for _ in range(3)]
        finally:
            linalg.pack = original
        kept, kept_bytes = len(linalg._packs), pe.backend_info()["packed_weight_bytes"]
        pe.dispose([w, b])
        gc.collect()
        same = all(np.array_equal(c, runs[0][0]) and np.array_equal(p, runs[0][1]) for c, p in runs)
        pe.dispose([x, a])
        [packs, same, kept - len(linalg._packs), kept_bytes - pe.backend_info()["packed_weight_bytes"]]
        """
    )
    assert packs == [[72, 16], [72, 16]]  # the filter (3 * 3 * 8 rows) and B, once each in three runs
    assert same and left == 2
    assert kept_bytes == 2 * 72 * 16 * 4  # 16 columns: two panels of 8, no padding


# Python for the Pyodide in Node: small_cnn() -> 64 images of 12x12x3 labelled by their brightest channel, and a
# compiled CNN over them (convolution, depthwise convolution, max pool, dense), seeded; for the fit tests here and in
# tests/test_wasm_threads.py. Call it after set_backend.
SMALL_CNN = """
def small_cnn():
    pe.set_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 12, 12, 3)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[x.mean(axis=(1, 2)).argmax(axis=1)]  # the channel with the largest mean
    model = pe.Sequential([
        pe.layers.Conv2D(8, 3, activation="relu", input_shape=(12, 12, 3)),
        pe.layers.DepthwiseConv2D(3, padding="same", activation="relu"),
        pe.layers.MaxPooling2D(2),
        pe.layers.Flatten(),
        pe.layers.Dense(3, activation="softmax"),
    ])
    model.compile(optimizer=pe.optimizers.SGD(0.2), loss="categorical_crossentropy")
    return x, y, model
"""


def test_fit_trains_a_cnn_on_wasm_as_on_numpy_with_a_flat_tensor_count(node):
    """TF.js-wasm has no Conv2DBackpropFilter; here the whole step runs natively, gives numpy's history, and the
    tensor count stays flat per epoch."""
    node.run(SMALL_CNN)
    runs = node.run(
        """
        async def train(backend):
            await pe.set_backend(backend)
            x, y, model = small_cnn()
            counts = []
            count = pe.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: counts.append(pe.memory().num_tensors))
            history = model.fit(x, y, epochs=8, batch_size=16, shuffle=False, verbose=0, callbacks=[count])
            return [history.history["loss"], counts, pe.get_backend()]
        [await train("numpy"), await train("wasm")]
        """
    )
    (want, _, _), (losses, counts, backend) = runs
    assert backend == "wasm"
    assert losses[-1] < 0.5 * losses[0], losses
    assert np.allclose(losses, want, rtol=1e-3), f"wasm {losses} against numpy {want}"
    assert len(set(counts)) == 1, f"tensor count grew during fit: {counts}"


def test_resizes_and_crops_give_numpys_results_bit_for_bit(node):
    """kernels/image.c does numpy's arithmetic in numpy's order (float32 for resizes, float64 for crops): every
    variant, float32 and int32 images, channel counts on and off the 4-per-vector path, boxes in and out of the image
    and the batch."""
    differ = node.run(
        """
        rng = np.random.default_rng(5)
        cases = []
        for shape in [(2, 5, 7, 3), (1, 9, 13, 4), (3, 1, 1, 8), (1, 40, 30, 1), (1, 33, 17, 16)]:
            floats = rng.uniform(-5, 5, shape).astype(np.float32)
            ints = rng.integers(-100, 256, shape).astype(np.int32)
            for size in [(11, 16), (3, 4), (8, 2), (1, 1), (70, 45)]:
                for align, half in [(False, False), (True, False), (False, True)]:
                    for x in (floats, ints):
                        cases.append((f"resize {shape} {x.dtype} {size} {align} {half}",
                                      lambda x=x, s=size, a=align, h=half: pe.resize_bilinear(x, s, a, h)))
        for shape in [(3, 9, 11, 2), (2, 40, 30, 3), (1, 16, 16, 4)]:
            image = rng.uniform(-3, 3, shape).astype(np.float32)
            boxes = rng.uniform(-0.3, 1.3, (20, 4)).astype(np.float32)
            owners = rng.integers(-1, shape[0] + 1, 20).astype(np.int32)
            for size in [(13, 17), (3, 4), (1, 1), (5, 1)]:
                for method in ("bilinear", "nearest"):
                    cases.append((f"crop {shape} {size} {method}", lambda i=image, s=size, m=method:
                                  pe.crop_and_resize(i, boxes, owners, s, m, -2.5)))

        async def outputs(backend):
            assert await pe.set_backend(backend)
            return [f().numpy() for _, f in cases]

        want, got = await outputs("numpy"), await outputs("wasm")
        [name for (name, _), w, g in zip(cases, want, got) if not np.array_equal(w, g, equal_nan=True)]
        """
    )  # fmt: skip
    assert differ == []


def test_hard_swish_in_the_convolutions_epilogue_gives_the_graph_nodes_values_bit_for_bit(node):
    """A fused convolution's hard_swish, (y * scale) * relu6(y + 3) applied as the module stores each output, gives
    the values of the graph's nodes run after it (the FusedElementwise chain models/graph_fusion.py takes in) bit for
    bit: 1x1 convolutions with whole and partial GEMM tiles, patches, depthwise 3x3 and 5x5 paths (channels in 4s
    and not), NaN and the infinities among the inputs; a graph's scale (1/6 in float16) and a negative one (numpy's
    epilogue after the module's linear one)."""
    differ = node.run(
        """
        from py_engine.ops import elementwise_rules as rules
        from py_engine.ops.math import clip_by_value_grad
        rng = np.random.default_rng(9)
        cases = []
        for op, x_shape, w_shape, strides in [
            (pe.fused_conv2d, (1, 9, 7, 16), (1, 1, 16, 24), 1), (pe.fused_conv2d, (1, 6, 5, 13), (1, 1, 13, 17), 1),
            (pe.fused_conv2d, (1, 11, 10, 3), (3, 3, 3, 16), 2), (pe.fused_depthwise_conv2d, (1, 12, 40, 24), (3, 3, 24, 1), 1),
            (pe.fused_depthwise_conv2d, (1, 13, 9, 18), (3, 3, 18, 1), 2),
            (pe.fused_depthwise_conv2d, (1, 16, 20, 72), (5, 5, 72, 1), 1),
        ]:
            x = rng.uniform(-4, 4, x_shape).astype(np.float32)
            x.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
            w = rng.uniform(-1, 1, w_shape).astype(np.float32)
            b = rng.uniform(-2, 2, w_shape[2] * w_shape[3] if op is pe.fused_depthwise_conv2d else w_shape[3])
            for scale in (float(np.float16(1 / 6)), -0.25):
                cases.append((f"{op.__name__} {x_shape} {w_shape} {scale}", op, x, w, b.astype(np.float32), strides, scale))

        def nodes(y, scale):
            return rules.fuse_elementwise(lambda t, s, three: (t * s) * rules.relu6(t + three), [y],
                                          pe.tensor(np.array([scale, 3], np.float32)))[0]

        assert await pe.set_backend("wasm")
        differ = []
        with all_native():
            for name, op, x, w, b, strides, scale in cases:
                got = op(x, w, b, "hard_swish", strides, "same", hard_swish_scale=scale).numpy()
                want = nodes(op(x, w, b, "linear", strides, "same"), scale).numpy()
                if not np.array_equal(got, want, equal_nan=True):
                    differ.append(name)
        differ
        """
    )  # fmt: skip
    assert differ == []


def test_a_gemms_last_panel_of_one_to_four_columns_gives_the_full_tiles_values_bit_for_bit(node):
    """linalg.gemm runs a product whose last panel has 1-4 columns (a pose model's heads: N = 17, 34, 1) by
    gemm_narrow_edge (those columns in a 4x4 tile, the whole panels by gemm 64 rows at a time): the values of gemm's
    4x8 tiles bit for bit, for rows in and across blocks of 64, A transposed or not, with and without a bias, into
    zeros or accumulated, each activation (a hard-swish's scale too), NaN and the infinities among A's values."""
    differ = node.run(
        """
        import itertools
        from py_engine.backends.wasm import native
        from py_engine.backends.wasm.kernels import linalg

        assert await pe.set_backend("wasm")
        rng = np.random.default_rng(21)
        hard_swish = int(np.float32(float(np.float16(1 / 6))).view(np.int32))
        differ = []
        for n, m, k, transposed, biased, accumulate, act in itertools.product(
            (1, 2, 4, 12, 17, 34), (3, 70, 130), (5, 96), (False, True), (False, True), (False, True),
            (0, 1, 2, hard_swish),
        ):
            a = rng.uniform(-4, 4, (k, m) if transposed else (m, k)).astype(np.float32)
            a.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
            b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
            bias = rng.uniform(-2, 2, n).astype(np.float32) if biased else None
            start = rng.uniform(-1, 1, (m, n)).astype(np.float32)
            packed = linalg.pack(b, k, n)
            got, want = start.copy(), start.copy()
            linalg.gemm(a, packed, m, n, k, got, transposed_a=transposed, bias=bias, activation=act,
                        accumulate=accumulate)
            at = want.__array_interface__["data"][0]
            native.exports.gemm(a.__array_interface__["data"][0], *((1, m) if transposed else (k, 1)),
                                packed.__array_interface__["data"][0], at, n, m, n, k,
                                bias.__array_interface__["data"][0] if biased else 0, at if accumulate else 0, act)
            if not np.array_equal(got.view(np.int32), want.view(np.int32)):
                differ.append([n, m, k, transposed, biased, accumulate, act])
        differ
        """
    )  # fmt: skip
    assert differ == []


def test_depthwise_taps_as_panels_give_the_values_of_the_taps_in_place_bit_for_bit(node):
    """A depthwise convolution 3 or 5 wide, of stride 1 or 2 and dilation 1 across, with channels in 4s reads its
    filter's taps as the GEMM's panels, four outputs at a time (kernels/nn.c depthwise_four_panels): the values of
    the same call without panels bit for bit, for filters 1-5 high, channels in whole and half panels, widths in and
    across the 3x3 rows' 16 outputs, a dilation and a stride down, with and without a bias, each activation (a
    hard-swish's scale too), NaN and the infinities among the inputs."""
    differ = node.run(
        """
        import itertools
        from py_engine.backends.wasm import native
        from py_engine.backends.wasm.kernels import linalg, nn

        assert await pe.set_backend("wasm")
        rng = np.random.default_rng(23)
        hard_swish = int(np.float32(float(np.float16(1 / 6))).view(np.int32))
        address = lambda a: a.__array_interface__["data"][0] if a is not None else 0
        differ = []
        for (kh, kw), c, width, across, (down, dilation), biased, act in itertools.product(
            ((3, 3), (5, 5), (1, 3), (5, 3), (3, 5)), (4, 12, 40), (5, 17, 40), (1, 2), ((1, 1), (2, 1), (1, 2)),
            (False, True), (0, 1, 2, hard_swish),
        ):
            x = rng.uniform(-4, 4, (2, 9, width, c)).astype(np.float32)
            x.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
            w = rng.uniform(-1, 1, (kh, kw, c, 1)).astype(np.float32)
            bias = rng.uniform(-2, 2, c).astype(np.float32) if biased else None
            pad = ((dilation * (kh // 2),) * 2, (kw // 2,) * 2)
            shape, oh, ow = nn._geometry(x.shape, (kh, kw), (down, across), pad, (dilation, 1))
            panels = linalg.pack(w, kh * kw, c)
            got, want = (np.zeros((2, oh, ow, c), np.float32) for _ in range(2))
            for out, packed in ((got, panels), (want, None)):
                native.exports.depthwise(address(x), 0, 2 * oh, address(shape), address(w), address(packed),
                                         address(bias), act, address(out))
            if not np.array_equal(got.view(np.int32), want.view(np.int32)):
                differ.append([kh, kw, c, width, across, down, dilation, biased, act])
        differ
        """
    )  # fmt: skip
    assert differ == []


def test_concat_copies_numpys_result_bit_for_bit(node):
    """kernels/shape.c copies each input's rows into its columns of the output: float32 (NaNs' payloads too) and
    int32, every axis, widths on and off the 16-per-iteration path, an empty input, large and small (on the module
    only with every size native)."""
    differ = node.run(
        """
        rng = np.random.default_rng(6)
        cases = []
        for shape in [(2, 5, 7, 3), (1, 64, 64, 17), (3, 1, 33, 16), (4097,)]:
            for axis in range(-1, len(shape)):
                for dtype in ("float32", "int32"):
                    parts = []
                    for extra in (1, 0, 5):
                        part = list(shape)
                        part[axis] = extra
                        parts.append(rng.integers(-2**31, 2**31, part, dtype=np.int64).astype(np.int32).view(dtype))
                    parts.insert(1, rng.integers(-100, 100, shape).astype(dtype))
                    cases.append((f"concat {shape} {axis} {dtype}", parts, axis))

        want, got, native = await on_every_path(
            lambda: [pe.concat([pe.tensor(p) for p in parts], axis).numpy().view(np.int32) for _, parts, axis in cases]
        )
        [name for (name, _, _), w, g, n in zip(cases, want, got, native)
         if not (np.array_equal(w, g) and np.array_equal(w, n))]
        """
    )  # fmt: skip
    assert differ == []


def test_a_losss_sums_clips_and_row_divisions_give_numpys_values_bit_for_bit(node):
    """A loss's small steps on the module (captured, or at every size with all_native): sums and means along the last
    axis in numpy's pairwise order (lengths below 8, 8 to 128 and over, split in halves; -0, NaN, infinities), a sum
    down a few rows, numpy's clip and its gradient (NaN, the bounds themselves) and a matrix against one value per
    row in both orders."""
    differ = node.run(
        """
        from py_engine.ops.math import clip_by_value_grad
        rng = np.random.default_rng(9)
        cases = []
        for shape in [(64, 10), (3, 1), (5, 7), (4, 8), (6, 24), (2, 17), (3, 128), (2, 129), (2, 300), (1000,), (7, 4099)]:
            x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(np.float32)
            cases += [(f"sum {shape}", lambda x=x: pe.sum(pe.tensor(x), -1)),
                      (f"mean {shape}", lambda x=x: pe.mean(pe.tensor(x), -1, keepdims=True)),
                      (f"sum down {shape}", lambda x=x: pe.sum(pe.tensor(x), 0))]
        special = np.array([[-0.0] * 3, [-0.0, 0.0, -0.0], [1.0, np.nan, 2.0], [np.inf, -np.inf, 1.0],
                            [np.inf, 1.0, 2.0]], np.float32)
        cases.append(("sum special", lambda: pe.sum(pe.tensor(special), -1)))
        p = rng.random((64, 10)).astype(np.float32)
        p[0, :4] = [0.0, 1.0, 1e-7, np.nan]
        p[1, :3] = [np.float32(1e-7), np.float32(1 - 1e-7), -0.0]
        dy = rng.standard_normal((64, 10)).astype(np.float32)
        cases += [("clip", lambda: pe.clip_by_value(pe.tensor(p), 1e-7, 1 - 1e-7)),
                  ("clip grad", lambda: clip_by_value_grad(pe.tensor(dy), pe.tensor(p), 1e-7, 1 - 1e-7))]
        rows = rng.standard_normal((64, 1)).astype(np.float32)
        rows[3] = 0.0
        for op in (pe.div, pe.sub, pe.mul, pe.add, pe.maximum):
            cases += [(f"{op.__name__} by rows", lambda op=op: op(pe.tensor(p), pe.tensor(rows))),
                      (f"{op.__name__} rows by", lambda op=op: op(pe.tensor(rows), pe.tensor(p)))]
        cases.append(("div 3-d by rows", lambda: pe.div(pe.tensor(p.reshape(8, 8, 10)), pe.tensor(rows.reshape(8, 8, 1)))))

        want, got, native = await on_every_path(lambda: [fn().numpy().view(np.int32) for _, fn in cases])
        [name for (name, _), w, g, n in zip(cases, want, got, native)
         if not (w.shape == g.shape == n.shape and np.array_equal(w, g) and np.array_equal(w, n))]
        """
    )  # fmt: skip
    assert differ == []


def test_the_modules_log_is_within_two_ulps_of_numpys_subnormals_included(node):
    """kernels/math.c's log4 scales a subnormal by 2^23 first; numpy's special values exactly."""
    result = node.run(
        """
        rng = np.random.default_rng(10)
        x = np.concatenate([rng.uniform(0, 1.2e-38, 1000), np.exp(rng.uniform(-103, 88, 1000)), [1e-45, 1.0]])
        x = x.astype(np.float32)
        special = np.array([0.0, -0.0, -1.0, -np.inf, np.inf, np.nan], np.float32)
        got, want = pe.log(pe.tensor(x)).numpy().astype(np.float64), np.log(x).astype(np.float64)
        [float(np.max(np.abs(got - want) / np.spacing(np.abs(want).astype(np.float32)))),
         str(pe.log(pe.tensor(special)).numpy()) == str(np.log(special))]
        """
    )
    assert result[0] <= 2 and result[1], result


def test_equal_compares_as_numpy_does(node):
    """kernels/math.c's equal: NaNs (equal to nothing), -0 and +0 (equal), vector and tail lengths, on the module and
    (small) on numpy; a broadcast stays numpy's."""
    differ = node.run(
        """
        rng = np.random.default_rng(8)
        cases = []
        for n in (4096, 4111, 17, 1):
            a = rng.integers(-3, 3, n).astype(np.float32)
            b = rng.integers(-3, 3, n).astype(np.float32)
            a[::7], b[::11], a[::5], b[::5] = np.nan, np.nan, -0.0, 0.0
            cases += [(f"equal {n}", a, b), (f"equal {n} itself", a, a)]
        cases.append(("broadcast", rng.integers(-3, 3, (64, 80)).astype(np.float32), np.float32(1)))

        want, got, native = await on_every_path(
            lambda: [pe.equal(pe.tensor(a), pe.tensor(b)).numpy() for _, a, b in cases]
        )
        [name for (name, _, _), w, g, n in zip(cases, want, got, native)
         if not (w.dtype == g.dtype == n.dtype == bool and np.array_equal(w, g) and np.array_equal(w, n))]
        """
    )  # fmt: skip
    assert differ == []


def test_argmax_finds_numpys_indices(node):
    """kernels/reduce.c's arg_max: ties (the first wins, -0 and +0 equal), NaNs (the first NaN wins), every axis, an
    inner length below 4, a multiple of 4 and neither (its last group of 4 overlaps), on the module and (small) on
    numpy; a flattened argmax stays numpy's."""
    differ = node.run(
        """
        from py_engine.ops.math import clip_by_value_grad
        rng = np.random.default_rng(9)
        cases = []
        for shape in ((64, 80), (2304, 17), (3, 37, 5), (4096,), (1, 48, 48, 17), (5, 3)):
            x = rng.integers(-2, 3, shape).astype(np.float32)
            flat = x.reshape(-1)
            flat[::13], flat[::29] = -0.0, 0.0
            cases += [(f"{shape} axis {axis}", x, axis) for axis in range(len(shape))]
            flat[::31] = np.nan
            cases += [(f"{shape} NaN axis {axis}", x.copy(), axis) for axis in range(len(shape))]
        cases.append(("flattened", rng.standard_normal((64, 80)).astype(np.float32), None))

        want, got, native = await on_every_path(
            lambda: [pe.argmax(pe.tensor(x), axis).numpy() for _, x, axis in cases]
        )
        [name for (name, _, _), w, g, n in zip(cases, want, got, native)
         if not (w.dtype == g.dtype == n.dtype and np.array_equal(w, g) and np.array_equal(w, n))]
        """
    )  # fmt: skip
    assert differ == []


def test_top_k_finds_numpys_values_and_indices(node):
    """kernels/reduce.c's top_k_rows: a detector's scores (mostly zeros, where blocks of 16 below the k-th are skipped
    whole), ties (by index, -0 and +0 equal), NaNs (after every number, also where fewer than k are numbers), rows
    of 16n and other lengths, on the module and (small) on numpy."""
    differ = node.run(
        """
        rng = np.random.default_rng(10)
        cases = []
        for shape, k in (((1, 20480), 100), ((3, 4099), 7), ((2, 37), 5), ((5000,), 1), ((64, 64), 64)):
            x = np.where(rng.random(shape) < 0.05, rng.random(shape), 0).astype(np.float32)
            x.reshape(-1)[::17] = -0.0
            cases.append((f"{shape} k {k}", x.copy(), k))
            x.reshape(-1)[::3] = np.round(x.reshape(-1)[::3] * 4) / 4  # ties
            x.reshape(-1)[::11] = np.nan
            cases.append((f"{shape} k {k} ties, NaN", x.copy(), k))
            x[..., : shape[-1] - k // 2] = np.nan  # fewer than k numbers in a row
            cases.append((f"{shape} k {k} mostly NaN", x, k))

        want, got, native = await on_every_path(
            lambda: [[t.numpy() for t in pe.top_k(pe.tensor(x), k)] for _, x, k in cases]
        )
        same = lambda a, b: all(np.array_equal(p, q, equal_nan=True) and p.dtype == q.dtype for p, q in zip(a, b))
        [name for (name, _, _), w, g, n in zip(cases, want, got, native) if not (same(w, g) and same(w, n))]
        """
    )  # fmt: skip
    assert differ == []


def test_int32_arithmetic_gives_numpys_values(node):
    """kernels/math.c's binary_i32: Add, Sub, Mul wrapping around, FloorDiv rounding down and Mod with the divisor's
    sign (negatives, a divisor of 0 giving 0, INT_MIN // -1 and % -1), same shapes and a scalar on either side, on the module and (small) on numpy; a
    broadcast of a row stays numpy's."""
    differ = node.run(
        """
        rng = np.random.default_rng(10)
        edges = np.array([-2**31, 2**31 - 1, -1, 0, 1, 7, -7, 3, -3], np.int32)
        cases = []
        for n in (100, 4096, 5000):
            a = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
            b = rng.integers(-9, 10, n).astype(np.int32)
            a[: edges.size**2], b[: edges.size**2] = np.repeat(edges, edges.size), np.tile(edges, edges.size)
            for op in ("add", "sub", "mul", "floor_div", "mod"):
                cases += [(f"{op} {n}", op, a, b), (f"{op} {n} scalar", op, a, np.array(-7, np.int32)),
                          (f"{op} {n} scalar first", op, np.array([-2**31], np.int32), b),
                          (f"{op} {n} by 0", op, a, np.zeros((), np.int32))]
        cases.append(("row broadcast", "floor_div", rng.integers(-50, 50, (64, 80)).astype(np.int32),
                      rng.integers(1, 9, (80,)).astype(np.int32)))

        want, got, native = await on_every_path(
            lambda: [getattr(pe, op)(pe.tensor(a), pe.tensor(b)).numpy() for _, op, a, b in cases]
        )
        [name for (name, *_), w, g, n in zip(cases, want, got, native)
         if not (w.dtype == g.dtype == n.dtype == np.int32 and np.array_equal(w, g) and np.array_equal(w, n))]
        """
    )  # fmt: skip
    assert differ == []


def test_gather_nd_copies_numpys_slices_and_raises_its_error(node):
    """kernels/shape.c's gather_nd: float32 (NaNs' payloads too) and int32, index tuples of every width k up to the
    rank, batch shapes of rank 0 to 2, the module's result numpy's bit for bit; an index out of range (negative or
    too large, in any position of the tuple) raises numpy's kernel's IndexError, its message naming the tuple."""
    differ, errors = node.run(
        """
        rng = np.random.default_rng(11)
        cases = []
        for shape in ((1, 48, 48, 17), (5, 3), (4097,), (2, 3, 4, 5, 6)):
            for dtype in ("float32", "int32"):
                x = rng.integers(-2**31, 2**31, shape, dtype=np.int64).astype(np.int32).view(dtype)
                for k in range(1, len(shape) + 1):
                    for batch in ((), (17,), (2, 3)):
                        ids = np.stack([rng.integers(0, d, batch) for d in shape[:k]], -1).astype(np.int32)
                        cases.append((f"{shape} {dtype} k {k} batch {batch}", x, ids))

        async def outputs(backend):
            assert await pe.set_backend(backend)
            return [pe.gather_nd(pe.tensor(x), pe.tensor(ids)).numpy().view(np.int32) for _, x, ids in cases]

        want = await outputs("numpy")
        got = await outputs("wasm")
        differ = [name for (name, *_), w, g in zip(cases, want, got) if not (w.shape == g.shape and np.array_equal(w, g))]
        errors = []
        x = pe.tensor(np.zeros((1, 48, 48, 17), np.float32))
        for bad in ([[0, 47, 48]], [[0, -1, 3]], [[1, 0, 0]], [[0, 1, 2], [0, 2, 48]]):
            ids, tensors = pe.tensor(np.array(bad, np.int32)), pe.memory().num_tensors
            try:
                pe.gather_nd(x, ids)
            except IndexError as e:
                errors.append([str(e), pe.memory().num_tensors - tensors])
        [differ, errors]
        """
    )  # fmt: skip
    assert differ == []
    assert [e[1] for e in errors] == [0, 0, 0, 0]  # no tensor left behind
    assert [e[0] for e in errors] == [
        "gather_nd: index [0, 47, 48] is out of range for the first 3 axes of x, of sizes [1, 48, 48]",
        "gather_nd: index [0, -1, 3] is out of range for the first 3 axes of x, of sizes [1, 48, 48]",
        "gather_nd: index [1, 0, 0] is out of range for the first 3 axes of x, of sizes [1, 48, 48]",
        "gather_nd: index [0, 2, 48] is out of range for the first 3 axes of x, of sizes [1, 48, 48]",
    ]


def test_casts_to_float32_round_as_numpys(node):
    """kernels/math.c's to_f32: int32 (beyond 2^24, where rounding shows) and bool arrays, vector and tail lengths,
    on the module and (small) on numpy; every other cast stays numpy's."""
    differ = node.run(
        """
        rng = np.random.default_rng(7)
        cases = []
        for n in (4096, 4099, 5000, 17, 1):
            cases.append((f"int32 {n}", rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32), "float32"))
            cases.append((f"bool {n}", rng.random(n) < 0.5, "float32"))
        cases.append(("float32 to int32", rng.uniform(-1e6, 1e6, 5000).astype(np.float32), "int32"))

        want, got, native = await on_every_path(
            lambda: [pe.cast(pe.tensor(x), dtype).numpy() for _, x, dtype in cases]
        )
        [name for (name, _, _), w, g, n in zip(cases, want, got, native)
         if not (w.dtype == g.dtype == n.dtype and np.array_equal(w, g) and np.array_equal(w, n))]
        """
    )  # fmt: skip
    assert differ == []


def test_float16_weights_widen_to_numpys_float32_bits(node):
    """kernels/math.c's f16_to_f32, which a graph model's float16 weights go through as it loads (dtypes.widen_float16):
    every one of the 65536 halves (zeros, subnormals, infinities, NaNs with their payloads) gives numpy's astype's
    bits, over vector and tail lengths and at an odd address (a weight after a uint8 one in a shard)."""
    differ = node.run(
        """
        from py_engine import dtypes
        from py_engine.backends.wasm import native
        assert await pe.set_backend("wasm")
        assert native.exports is not None and dtypes.widen_float16.__module__.endswith("wasm.kernels.math")
        every = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
        raw = np.empty(2 * every.size + 1, np.uint8)
        odd = raw[1:].view(np.float16)
        odd[:] = every
        cases = {"every half": every, "at an odd address": odd, "tail": every[3:12], "one": every[31745:31746],
                 "shaped": every[:4096].reshape(8, 16, 32)}
        [name for name, x in cases.items()
         if not (dtypes.widen_float16(x).view(np.uint32) == x.astype(np.float32).view(np.uint32)).all()
         or dtypes.widen_float16(x).shape != x.shape]
        """
    )  # fmt: skip
    assert differ == []


def test_max_pooling_lets_a_nan_win_as_numpy_does(node):
    """The max pool's taps use a pseudo-max and a NaN test (kernels/nn.c max_or_nan): a NaN anywhere in a window,
    inside the image or on its border, on the 3x3 fast path or not, gives NaN there, as numpy's kernel."""
    same = node.run(
        """
        x = np.random.default_rng(4).standard_normal((1, 9, 10, 8)).astype(np.float32)
        x[0, 4, 5, 1] = x[0, 0, 0, 6] = x[0, 8, 9, 3] = np.nan
        x[0, 2, 7, :] = -np.inf
        cases = [((3, 3), 1, "same"), ((3, 3), 2, "valid"), ((2, 2), 1, "same"), ((3, 3), 1, "valid")]

        async def outputs(backend):
            assert await pe.set_backend(backend)
            return [pe.max_pool(x, size, strides, padding).numpy() for size, strides, padding in cases]

        want, got = await outputs("numpy"), await outputs("wasm")
        [bool(np.array_equal(w, g, equal_nan=True)) and bool(np.isnan(g).any()) for w, g in zip(want, got)]
        """
    )
    assert same == [True] * 4


def test_max_pool_grad_gives_a_tie_to_the_first_tap_as_numpy_does(node):
    """MaxPoolGrad picks each window's first tap that holds the max without branching (kernels/nn.c, four channels
    at once and one by one): windows of zeros (a relu's output) and repeated values, overlapping or not, give the
    gradient to the same tap as numpy's kernel."""
    same = node.run(
        """
        rng = np.random.default_rng(5)
        cases = [((2, 2), 2, "valid"), ((3, 3), 1, "same"), ((3, 2), (1, 3), "valid")]

        async def grads(backend, x):
            assert await pe.set_backend(backend)
            # the loss (y + 1)^2: every window's gradient nonzero, an all-zero window's too
            return [pe.grad(lambda t: pe.square(pe.max_pool(t, *case) + 1).sum())(pe.tensor(x)).numpy() for case in cases]

        result = []
        for c in (8, 5):
            x = np.maximum(rng.integers(-2, 3, (2, 7, 8, c)), 0).astype(np.float32)  # mostly ties
            want = await grads("numpy", x)
            got = await grads("wasm", x)
            result += [bool(np.array_equal(a, b)) for a, b in zip(want, got)]
        result
        """
    )
    assert same == [True] * 6


def test_the_backend_explains_why_it_cannot_start_in_cpython():
    assert asyncio.run(pe.set_backend("wasm")) is False
    assert "runs where Pyodide runs" in pe.backend_info()["fallback_reason"]
    assert pe.get_backend() == "numpy"


def test_the_pointer_checks_refuse_what_the_module_must_not_touch():
    a = np.zeros((4, 6), np.float32)
    assert native.address(a, 24) == a.__array_interface__["data"][0]
    with pytest.raises(ValueError, match="C-contiguous float32"):
        native.address(a[:, ::2], 12)
    with pytest.raises(ValueError, match="C-contiguous float32"):
        native.address(a.astype(np.float64), 24)
    with pytest.raises(ValueError, match="would touch 25"):
        native.address(a, 25)
    with pytest.raises(ValueError, match="int32"):
        native.address(a, 24, native.I32)


# ---- differential tests: wasm (in Node) against numpy and webgpu (in CPython) on random shapes --------------------

# Defined in both interpreters: one op (and its gradients against a random dy) on the active backend.
DIFFERENTIAL = """
def evaluate(spec):
    import numpy as np, py_engine as pe
    inputs = [pe.tensor(np.array(values, np.float32).reshape(shape)) for shape, values in spec["inputs"]]
    op = getattr(pe, spec["op"])
    f = lambda *xs: op(*xs, **spec["kwargs"])
    y = f(*inputs)
    dy = pe.tensor(np.array(spec["dy"], np.float32).reshape(y.shape)) if spec["dy"] is not None else None
    grads = pe.grads(f)(*inputs, dy=dy) if dy is not None else []
    result = [t.numpy().ravel().tolist() for t in [y, *grads]]
    pe.dispose([*inputs, y, *grads, *([dy] if dy is not None else [])])
    return result
"""
reference = {}
exec(DIFFERENTIAL, reference)  # our own source, run in both interpreters


def _spec(op, seed, shapes, kwargs, out_shape_of, grad=True):
    rng = np.random.default_rng(seed)
    inputs = [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
    spec = {"op": op, "kwargs": kwargs, "inputs": [[list(a.shape), a.ravel().tolist()] for a in inputs], "dy": None}
    if grad:
        spec["dy"] = rng.standard_normal(out_shape_of(*inputs)).astype(np.float32).ravel().tolist()
    return spec


def _agree(node, spec, backends=("numpy", "webgpu")):
    got = node.run(f"""
        await pe.set_backend("wasm")
        with all_native():
            result = evaluate({spec!r})
        result
        """)
    for backend in backends:
        assert asyncio.run(pe.set_backend(backend)), pe.backend_info()["fallback_reason"]
        want = reference["evaluate"](spec)
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            g, w = np.array(g), np.array(w)
            scale = max(1.0, float(np.abs(w).max(initial=0)))
            assert np.allclose(g, w, rtol=1e-3, atol=1e-4 * scale), (
                f"{spec['op']} {spec['kwargs']} output {i}: wasm differs from {backend} by {np.abs(g - w).max()}"
            )


FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
sizes, small = st.integers(1, 13), st.integers(1, 5)
paddings = st.sampled_from(["same", "valid", 1, [[0, 2], [1, 0]]])
activations = st.sampled_from(["linear", "relu", "relu6", "sigmoid", "hard_swish"])


def _conv_out(x, w, strides, padding, dilations, channels):
    (n, h, wd, _), (kh, kw) = x.shape, w.shape[:2]
    sh, sw = (strides, strides) if isinstance(strides, int) else strides
    ekh, ekw = (kh - 1) * dilations + 1, (kw - 1) * dilations + 1
    if padding == "same":
        return (n, -(-h // sh), -(-wd // sw), channels)
    pads = [[padding] * 2] * 2 if isinstance(padding, int) else ([[0, 0]] * 2 if padding == "valid" else padding)
    return (n, (h + sum(pads[0]) - ekh) // sh + 1, (wd + sum(pads[1]) - ekw) // sw + 1, channels)


@FAST
@given(
    n=st.integers(1, 2), h=sizes, w=sizes, c=small, out=st.integers(1, 11), k=st.sampled_from([1, 2, 3, 5]),
    strides=st.sampled_from([1, 2, (2, 1)]), dilation=st.sampled_from([1, 2]), padding=paddings,
    activation=activations, seed=st.integers(0, 2**16),
)  # fmt: skip
def test_fused_conv2d_and_its_gradients_agree(node, n, h, w, c, out, k, strides, dilation, padding, activation, seed):
    if dilation > 1 and strides != 1:
        return  # TF.js allows dilation or strides, not both
    kwargs = {"activation": activation, "strides": strides, "padding": padding, "dilations": dilation}
    shape = _conv_out(np.empty((n, h, w, c)), np.empty((k, k)), strides, padding, dilation, out)
    if min(shape) < 1:
        return
    spec = _spec("fused_conv2d", seed, [(n, h, w, c), (k, k, c, out), (out,)], kwargs, lambda *_: shape)
    _agree(node, spec)


@FAST
@given(
    h=sizes, w=sizes, c=st.integers(1, 19), k=st.sampled_from([3, 5]), strides=st.sampled_from([1, 2]),
    padding=paddings, activation=activations, seed=st.integers(0, 2**16),
)  # fmt: skip
# an image narrower than the window: no output's window lies inside the width (the 3x3 path took one that did not)
@example(h=4, w=2, c=4, k=3, strides=2, padding="same", activation="linear", seed=0)
# the border's 16 channels at a time, then a group of 4 overlapping the one before (18 channels), and a 5x5 window
@example(h=5, w=9, c=18, k=3, strides=1, padding="same", activation="relu6", seed=1)
@example(h=7, w=9, c=16, k=5, strides=2, padding=1, activation="linear", seed=2)
def test_fused_depthwise_conv2d_and_its_gradients_agree(node, h, w, c, k, strides, padding, activation, seed):
    kwargs = {"activation": activation, "strides": strides, "padding": padding}
    shape = _conv_out(np.empty((1, h, w, c)), np.empty((k, k)), strides, padding, 1, c)
    if min(shape) < 1:
        return
    spec = _spec("fused_depthwise_conv2d", seed, [(1, h, w, c), (k, k, c, 1), (c,)], kwargs, lambda *_: shape)
    _agree(node, spec)


@FAST
@given(
    batch=st.sampled_from([(), (3,), (2, 1)]), m=st.integers(1, 37), k=st.integers(1, 41), n=st.integers(1, 37),
    transpose_a=st.booleans(), transpose_b=st.booleans(), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_matmul_and_its_gradients_agree(node, batch, m, k, n, transpose_a, transpose_b, seed):
    a = (*batch, k, m) if transpose_a else (*batch, m, k)
    b = (*batch, n, k) if transpose_b else (*batch, k, n)
    kwargs = {"transpose_a": transpose_a, "transpose_b": transpose_b}
    _agree(node, _spec("matmul", seed, [a, b], kwargs, lambda *_: (*batch, m, n)))


@FAST
@given(
    op=st.sampled_from(["max_pool", "avg_pool"]), h=sizes, w=sizes, c=st.integers(1, 9),
    size=st.sampled_from([2, 3, (3, 2)]), strides=st.sampled_from([1, 2, (1, 3)]),
    padding=st.sampled_from(["same", "valid"]), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_pooling_and_its_gradients_agree(node, op, h, w, c, size, strides, padding, seed):
    kh, kw = (size, size) if isinstance(size, int) else size
    sh, sw = (strides, strides) if isinstance(strides, int) else strides
    if padding == "valid" and (h < kh or w < kw):
        return
    shape = (2, -(-h // sh), -(-w // sw), c) if padding == "same" else (2, (h - kh) // sh + 1, (w - kw) // sw + 1, c)
    kwargs = {"filter_size": size, "strides": strides, "padding": padding}
    _agree(node, _spec(op, seed, [(2, h, w, c)], kwargs, lambda *_: shape))


@FAST
@given(
    op=st.sampled_from(["add", "sub", "mul", "div", "maximum", "minimum", "squared_difference"]),
    shape=st.lists(st.integers(1, 23), min_size=1, max_size=3),
    other=st.sampled_from(["same", "scalar", "row", "outer", "outer, the row first"]), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_binary_ops_with_a_scalar_a_bias_or_an_outer_broadcast_agree(node, op, shape, other, seed):
    shape = tuple(shape)
    column, row = shape[:-1] + (1,), shape[-1:]  # an outer broadcast: (..., 1) against (J,)
    a, b = {"same": (shape, shape), "scalar": (shape, ()), "row": (shape, row), "outer": (column, row),
            "outer, the row first": (row, column)}[other]  # fmt: skip
    _agree(node, _spec(op, seed, [a, b], {}, lambda *_: shape, grad=False), backends=("numpy",))


@FAST
@given(
    op=st.sampled_from(["sum", "mean"]), shape=st.lists(st.integers(1, 9), min_size=1, max_size=4),
    data=st.data(), keepdims=st.booleans(), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_sums_and_means_agree(node, op, shape, data, keepdims, seed):
    axes = sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
    kept = [1 if i in axes else d for i, d in enumerate(shape) if keepdims or i not in axes]
    kwargs = {"axis": axes, "keepdims": keepdims}
    _agree(node, _spec(op, seed, [tuple(shape)], kwargs, lambda *_: tuple(kept)), backends=("numpy",))


@FAST
@given(
    op=st.sampled_from(["sigmoid", "relu", "relu6", "neg", "abs", "square"]),
    shape=st.lists(st.integers(1, 23), min_size=1, max_size=3), scale=st.sampled_from([1.0, 30.0]),
    seed=st.integers(0, 2**16),
)  # fmt: skip
def test_unary_ops_and_their_gradients_agree(node, op, shape, scale, seed):
    spec = _spec(op, seed, [tuple(shape)], {}, lambda *_: tuple(shape))
    spec["inputs"][0][1] = [v * scale for v in spec["inputs"][0][1]]  # sigmoid's tails: e^-x over and under 1
    _agree(node, spec, backends=("numpy",))


def test_tier_up_calls_the_export_each_of_its_cases_is_named_after(node):
    """tier_up.run() gets V8 to optimize the exports a model's forward pass runs, before a model's first run: a case
    that takes numpy's path (too small, a wrapper's rule changed) or the threads' pool would leave its export on
    baseline code without a sign."""
    missed = node.run(
        """
        import types
        from py_engine.backends.wasm import native, tier_up
        await pe.set_backend("wasm", threads=1)
        real, called = native.exports, set()

        def logged(name, fn):
            def call(*args):
                called.add(name)
                return fn(*args)
            return call

        native.exports = types.SimpleNamespace(**{n: logged(n, f) for n, f in vars(real).items()})
        missed = []
        try:
            for name, case in tier_up.cases().items():
                called.clear()
                case()
                if name not in called:
                    missed.append([name, sorted(called)])
        finally:
            native.exports = real
        missed
        """
    )
    assert missed == []
