"""The Examples gallery as a user drives it: each example's button (in the "Examples" region) puts its code in the
editor and runs it, without an error, and it shows what it promises (read through window.playground: the example's
`result`, memory counts, chart data). After the leaking example, the Memory lab lists the leaking line and the
backend's counters."""

import json
import re

import pytest
from conftest import WEBGPU, Playground, show_panel
from playwright.sync_api import expect

RUN_MS = 300_000
EXAMPLES = [
    "Tidy vs a leak",
    "Async scopes in concurrent tasks",
    "Variables outlive scopes",
    "Train a classifier with live charts",
    "A custom WGSL kernel and its gradient",
    "A BiLSTM-CRF tagger",
    "A small Transformer",
    "Hand a tensor to WebGPU (data_to_gpu)",
    "Switch backends and warm up",
    "Classify an image from code",
    "Detect objects in a photo",
    "Pose from the camera",
    "Faces and emotions",
]


@pytest.fixture(scope="module")
def page(webgpu_browser, server_url):
    """A page of its own on webgpu (the gallery changes its editor and namespace)."""
    playground = Playground(webgpu_browser, server_url + WEBGPU)
    assert playground.backend == "webgpu", playground.info
    yield playground
    playground.close()


def run_example(playground, title):
    """Click the example's button; its `result` once the run is done (the run must end without an error)."""
    page = playground.page
    state = page.get_by_role("status", name="Run state")
    state.evaluate("line => { line.textContent = '' }")
    show_panel(page, "Examples")
    page.get_by_role("region", name="Examples").get_by_role("button", name=title, exact=True).click()
    page.wait_for_function(
        "() => /Done in|after/.test(document.querySelector('#run-state').textContent)", timeout=RUN_MS
    )
    text = page.get_by_role("log", name="Output").inner_text()
    assert state.text_content().startswith("Done in"), f"{title}: {state.text_content()}\n{text}"
    code = page.get_by_role("textbox", name="Python code").inner_text()
    assert code.startswith("# "), code[:200]  # the example's code is in the editor
    return playground.run("result"), text


def test_the_gallery_lists_every_example_with_its_description(page):
    show_panel(page.page, "Examples")
    region = page.page.get_by_role("region", name="Examples")
    region.get_by_role("button").first.wait_for()
    assert [b.text_content() for b in region.get_by_role("button").all()] == EXAMPLES
    described = region.get_by_role("button", name="Tidy vs a leak").get_attribute("aria-describedby")
    assert "pe.tidy()" in page.page.locator(f"#{described}").text_content()


def test_tidy_vs_a_leak_then_the_memory_lab_names_the_leaking_line_and_shows_the_counters(page):
    before = page.memory()["num_tensors"]
    result, output = run_example(page, "Tidy vs a leak")
    assert result == {"with_tidy": 0, "without_tidy": 90}, result
    assert "30 steps with tidy: 0 new tensors; without: 90" in output
    assert page.memory()["num_tensors"] == before + 1 + 90  # w and the leak
    plot = page.page.evaluate("playground.charts().plots.at(-1)")
    assert plot["title"] == "New tensors per step" and plot["series"]["with tidy"] == [0] * 30
    assert plot["series"]["without tidy"] == list(range(3, 91, 3))

    show_panel(page.page, "Memory lab")
    lab = page.page.get_by_role("region", name="Memory lab")
    lab.get_by_role("button", name="Find leaks").click()
    table = lab.get_by_role("table", name="Live tensors (pe.leaks())")
    table.wait_for()
    rows = [[cell.inner_text() for cell in row.get_by_role("cell").all()] for row in table.get_by_role("row").all()[1:]]
    leak = next(row for row in rows if "total = (w @ w).relu().sum()" in row[0])
    assert re.match(r"<run \d+>:\d+", leak[0]), leak
    assert leak[1] == "90" and leak[3] == "(32, 32) ()", leak  # the products and relus, and the sums
    assert lab.get_by_role("status", name="Leaks summary").text_content().startswith("91 live tensors")
    counters = lab.get_by_role("definition")
    labels = [term.text_content() for term in lab.get_by_role("term").all()]
    assert labels == ["Backend", "Pipelines compiled", "Dispatches", "Submits", "Uploads", "Readbacks"]
    values = dict(zip(labels, [c.text_content() for c in counters.all()]))
    stats = page.page.evaluate("playground.lastStats")
    assert values["Backend"] == "webgpu" and int(values["Dispatches"]) == stats["dispatches"] > 0, values
    assert values["Readbacks"].startswith(f"{stats['readbacks']} (")
    page.page.get_by_role("button", name="Clear namespace").click()
    page.page.wait_for_function("() => playground.lastMemory.num_tensors === 0")


def test_async_scopes_in_concurrent_tasks(page):
    result, output = run_example(page, "Async scopes in concurrent tasks")
    assert result == {"a": [5.0, 10.0, 15.0], "b": [30.0, 60.0, 90.0], "new_tensors": 2}
    assert "task a:" in output and "task b:" in output


def test_variables_outlive_scopes(page):
    result, _ = run_example(page, "Variables outlive scopes")
    assert result["new_tensors"] == 3 and result["loss"] < 1e-2, result  # w, xs and ys
    assert [round(v) for v in result["w"]] == [1, 2, 3]
    result, _ = run_example(page, "Variables outlive scopes")  # again: its variable is replaced, not duplicated
    assert result["new_tensors"] == 3


def test_training_a_classifier_charts_each_batch_and_epoch_with_flat_counts(page):
    result, _ = run_example(page, "Train a classifier with live charts")
    assert result["accuracy"] >= 0.9 and result["val_accuracy"] >= 0.8, result
    training = page.page.evaluate("playground.charts().training")
    assert training["epoch"]["x"] == list(range(1, 9))
    assert set(training["epoch"]["series"]) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    loss = training["epoch"]["series"]["loss"]
    assert loss[-1] < loss[0] and round(loss[-1], 3) == result["loss"], (loss, result)
    assert len(set(training["memory"]["tensors"][1:])) == 1, training["memory"]  # LeakMonitor passed too
    assert len(training["batch"]["x"]) == 8 * 5  # 144 training rows in batches of 32
    show_panel(page.page, "Charts")
    charts = page.page.get_by_role("region", name="Charts")
    expect(charts.get_by_role("figure", name="Training: loss and metrics per epoch")).to_be_visible()
    again, _ = run_example(page, "Train a classifier with live charts")
    assert again == result  # pe.set_seed(0): the same weights and shuffles, the same val_loss


def test_a_custom_wgsl_kernel_and_its_gradient(page):
    result, _ = run_example(page, "A custom WGSL kernel and its gradient")
    assert result["backend"] == "webgpu" and result["max_error"] < 1e-5, result
    assert result["slopes"][4] == 0.5 and result["slopes"][-1] > 1.0  # swish'(0) = 1/2, above 1 for large x


def test_a_bilstm_crf_tagger(page):
    result, _ = run_example(page, "A BiLSTM-CRF tagger")
    assert result["token_accuracy"] >= 0.85 and result["loss"][-1] < 0.5 * result["loss"][0], result


def test_a_small_transformer(page):
    result, _ = run_example(page, "A small Transformer")
    assert result["loss"][0] > 1.0 and result["loss"][-1] < 0.6, result


def test_data_to_gpu(page):
    result, output = run_example(page, "Hand a tensor to WebGPU (data_to_gpu)")
    assert result["buffer_bytes"] >= 4096 and result["shape"] == [1024] and result["readbacks"] == 0, result
    assert result["tensors_after_release"] == result["tensors_with_the_handle"] - 2  # the handle's ref and x
    assert "GPUBuffer of" in output


def test_data_to_gpu_on_wasm_says_it_needs_webgpu(wasm_page):
    result, output = run_example(wasm_page, "Hand a tensor to WebGPU (data_to_gpu)")
    assert result == "data_to_gpu needs the webgpu backend; this page runs on wasm: pick webgpu in the Backend menu"
    assert "Traceback" not in output and result in output


def test_switching_backends_and_warming_up(page):
    result, _ = run_example(page, "Switch backends and warm up")
    assert result["numpy"]["warmup_compiled"] == result["wasm"]["warmup_compiled"] == 0
    assert result["webgpu"]["compiled_by_the_run"] == 0, result  # warm-up compiled what the run needed
    assert abs(result["numpy"]["sum"] - result["webgpu"]["sum"]) < 1e-2
    assert abs(result["numpy"]["sum"] - result["wasm"]["sum"]) < 1e-2
    assert page.run("pe.get_backend()") == "webgpu"  # back where the page was


def test_classifying_from_code(page):
    result, output = run_example(page, "Classify an image from code")
    assert "cat" in result["label"].lower(), json.dumps(result)
    assert "%" in output
    # the classifier's tensors, loaded without pe.set_debug(True), are named in Find leaks
    show_panel(page.page, "Memory lab")
    lab = page.page.get_by_role("region", name="Memory lab")
    lab.get_by_role("button", name="Find leaks").click()
    table = lab.get_by_role("table", name="Live tensors (pe.leaks())")
    table.get_by_role("cell", name=re.compile("^the page's classifier")).first.wait_for()
    rows = [[cell.inner_text() for cell in row.get_by_role("cell").all()] for row in table.get_by_role("row").all()[1:]]
    (classifier,) = [row for row in rows if row[0].startswith("the page's classifier (")]
    assert classifier[0].endswith("/efficientnet-lite0/model.json)") and int(classifier[1]) >= 1, rows
