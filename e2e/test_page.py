"""The playground page as a user drives it, through accessible roles and names: the CodeMirror editor (keyboard,
Ctrl+Enter, Tab, undo), output streamed while the code runs, rich results, Stop / Restart / Clear namespace, share
links and the code kept across reloads."""

import re
import time

import numpy as np
import pytest
from conftest import BOOT_TIMEOUT_MS, WEBGPU, Playground, button, editor, output, wait_until_idle

RUN_MS = 120_000


@pytest.fixture(scope="module")
def ui(webgpu_browser, server_url):
    """A page of its own (its editor, Output log and localStorage change here), on webgpu (its readbacks await the
    GPU)."""
    page = Playground(webgpu_browser, server_url + WEBGPU)
    assert page.backend == "webgpu", page.info
    yield page
    page.close()


def type_code(page, lines):
    """Replace the editor's code by typing `lines` on the keyboard (each without its indentation: the editor
    indents after a colon by itself)."""
    box = editor(page)
    box.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.type("\n".join(lines))


def run_and_wait(page):
    """Ctrl+Enter in the editor; the Output log's text once the run has ended (its state line says how)."""
    state = page.get_by_role("status", name="Run state")
    state.evaluate("line => { line.textContent = '' }")  # the last run's "Done in ..." must not count
    page.keyboard.press("Control+Enter")
    page.wait_for_function(
        "() => /Done in|after/.test(document.querySelector('#run-state').textContent)", timeout=RUN_MS
    )
    return output(page).inner_text()


def test_the_editor_takes_the_keyboard_and_ctrl_enter_runs_while_print_streams_during_an_await(ui):
    page = ui.page
    assert page.evaluate("self.crossOriginIsolated")  # COOP/COEP: the Stop button's shared buffer exists
    type_code(page, ["import asyncio", 'print("before the await")', "await asyncio.sleep(4)", 'print("after it")'])
    assert (
        editor(page).inner_text()
        == 'import asyncio\nprint("before the await")\nawait asyncio.sleep(4)\nprint("after it")'
    )
    page.keyboard.press("Control+Enter")
    log = output(page)
    page.wait_for_function("() => document.querySelector('#output').innerText.includes('before the await')")
    # the first line is in the log while the code still waits in asyncio.sleep
    assert page.evaluate("playground.running") is not None
    assert "after it" not in log.inner_text()
    assert button(page, "Stop").is_enabled() and button(page, "Run").is_disabled()
    wait_until_idle(page, RUN_MS)
    assert log.inner_text().splitlines()[:2] == ["before the await", "after it"]


def test_python_is_highlighted_tab_indents_and_undo_restores(ui):
    page = ui.page
    type_code(page, ["def f():", "return 1"])
    assert editor(page).inner_text() == "def f():\n    return 1"  # indented after the colon
    page.keyboard.press("Home")
    page.keyboard.press("Tab")
    assert editor(page).inner_text().splitlines()[1] == "        return 1"
    page.keyboard.press("Control+Z")
    assert editor(page).inner_text() == "def f():\n    return 1"
    colours = page.evaluate(
        """() => {
            const content = document.querySelector('#editor').shadowRoot.querySelector('#code');
            const colour = (text) => {
                const span = [...content.querySelectorAll('span')].find((s) => s.textContent === text);
                return span ? getComputedStyle(span).color : null;
            };
            return {keyword: colour('def'), plain: getComputedStyle(content.querySelector('.cm-line')).color,
                    number: colour('1')};
        }"""
    )
    assert colours["keyword"] and colours["number"], colours
    assert len({colours["keyword"], colours["plain"], colours["number"]}) == 3, colours


def test_model_summary_shows_as_lines_and_a_tensor_as_a_table(ui):
    page = ui.page
    type_code(
        page,
        [
            'model = pe.Sequential([pe.layers.Dense(4, input_shape=(3,), name="hidden"), pe.layers.Dense(2)])',
            "model.summary()",
        ],
    )
    text = run_and_wait(page)
    lines = text.splitlines()
    # printed by summary() (stdout) and returned by it (the last value): twice, line by line, no "\n" escapes
    assert sum(line.startswith("Total params: 26") for line in lines) == 2, text
    assert any(line.startswith("hidden (Dense)") for line in lines) and "\\n" not in text
    ui.run("model.dispose()")

    type_code(page, ["t = pe.tensor([[1.0, -2.0, 3.0], [4.0, float('nan'), 6.0]])", "t"])
    text = run_and_wait(page)
    assert "Tensor · float32 · shape [2, 3] · 24 B · on webgpu" in text
    finite = np.array([1.0, -2.0, 3.0, 4.0, 6.0])  # NaN is counted apart, left out of the statistics
    assert f"min -2 · max 6 · mean {finite.mean():.6g} · std {finite.std():.6g} · 1 NaN" in text
    cells = output(page).locator("table td").all_inner_texts()
    assert cells == ["1", "-2", "3", "4", "nan", "6"]
    ui.run("t.dispose()")


def test_values_that_break_a_naive_display_show_as_far_as_they_can(ui):
    page = ui.page
    editor(page).click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(  # pasted: the editor would indent typed lines after a colon once more
        "class Broken:\n"
        "    def __repr__(self):\n"
        '        raise ValueError("no repr for you")\n'
        "\n"
        "x = pe.ones((16,))\n"
        "big = list(range(1_000_000))\n"
        "big.append(big)\n"
        "{'profile': pe.profile(lambda: pe.tidy(lambda: (x * 2.0).sum())), 'broken': Broken(), 'big': big}"
    )
    text = run_and_wait(page)
    assert "ProfileInfo" in text and "new_tensors" in text  # pe.profile's result holds the webgpu backend
    assert "<Broken object: repr() failed: ValueError: no repr for you>" in text
    assert "list · 1000001 items" in text and "... 999951 more" in text
    assert not page.evaluate("document.querySelector('#output').classList.contains('error')")
    # runPython gives the same values as plain data
    got = ui.run("{'profile': pe.profile(lambda: pe.tidy(lambda: (x * 2.0).sum())), 'broken': Broken()}")
    assert got["profile"]["new_tensors"] == 1 and got["broken"].startswith("<Broken object: repr() failed")
    ui.run("pe.dispose(list(pe.ENGINE.live.values()))")


def test_an_error_shows_a_short_traceback_at_the_users_line(ui):
    page = ui.page
    editor(page).click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text("a = pe.ones((2, 3))\nb = pe.ones((2, 3))\nc = a @ b\n")
    text = run_and_wait(page)
    assert page.evaluate("document.querySelector('#output').classList.contains('error')")
    assert text.startswith('Traceback (most recent call last):\n  File "<run '), text
    assert re.search(r'File "<run \d+>", line 3, in <module>\n    c = a @ b', text), text
    assert "ShapeError" in text
    assert "_pyodide" not in text and "asyncio" not in text and "playground_run" not in text
    marked = page.locator(".cm-error-line")  # the editor marks line 3
    assert marked.count() == 1 and marked.inner_text() == "c = a @ b"
    ui.run("pe.dispose([a, b])")


@pytest.mark.parametrize(
    "loop",
    [
        "    while True:\n        c = (b * 2.0 + 1.0).sum()\n",  # nearly all of its time inside the engine
        "    n = 0\n    while True:\n        n += 1\n",  # pure Python
        "    await asyncio.sleep(600)\n",  # waiting at an await: no bytecode runs
        "    while True:\n        (b * 2.0).numpy()\n",  # mostly suspended in synchronous readbacks (JSPI)
    ],
    ids=["engine-loop", "python-loop", "await", "readback-loop"],
)
def test_stop_interrupts_endless_code_within_seconds_and_scopes_release_their_tensors(ui, loop):
    page = ui.page
    ui.run("import asyncio; b = pe.ones((4,))")
    before = ui.memory()
    editor(page).click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(f'print("started")\nwith pe.scope():\n    x = pe.ones((256,)) * 3.0\n{loop}')
    page.keyboard.press("Control+Enter")
    page.wait_for_function("() => document.querySelector('#output').innerText.includes('started')", timeout=RUN_MS)
    time.sleep(1.0)
    assert page.evaluate("playground.running") is not None  # still going
    stopped_at = time.perf_counter()
    button(page, "Stop").click()
    wait_until_idle(page, 10_000)
    took = time.perf_counter() - stopped_at
    assert took < 3.0, f"Stop took {took:.1f} s"
    text = output(page).inner_text()
    assert "KeyboardInterrupt: stopped by the Stop button" in text, text
    assert page.evaluate("document.querySelector('#output').classList.contains('error')")
    after = ui.memory()
    for key in ("num_tensors", "num_data_buffers", "num_bytes", "num_bytes_in_gpu"):
        assert after[key] == before[key], (key, before, after)
    # the engine goes on: a new run, a scope and tidy count exactly
    assert ui.run("with pe.scope():\n    y = pe.ones((3,)) + 1.0\npe.tidy(lambda: (b * 2.0).sum()).tolist()") == 8.0
    assert ui.memory()["num_tensors"] == before["num_tensors"] + 1
    type_code(page, ["1 + 1"])
    assert run_and_wait(page).strip() == "2"
    ui.run("pe.dispose(list(pe.ENGINE.live.values()))")


def test_clear_namespace_and_restart(ui):
    page = ui.page
    page.evaluate("playground.clearNamespace()")  # what earlier tests left
    ui.run("kept_name = pe.ones((8,)); other = [pe.zeros((2,)), pe.variable(pe.ones((2,)), name='v')]")
    alive = ui.memory()["num_tensors"]
    assert alive == 4  # pe.ones((2,)), the variable's source, is alive too: no name holds it, but no scope took it
    button(page, "Clear namespace").click()
    page.wait_for_function("() => document.querySelector('#output').innerText.includes('2 names forgotten')")
    assert "Namespace cleared: 2 names forgotten, 4 tensors disposed." in output(page).inner_text()
    assert ui.memory()["num_tensors"] == 0
    assert ui.run("'kept_name' in globals(), pe.get_backend()") == [False, "webgpu"]

    ui.run("restart_marker = 1")
    first = page.evaluate("playground.ready").get("ready_ms")
    button(page, "Restart").click()
    page.wait_for_function("() => playground.state === 'ready'", timeout=BOOT_TIMEOUT_MS)
    info = page.evaluate("playground.ready")
    assert info["backend"] == "webgpu" and info["ready_ms"] > first
    assert ui.run("'restart_marker' in globals()") is False
    type_code(page, ["2 * 21"])
    assert run_and_wait(page).strip() == "42"


def test_a_shared_link_shows_the_code_without_running_it_and_a_reload_keeps_the_code(webgpu_browser, server_url):
    author = Playground(webgpu_browser, server_url)
    try:
        type_code(author.page, ['shared_marker = "ran"', "shared_marker * 2"])
        button(author.page, "Share").click()
        author.page.wait_for_function("() => location.hash.startsWith('#code=')")
        link = author.page.url

        # A reload keeps the code (localStorage), and the link's fragment stays the author's code.
        author.page.reload()
        author.page.wait_for_function("() => playground.state === 'ready'", timeout=BOOT_TIMEOUT_MS)
        assert editor(author.page).inner_text() == 'shared_marker = "ran"\nshared_marker * 2'
    finally:
        author.close()

    reader = Playground(webgpu_browser, link)  # another browser profile: nothing in its localStorage
    try:
        page = reader.page
        page.wait_for_function("() => document.querySelector('#editor').shadowRoot")  # the editor has loaded
        assert editor(page).inner_text() == 'shared_marker = "ran"\nshared_marker * 2'
        assert "Nothing has run: press Run to run it." in output(page).inner_text()
        time.sleep(1.0)
        with pytest.raises(Exception, match="NameError: name 'shared_marker' is not defined"):
            reader.run("shared_marker")
        button(page, "Run").click()
        page.wait_for_function("() => document.querySelector('#output').innerText.includes('ranran')", timeout=RUN_MS)

        # The reader's first edit makes the code theirs: the fragment goes, a reload shows their code.
        editor(page).click()
        page.keyboard.press("Control+End")
        page.keyboard.type("\n# mine")
        page.wait_for_function("() => location.hash === ''")
        page.reload()
        page.wait_for_function("() => document.querySelector('#editor').shadowRoot", timeout=BOOT_TIMEOUT_MS)
        assert editor(page).inner_text() == 'shared_marker = "ran"\nshared_marker * 2\n# mine'
        assert not [line for line in reader.console if "Content Security Policy" in line], reader.console
    finally:
        reader.close()


def test_without_the_editor_bundle_the_plain_text_box_serves(webgpu_browser, server_url):
    context = webgpu_browser.new_context()
    try:
        page = context.new_page()
        page.route("**/vendor/editor.json", lambda route: route.fulfill(status=404, body="missing"))
        page.goto(server_url)
        page.wait_for_function("() => window.playground && playground.state === 'ready'", timeout=BOOT_TIMEOUT_MS)
        notice = page.get_by_role("alert")
        notice.wait_for()
        assert "The code editor could not load (vendor/editor.json: HTTP 404" in notice.inner_text()
        box = editor(page)
        assert box.evaluate("e => e.tagName") == "TEXTAREA"
        box.fill('print("plain")\n6 * 7')
        box.press("Control+Enter")
        page.wait_for_function("() => /Done in/.test(document.querySelector('#run-state').textContent)", timeout=RUN_MS)
        assert output(page).inner_text().splitlines() == ["plain", "42"]
    finally:
        context.close()


def test_code_that_prints_without_end_leaves_the_page_responsive_and_stops(ui):
    page = ui.page
    editor(page).click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text("i = 0\nwhile True:\n    print('line', i, 'x' * 50)\n    i += 1\n")
    page.keyboard.press("Control+Enter")
    page.wait_for_function("() => document.querySelector('#output').innerText.includes('line 0 ')", timeout=RUN_MS)
    time.sleep(3.0)
    # a timer on the main thread still fires at once: the log draws what came in once per frame
    delay_ms = page.evaluate(
        "new Promise((r) => { const t = performance.now(); setTimeout(() => r(performance.now() - t)) })"
    )
    assert delay_ms < 500, delay_ms
    stopped_at = time.perf_counter()
    button(page, "Stop").click()
    wait_until_idle(page, 10_000)
    assert time.perf_counter() - stopped_at < 3.0
    text = output(page).inner_text()
    assert text.rstrip().endswith("KeyboardInterrupt: stopped by the Stop button")
    assert len(text) < 1_100_000  # the log keeps the last 1 MB of printed text
    assert "lines printed too fast to show were left out" in text
    assert ui.run("i") > 10_000


def test_stop_ends_a_long_fit_between_its_steps(ui):
    page = ui.page
    before = ui.memory()
    editor(page).click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(
        "rng = np.random.default_rng(0)\n"
        "x, labels = rng.normal(0, 1, (64, 8)).astype(np.float32), rng.integers(0, 3, 64)\n"
        "model = pe.Sequential([pe.layers.Dense(16, activation='relu', input_shape=(8,)), pe.layers.Dense(3)])\n"
        "model.compile(optimizer='adam', loss='sparse_categorical_crossentropy')\n"
        "model.fit(x, labels, batch_size=16, epochs=100_000, verbose=0, callbacks=[pe.browser.training_progress()])\n"
    )
    page.keyboard.press("Control+Enter")
    page.wait_for_function("() => playground.events('training').length >= 3", timeout=RUN_MS)
    stopped_at = time.perf_counter()
    button(page, "Stop").click()
    wait_until_idle(page, 10_000)
    assert time.perf_counter() - stopped_at < 3.0
    assert output(page).inner_text().rstrip().endswith("KeyboardInterrupt: stopped by the Stop button")
    # every batch's scope was released: what is left are the weights and the optimizer's slots
    ui.run("model.optimizer.dispose(); model.dispose()")
    assert ui.memory()["num_tensors"] == before["num_tensors"]
