"""The wasm backend in the page, as a person meets it: on this machine's SwiftShader (WebGPU on the CPU) the page
starts on our SIMD kernels by itself and its status line says why; the conformance suite passes there; a sample
classified on wasm gets numpy's top 5 (switched through the Backend menu); fit keeps its tensor count flat; a module
the browser cannot compile leaves the page on numpy with the reason in the status line."""

import json
import re
import textwrap
import time

from conftest import Playground, show_panel
from playwright.sync_api import expect
from test_classify import CATS, CLASSIFY_TIMEOUT_MS
from test_training import TRAIN

SWITCH_TIMEOUT_MS = 60_000
IDLE_TIMEOUT_S = 60
# the device's memory (GB, as the browser says it), Pyodide's heap, and how far compile_ahead grows it from what size
HEAP = """[navigator.deviceMemory ?? 0, pyodide._module.HEAPU8.length,
         ...["HEAP_AHEAD_MB", "HEAP_AHEAD_DEVICE_GB"].map((name) => pyodide.pyimport("playground_ahead")[name])]"""
# what compile_ahead leaves, read in the page's worker (no request: it runs once no request has run for 3 s)
AHEAD = """JSON.parse(pyodide.runPython(`import json, py_engine as pe
s, m = pe.stats(), pe.memory()
json.dumps([s["capture_replays"], s["capture_programs"], m.num_tensors, m.num_bytes_in_programs,
            pe.backend_info()["packed_weight_bytes"]])`))"""
EPOCHS = 6


def status(page):
    """The page's status line, where a person reads it: the status in the page's header."""
    return page.get_by_role("banner").get_by_role("status")


def backend_menu(page):
    return page.get_by_role("combobox", name="Backend")


def switch(page, name):
    """Pick `name` in the Backend menu; returns the status line once the page has switched (to it, or to numpy)."""
    backend_menu(page).select_option(name)
    expect(backend_menu(page)).to_be_enabled(timeout=SWITCH_TIMEOUT_MS)
    expect(status(page)).to_have_text(re.compile(r"^Backend: "))
    return status(page).inner_text()


def test_on_swiftshader_the_page_starts_on_wasm_and_says_why(wasm_page):
    page, info = wasm_page.page, wasm_page.info
    assert info["backend"] == "wasm" and info["adapter"] is None and info["fallback_reason"] is None, info
    assert info["details"]["native_kernels"] and info["details"]["module_bytes"] > 0
    assert info["details"]["simd"] == "relaxed", "Chromium has relaxed SIMD (114+): the page runs kernels_relaxed.wasm"
    line = status(page).inner_text()
    assert line.startswith("Backend: wasm · "), line
    assert line.endswith(
        " — WebGPU here is SwiftShader, a CPU renderer; our SIMD kernels are faster. Switch in the Backend menu."
    ), line
    assert backend_menu(page).input_value() == "wasm"
    assert [o.get_attribute("value") for o in backend_menu(page).get_by_role("option").all()] == [
        "webgpu",
        "wasm",
        "numpy",
    ]
    # no WebGPU work at boot: the classifier's pipelines were neither listed nor compiled ahead
    assert not [r.url for r in wasm_page.requests if "/pipelines/" in r.url]
    assert wasm_page.run("import js; js.peBridge.precompiled().to_py()")["listed"] == 0
    # the SIMD module compiled under the page's CSP ('wasm-unsafe-eval', which Pyodide needs anyway)
    assert not [line for line in wasm_page.console if "Content Security Policy" in line], wasm_page.console


def test_the_conformance_suite_passes_on_wasm_in_the_page(wasm_page):
    report = wasm_page.run(
        """
        import time
        from py_engine.testing.conformance import all_cases, run_suite
        started = time.perf_counter()
        report = await run_suite("wasm")
        {**report, "total": len(all_cases()), "seconds": time.perf_counter() - started, "backend": pe.get_backend()}
        """,
        timeout_s=600,
    )
    print(f"wasm conformance in the page: {report['passed']}/{report['total']} passed in {report['seconds']:.0f} s")
    assert report["total"] > 1000 and report["backend"] == "wasm"
    assert report["failed"] == {}, json.dumps(report["failed"], indent=1)[:20000]
    assert report["passed"] == report["total"]


ON_TWO_THREADS = """
from py_engine.backends.wasm import threads
assert await pe.set_backend("wasm", threads=2), pe.backend_info()
limits = threads.MIN_WORK, threads.MIN_INTENSITY
threads.MIN_WORK = threads.MIN_INTENSITY = 0  # every op the pool can split, however small
before = pe.backend_info()["threaded_calls"]
try:
CODE
finally:
    threads.MIN_WORK, threads.MIN_INTENSITY = limits
    on_two = pe.backend_info()
    await pe.set_backend("wasm", threads=1)
{**result, "threads": on_two["threads"], "calls": on_two["threaded_calls"] - before}
"""


def on_two_threads(wasm_page, code, **options):
    """`code` (which sets `result`, a dict) on two threads, every op the pool can split sent there; result with
    "threads" (the pool's) and "calls" (the calls split over the threads)."""
    return wasm_page.run(
        ON_TWO_THREADS.replace("CODE", textwrap.indent(textwrap.dedent(code).strip(), "    ")), **options
    )


def test_the_conformance_suite_passes_on_two_threads_in_the_page(wasm_page):
    report = on_two_threads(
        wasm_page,
        """
        from py_engine.testing.conformance import all_cases, run_suite
        result = {**await run_suite("wasm"), "total": len(all_cases())}
        """,
        timeout_s=600,
    )
    assert report["failed"] == {}, json.dumps(report["failed"], indent=1)[:20000]
    assert report["passed"] == report["total"] > 1000
    assert report["threads"] == 2 and report["calls"] > 300, report["calls"]


# resolves once the page shows another classification than window.previousClassification (wait_for_function would
# evaluate a string, which the page's CSP forbids)
NEW_CLASSIFICATION = """(ms) => new Promise((resolve, reject) => {
  const start = performance.now();
  const tick = () => playground.lastClassification !== window.previousClassification ? resolve()
    : performance.now() - start > ms ? reject(new Error(`no new classification in ${ms} ms`)) : setTimeout(tick, 50);
  tick();
})"""


def classify_the_cat(page, backend):
    """Classify the cat sample in the Classify panel: (its top-5 rows as shown, the top 5 with probabilities, the
    timing line)."""
    show_panel(page, "Classify")
    panel = page.get_by_role("region", name="Classify an image")
    page.evaluate("window.previousClassification = playground.lastClassification")
    panel.get_by_role("button", name="Cat (PNG)").click()
    # this click's answer, not the last one's still on screen
    page.evaluate(NEW_CLASSIFICATION, CLASSIFY_TIMEOUT_MS)
    timing = panel.get_by_text(re.compile(rf"^{backend}: preprocess "))
    expect(timing).to_be_visible(timeout=CLASSIFY_TIMEOUT_MS)
    rows = panel.get_by_role("list").get_by_role("listitem").all_inner_texts()
    top = page.evaluate("playground.lastClassification.top")
    return [re.sub(r": [\d.]+%$", "", row) for row in rows], top, timing.inner_text()


def test_a_sample_classified_on_wasm_gets_numpys_top_5(wasm_page):
    page = wasm_page.page
    rows, on_wasm, timing = classify_the_cat(page, "wasm")
    assert on_wasm[0]["index"] in CATS and len(rows) == 5, rows
    # wasm computes in forward and reads back from the host, as numpy does: no GPU work waits in the readback
    assert " · readback " in timing and "GPU" not in timing, timing
    assert switch(page, "numpy").startswith("Backend: numpy")
    rows_on_numpy, on_numpy, _ = classify_the_cat(page, "numpy")
    assert rows == rows_on_numpy
    assert max(abs(a["probability"] - b["probability"]) for a, b in zip(on_wasm, on_numpy)) < 1e-3
    assert switch(page, "wasm").startswith("Backend: wasm")


def test_on_two_threads_the_classifier_gets_one_threads_top_5(wasm_page):
    """The page is cross-origin isolated, so the pool of workers starts (static/worker/wasm_pool.js): the classification
    splits its convolutions over two threads and gets one thread's answer, its captured forward pass recorded on the
    pool (split steps: the pool's calls replayed without the wrappers, the activations left in its memory)."""
    page = wasm_page.page
    threads = 'await pe.set_backend("wasm", threads=THREADS) and pe.backend_info()'
    one = wasm_page.run(threads.replace("THREADS", "1"))
    assert one["threads"] == 1 and one["threads_reason"] == "one thread was asked for", one
    rows, on_one, _ = classify_the_cat(page, "wasm")
    two = wasm_page.run(threads.replace("THREADS", "2"))
    try:
        assert two["threads"] == 2 and two["threads_reason"] is None, two
        rows_on_two, on_two, _ = classify_the_cat(page, "wasm")
        calls = wasm_page.run('pe.backend_info()["threaded_calls"]') - two["threaded_calls"]
        split_steps = wasm_page.run('pe.stats()["capture_split_steps"]')
    finally:
        wasm_page.run('await pe.set_backend("wasm", threads=1)')
    assert rows_on_two == rows and on_two == on_one, (on_two, on_one)
    assert calls >= 30, f"the forward pass's big convolutions went to the pool: {calls} calls"
    assert split_steps >= 30, f"and the classifier's program calls the pool: {split_steps} split steps"


def test_fit_on_wasm_learns_with_a_flat_tensor_count(wasm_page):
    result = wasm_page.run(TRAIN.replace("EPOCHS", str(EPOCHS)))
    assert result["backend"] == "wasm"
    loss = result["history"]["loss"]
    assert loss[-1] < 0.5 * loss[0], loss
    events = [e for e in wasm_page.page.evaluate("playground.events('training')") if e["kind"] == "epoch"][-EPOCHS:]
    assert [e["epoch"] for e in events] == list(range(EPOCHS))
    tensors = [e["memory"]["num_tensors"] for e in events]
    assert len(set(tensors[1:])) == 1, tensors
    assert result["after"] == result["before"] + result["slots"]  # the optimizer's slots, nothing else
    assert result["disposed"] == result["before"] - result["weights"]


def test_fit_on_two_threads_gives_one_threads_losses_with_flat_memory(wasm_page):
    fit = """
    pe.set_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 12, 12, 3)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[x.mean(axis=(1, 2)).argmax(axis=1)]
    model = pe.Sequential([pe.layers.Conv2D(8, 3, activation="relu", input_shape=(12, 12, 3)),
                           pe.layers.DepthwiseConv2D(3, padding="same", activation="relu"), pe.layers.MaxPooling2D(2),
                           pe.layers.Flatten(), pe.layers.Dense(3, activation="softmax")])
    model.compile(optimizer=pe.optimizers.SGD(0.2), loss="categorical_crossentropy")
    seen = []
    memory = lambda epoch, logs: seen.append([pe.memory().num_tensors, pe.memory().num_bytes_in_threads])
    history = model.fit(x, y, epochs=6, batch_size=16, shuffle=False, verbose=0,
                        callbacks=[pe.callbacks.LambdaCallback(on_epoch_end=memory)])
    model.dispose()
    result = {"loss": history.history["loss"], "seen": seen, "left": pe.memory().num_bytes_in_threads}
    """
    one = wasm_page.run(f'await pe.set_backend("wasm", threads=1)\n{textwrap.dedent(fit)}\nresult')
    two = on_two_threads(wasm_page, fit)
    assert two["threads"] == 2 and two["calls"] >= 6 * 4 * 6, two["calls"]
    assert two["loss"] == one["loss"], (two["loss"], one["loss"])
    # tensors, and the weights kept in the shared memory (those of the step's update, not yet used, are not)
    assert {tuple(s) for s in two["seen"][1:]} == {tuple(two["seen"][1])}, two["seen"]
    assert two["left"] == 0


def test_a_module_that_does_not_compile_leaves_numpy_with_the_reason_in_the_status_line(wasm_page):
    """The module ships in the engine wheel; cut short, it is what a browser that cannot compile it sees."""
    page = wasm_page.page
    switch(page, "numpy")
    wasm_page.run(
        """
        from py_engine.backends.wasm import native
        pe.ENGINE.forget_backend("wasm")  # the next start reads the module again
        real_module_bytes = native.module_bytes
        native.module_bytes = lambda: real_module_bytes()[:-9]
        """
    )
    try:
        line = switch(page, "wasm")
        assert line.startswith("Backend: numpy · "), line
        assert " — running on numpy because backend 'wasm' could not start: " in line, line
        assert "did not compile" in line, line
        assert backend_menu(page).input_value() == "numpy"
        started, reason = wasm_page.run('[await pe.set_backend("wasm"), pe.backend_info()["fallback_reason"]]')
        assert started is False and "did not compile" in reason, reason
    finally:
        wasm_page.run("native.module_bytes = real_module_bytes")
    line = switch(page, "wasm")
    assert line.startswith("Backend: wasm · ") and "numpy" not in line, line


def test_once_idle_the_page_compiles_the_kernels_ahead_and_keeps_nothing(webgpu_browser, server_url):
    """V8 optimizes a WebAssembly function only once it has run a while: once idle, the worker runs the kernels and a
    small graph model's load, recording and two replays (playground_ahead.compile_ahead), so that a first model's
    load and warm-up do not run them on baseline code, and grows Pyodide's heap where the device has the memory
    (navigator.deviceMemory); it leaves no tensor, program or packed panel behind."""
    page = Playground(webgpu_browser, server_url)
    try:
        assert page.backend == "wasm", page.info
        worker = next(w for w in page.page.workers if "/worker.js" in w.url)
        replays, programs, tensors, *held = worker.evaluate(AHEAD)
        assert replays == programs == 0 and held == [0, 0]
        device_gb, heap, ahead_mb, from_gb = worker.evaluate(HEAP)
        deadline = time.monotonic() + IDLE_TIMEOUT_S
        while worker.evaluate(AHEAD)[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert worker.evaluate(AHEAD) == [2, 0, tensors, 0, 0]
        grown = worker.evaluate(HEAP)[1] - heap  # by less than asked where the heap had room already
        half = ahead_mb << 19
        assert grown >= half if device_gb >= from_gb else grown < half, (device_gb, grown)
        assert not [line for line in page.console if "compiled ahead" in line], page.console
    finally:
        page.close()
