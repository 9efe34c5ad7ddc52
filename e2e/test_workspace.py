"""The page as a place to work, through accessible roles and names: the boot's progress bar, Classify after the model
came in through Teach, a failed upload, plurals and durations, a last-line print(), the error mark, focus after Stop,
an example asked for during a run, Restart and the Memory panel."""

import re
import time

import pytest
from conftest import BOOT_TIMEOUT_MS, Playground, button, show_panel, wait_until_idle

RUN_MS = 120_000

# Every text the status line shows and whether the boot's progress bar shows with it, from the page's first parse
# (an init script runs through the DevTools protocol, which the page's CSP does not govern).
RECORD_STATUS = """
document.addEventListener("DOMContentLoaded", () => {
  window.statusSeen = [];
  const status = document.getElementById("status"), bar = document.getElementById("boot-progress");
  const note = () => window.statusSeen.push({text: status.textContent, bar: !bar.hidden, value: bar.value});
  new MutationObserver(note).observe(status, {childList: true, characterData: true, subtree: true});
  note();
});
"""


@pytest.fixture(scope="module")
def page(webgpu_browser, server_url):
    """A page of its own (Restart, its Output log and its editor change here), as it starts by itself (wasm)."""
    context = webgpu_browser.new_context()
    context.add_init_script(RECORD_STATUS)
    page = context.new_page()
    page.goto(server_url)
    page.wait_for_function("() => window.playground && playground.state === 'ready'", timeout=BOOT_TIMEOUT_MS)
    page.wait_for_function("() => document.querySelector('#editor').shadowRoot")  # CodeMirror has loaded
    yield page
    context.close()


def run_state(page):
    return page.get_by_role("status", name="Run state")


def type_and_run(page, lines):
    """Replace the editor's code by typing `lines`, run it with Ctrl+Enter; the Output log's text once it ended."""
    box = page.get_by_role("textbox", name="Python code")
    box.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.type("\n".join(lines))
    run_state(page).evaluate("line => { line.textContent = '' }")
    page.keyboard.press("Control+Enter")
    page.wait_for_function(
        "() => /Done in|after/.test(document.querySelector('#run-state').textContent)", timeout=RUN_MS
    )
    return page.get_by_role("log", name="Output").inner_text()


def test_the_boot_shows_a_progress_bar_with_its_phase_and_the_bytes_downloaded(page):
    seen = page.evaluate("window.statusSeen")
    booting = [s for s in seen if s["text"].startswith("Starting the Python runtime:")]
    assert booting and all(s["bar"] for s in booting), seen
    phases = [s["text"].split(":")[1].split("...")[0].strip() for s in booting]
    assert "pyodide boot" in phases and phases[-1] == "engine start", phases
    assert [s["value"] for s in booting] == sorted(s["value"] for s in booting)  # the bar only moves forward
    # a first visit: the browser's cache is empty, the boot downloads Pyodide and numpy (megabytes)
    downloaded = [re.search(r"\(([\d.]+) (KiB|MiB) downloaded\)", s["text"]) for s in booting]
    assert any(m and m.group(2) == "MiB" for m in downloaded), phases
    assert not page.get_by_role("progressbar", name="Starting the Python runtime").is_visible()
    assert re.search(r"Backend: wasm .* ready in [\d.]+ s", page.get_by_role("status").first.inner_text())


def test_a_last_line_print_shows_only_what_it_prints_and_durations_read_in_seconds_from_one(page):
    text = type_and_run(page, ['print("hello")'])
    assert text == "hello"
    state = run_state(page).inner_text()
    assert re.fullmatch(r"Done in (\d{1,3} ms|\d+\.\d s)", state), state
    text = type_and_run(page, ["import time", "time.sleep(1.05)", "2 + 2"])
    state = run_state(page).inner_text()
    seconds = re.fullmatch(r"Done in (\d+\.\d) s", state)  # a loaded machine may add to the 1.05 s
    assert text.strip() == "4" and seconds and float(seconds[1]) >= 1.0, state


def test_the_error_mark_clears_when_the_code_is_edited(page):
    marks = "() => document.querySelector('#editor').shadowRoot.querySelectorAll('.cm-error-line').length"
    text = type_and_run(page, ["x = 1", "y = x / 0", "y"])
    assert "ZeroDivisionError" in text and page.evaluate(marks) == 1
    page.keyboard.press("ArrowUp")
    page.keyboard.type(" ")
    assert page.evaluate(marks) == 0


def test_stop_by_keyboard_leaves_the_focus_on_run(page):
    box = page.get_by_role("textbox", name="Python code")
    box.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("import asyncio\nawait asyncio.sleep(60)")
    page.keyboard.press("Control+Enter")
    stop = button(page, "Stop")
    page.wait_for_function("() => playground.running !== null")
    stop.focus()
    page.keyboard.press("Enter")
    wait_until_idle(page, 10_000)
    assert "KeyboardInterrupt" in page.get_by_role("log", name="Output").inner_text()
    assert button(page, "Run").evaluate("b => b === document.activeElement")


def test_a_run_that_ends_by_itself_moves_the_focus_from_stop_to_run(page):
    box = page.get_by_role("textbox", name="Python code")
    box.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("import asyncio\nawait asyncio.sleep(1.5)")
    page.keyboard.press("Control+Enter")
    page.wait_for_function("() => playground.running !== null")
    button(page, "Stop").focus()
    wait_until_idle(page, RUN_MS)
    assert button(page, "Stop").is_disabled()
    assert button(page, "Run").evaluate("b => b === document.activeElement")  # not the page's body


def test_an_example_clicked_during_a_run_is_queued_and_says_so(page):
    box = page.get_by_role("textbox", name="Python code")
    box.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("import asyncio\nprint('waiting')\nawait asyncio.sleep(60)")
    page.keyboard.press("Control+Enter")
    page.wait_for_function("() => playground.running !== null")
    show_panel(page, "Examples")
    examples = page.get_by_role("region", name="Examples")
    examples.get_by_role("button", name="Tidy vs a leak").click()
    queue = page.get_by_role("status", name="Example queue")
    queue.filter(has_text="queued").wait_for()
    assert queue.inner_text() == (
        '"Tidy vs a leak" is queued: it runs when the current run ends. Press Stop to end that run now.'
    )
    assert "asyncio.sleep(60)" in box.inner_text()  # the running code stays in the editor meanwhile
    button(page, "Stop").click()
    page.wait_for_function("() => /pe.tidy/.test(document.querySelector('#editor').shadowRoot.textContent)")
    page.wait_for_function("() => /Done in/.test(document.querySelector('#run-state').textContent)", timeout=RUN_MS)
    assert queue.inner_text() == 'Running "Tidy vs a leak", queued during the last run.'
    log = page.get_by_role("log", name="Output").inner_text()
    assert "waiting" not in log and "KeyboardInterrupt" not in log and "tensors" in log, log


def test_a_file_that_is_no_image_gives_a_message_and_no_broken_image(page, tmp_path):
    fake = tmp_path / "holiday.png"
    fake.write_text("not a picture")
    show_panel(page, "Classify")
    page.get_by_label(re.compile("Drop an image here")).set_input_files(str(fake))
    status = page.locator("#classify-status")
    page.wait_for_function("() => /Could not classify/.test(document.querySelector('#classify-status').textContent)")
    assert "holiday.png" in status.inner_text() and "PNG, JPEG or WebP" in status.inner_text()
    assert not page.get_by_role("img", name="The image being classified").is_visible()


def test_classify_works_after_the_model_came_in_through_teach(page):
    show_panel(page, "Teach")
    teach = page.get_by_role("region", name="Teach")
    teach.get_by_role("button", name="Add the Cat sample to class 1").click()
    teach_status = teach.get_by_role("status", name="Teach status")
    teach_status.filter(has_text="in 2 classes").wait_for(timeout=RUN_MS)
    assert teach_status.inner_text() == "1 image in 2 classes."
    assert teach.get_by_role("listitem", name="Class 1").get_by_text("1 image", exact=True).is_visible()
    show_panel(page, "Classify")
    classify = page.get_by_role("region", name="Classify an image")
    assert not classify.get_by_role("progressbar").is_visible()
    assert "Loading" not in classify.inner_text()
    classify.get_by_role("button", name="Cat (PNG)").click()
    page.wait_for_function("() => document.querySelectorAll('#classify-results li').length === 5", timeout=RUN_MS)
    assert "cat" in classify.get_by_role("listitem").first.inner_text()
    assert not classify.get_by_role("progressbar").is_visible()


def test_restart_resets_the_memory_panel_and_times_itself(page):
    type_and_run(page, ["kept = [pe.ones((1000,)) for _ in range(40)]", "len(kept)"])
    memory = page.get_by_role("complementary", name="Memory")
    tensors = memory.get_by_role("definition").first
    before = int(tensors.inner_text())
    assert before >= 40
    start = time.monotonic()
    button(page, "Restart").click()
    page.wait_for_function("() => playground.state === 'ready'", timeout=BOOT_TIMEOUT_MS)
    took = time.monotonic() - start
    page.wait_for_function("() => /^\\d+$/.test(document.querySelector('#mem-tensors').textContent)")
    assert int(tensors.inner_text()) <= before - 40
    status = page.get_by_role("status").first.inner_text()
    restarted = float(re.search(r"restarted in ([\d.]+) s", status).group(1))
    assert restarted <= took + 0.5, (status, took)
    assert "ready in" not in status


# each tab and the name of the region it shows
PANELS = {
    "Examples": "Examples",
    "Files": "Files",
    "Charts": "Charts",
    "Memory lab": "Memory lab",
    "Classify": "Classify an image",
    "Vision": "Vision",
    "Teach": "Teach",
}


def box(locator):
    b = locator.bounding_box()
    return b["x"], b["y"], b["x"] + b["width"], b["y"] + b["height"]


def test_the_code_and_its_output_sit_side_by_side_and_the_panels_are_tabs_the_address_remembers(page):
    page.set_viewport_size({"width": 1440, "height": 900})
    code = box(page.get_by_role("textbox", name="Python code"))
    out = box(page.get_by_role("log", name="Output"))
    assert out[0] >= code[2] and out[1] < code[3], (code, out)  # right of the code, on the same rows
    results, memory = (
        box(page.get_by_role("region", name="Results")),
        box(page.get_by_role("complementary", name="Memory")),
    )
    assert 0 <= memory[1] - results[3] <= 16, (
        results,
        memory,
    )  # the counts right under the output, however tall the code
    tabs = page.get_by_role("tablist", name="Panels").get_by_role("tab")
    assert tabs.all_inner_texts() == list(PANELS)
    for tab, region in PANELS.items():
        show_panel(page, tab)
        assert page.get_by_role("tab", name=tab).get_attribute("aria-selected") == "true"
        shown = [name for name in PANELS.values() if page.get_by_role("region", name=name, exact=True).is_visible()]
        assert shown == [region]
        assert f"panel={tab.lower().replace(' ', '-')}" in page.url
    page.get_by_role("tab", name="Vision").focus()
    page.keyboard.press("ArrowLeft")
    assert page.get_by_role("region", name="Classify an image").is_visible()
    assert page.get_by_role("tab", name="Classify").evaluate("t => t === document.activeElement")
    page.reload()
    page.wait_for_function("() => window.playground && playground.state === 'ready'", timeout=BOOT_TIMEOUT_MS)
    assert page.get_by_role("tab", name="Classify").get_attribute("aria-selected") == "true"
    assert page.get_by_role("region", name="Classify an image").is_visible()


@pytest.mark.parametrize(
    "viewport", [{"width": 1440, "height": 900}, {"width": 390, "height": 844}], ids=["wide", "phone"]
)
def test_an_example_shows_its_code_and_its_output_together(page, viewport):
    page.set_viewport_size(viewport)
    show_panel(page, "Examples")
    button = page.get_by_role("region", name="Examples").get_by_role("button", name="Variables outlive scopes")
    button.scroll_into_view_if_needed()
    page.mouse.wheel(0, 2000)  # the user scrolled down to the gallery
    run_state(page).evaluate("line => { line.textContent = '' }")
    button.click()
    page.wait_for_function("() => /Done in/.test(document.querySelector('#run-state').textContent)", timeout=RUN_MS)
    for part in (page.get_by_role("textbox", name="Python code"), page.get_by_role("log", name="Output")):
        top, bottom = box(part)[1], box(part)[3]
        assert 0 <= top < viewport["height"] and bottom > 0, (part, top, bottom)  # both on screen
    assert page.get_by_role("log", name="Output").inner_text().strip()
    page.set_viewport_size({"width": 1440, "height": 900})


def test_on_a_phone_nothing_overflows_and_every_control_is_at_least_32_px_tall(page):
    page.set_viewport_size({"width": 390, "height": 844})
    # long lines, and a dict whose display folds (a <summary>, a control too)
    type_and_run(page, ["print('x' * 600)", "print(' '.join(['word'] * 200))", "pe.ones((3, 40))", "{'a': 1, 'b': 2}"])
    assert page.get_by_role("log", name="Output").locator("summary").count() == 1
    sizes = """() => [...document.querySelectorAll('button, select, input, summary, [role="tab"]')]
        .filter((e) => e.checkVisibility() && e.getClientRects().length)
        .map((e) => [e.getAttribute('aria-label') || e.textContent.trim() || e.id || e.type,
                     e.getBoundingClientRect().height])"""
    for tab in PANELS:
        show_panel(page, tab)
        if tab == "Memory lab":  # the leak table: four columns of sites, counts, bytes and shapes
            page.get_by_role("button", name="Find leaks").click()
            page.get_by_role("table", name="Live tensors (pe.leaks())").wait_for()
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, tab
        small = [(name, h) for name, h in page.evaluate(sizes) if h < 32]
        assert not small, (tab, small)
    page.set_viewport_size({"width": 1440, "height": 900})


def test_the_backend_menu_says_what_each_choice_is_and_the_next_visit_starts_on_it(webgpu_browser, server_url):
    visitor = Playground(webgpu_browser, server_url)  # a profile of its own: nothing in its localStorage
    try:
        page = visitor.page
        assert visitor.backend == "wasm"  # SwiftShader: the page picks wasm by itself
        menu = page.get_by_role("combobox", name="Backend")
        assert [option.inner_text() for option in menu.get_by_role("option").all()] == [
            "webgpu: your GPU through WebGPU",
            "wasm: SIMD WebAssembly on the CPU",
            "numpy: the reference, on the CPU",
        ]
        status = page.get_by_role("status").first
        menu.select_option("webgpu")
        page.wait_for_function("() => /^Backend: webgpu/.test(document.querySelector('#status').textContent)")
        slow = "WebGPU here is SwiftShader, which renders on the CPU: it is slow, and wasm (our SIMD kernels on the CPU) is faster"
        assert slow in status.inner_text()

        def visit(url):
            page.goto(url)
            page.wait_for_function("() => window.playground && playground.state === 'ready'", timeout=BOOT_TIMEOUT_MS)
            return page.evaluate("playground.ready")["backend"]

        assert visit(server_url) == "webgpu"  # the menu's choice, remembered
        assert slow in status.inner_text() and menu.input_value() == "webgpu"
        assert visit(server_url + "?backend=numpy") == "numpy"  # an address that names one wins
        assert visit(server_url) == "webgpu"  # and leaves the choice as it was
    finally:
        visitor.close()
