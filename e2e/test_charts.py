"""The page's charts: fit's "training" events become curves while fit runs (per epoch and per batch, with tensor
counts and GPU bytes), pe.browser.plot draws a chart, and the memory timeline samples every memory snapshot; the
chart bundle loads under the page's CSP (no violation reported)."""

import pytest
from conftest import WEBGPU, Playground, show_panel
from playwright.sync_api import expect

FIT = """
rng = np.random.default_rng(0)
labels = rng.integers(0, 2, 64)
x = (rng.normal(0, 2, (2, 4))[labels] + rng.normal(0, 0.5, (64, 4))).astype(np.float32)
model = pe.Sequential([pe.layers.Dense(8, activation="relu", input_shape=(4,)), pe.layers.Dense(2, activation="softmax")])
model.compile(optimizer=pe.optimizers.Adam(0.05), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
history = model.fit(x, labels, batch_size=16, epochs=EPOCHS, verbose=0, seed=0,
                    callbacks=[pe.browser.training_progress(every=EVERY)])
model.optimizer.dispose()
model.dispose()
history.history
"""


@pytest.fixture(scope="module")
def page(webgpu_browser, server_url):
    playground = Playground(webgpu_browser, server_url + WEBGPU)  # GPU bytes are charted too
    assert playground.page.evaluate("playground.chartsReady"), playground.console
    yield playground
    playground.close()


def figure(page, name):
    show_panel(page.page, "Charts")
    return page.page.get_by_role("region", name="Charts").get_by_role("figure", name=name)


def test_the_empty_panels_hint_is_code_that_draws_a_chart(page):
    show_panel(page.page, "Charts")
    hint = page.page.get_by_role("region", name="Charts").get_by_role("code").inner_text()
    assert hint.startswith("pe.browser.plot("), hint
    page.run(f"x, values = [1, 2, 3], [0.9, 0.5, 0.4]\n{hint}")  # as written, with its names defined
    expect(figure(page, "Loss")).to_have_count(1)


def test_fit_draws_its_curves_per_epoch_and_batch_while_it_runs(page):
    page.page.evaluate(
        "code => { window.__fit = playground.runPython(code) }", FIT.replace("EPOCHS", "6").replace("EVERY", '"batch"')
    )
    page.page.wait_for_function("() => (playground.charts().training?.epoch.x.length ?? 0) >= 2", timeout=120_000)
    assert page.page.evaluate("playground.running") is not None  # charted while fit still runs
    history = page.page.evaluate("window.__fit")
    training = page.page.evaluate("playground.charts().training")
    assert training["epochs"] == 6 and training["epoch"]["x"] == [1, 2, 3, 4, 5, 6]
    assert training["epoch"]["series"]["loss"] == history["loss"]
    assert training["epoch"]["series"]["accuracy"] == history["accuracy"]
    assert training["batch"]["x"] == list(range(1, 25))  # 4 batches of 16 a epoch
    assert len(training["batch"]["series"]["loss"]) == 24 and len(training["batch"]["tensors"]) == 24
    tensors, gpu = training["memory"]["tensors"], training["memory"]["gpu_bytes"]
    assert len(tensors) == 6 and len(set(tensors[1:])) == 1 and len(set(gpu[1:])) == 1 and gpu[0] > 0
    for name in (
        "Training: loss and metrics per epoch",
        "Training: tensors and GPU bytes per epoch",
        "Training: per batch",
    ):
        chart = figure(page, name)
        expect(chart.locator("canvas")).to_have_count(1)
        assert chart.is_visible(), name
        assert chart.bounding_box()["width"] > 300
    legend = figure(page, "Training: loss and metrics per epoch").inner_text()
    assert "loss" in legend and "accuracy" in legend


def test_a_new_fit_replaces_the_curves_and_epoch_reports_alone_draw_no_batch_chart(page):
    page.run(FIT.replace("EPOCHS", "3").replace("EVERY", '"epoch"'))
    training = page.page.evaluate("playground.charts().training")
    assert training["epochs"] == 3 and training["epoch"]["x"] == [1, 2, 3] and training["batch"]["x"] == []
    expect(figure(page, "Training: per batch")).to_have_count(0)


def test_pe_browser_plot_draws_a_chart_and_the_same_title_replaces_it(page):
    page.run('pe.browser.plot([0, 1, 2, 3], {"square": [0, 1, 4, 9], "cube": [0, 1, 8, 27]}, title="Powers")')
    page.run('pe.browser.plot({"square": [0, 1, 4, float("nan")]}, title="Powers", x_label="n")')
    plots = [p for p in page.page.evaluate("playground.charts().plots") if p["title"] == "Powers"]
    assert plots == [{"title": "Powers", "x_label": "n", "x": [0, 1, 2, 3], "series": {"square": [0, 1, 4, None]}}]
    chart = figure(page, "Powers")  # drawn at the next animation frame: expect() waits for it
    expect(chart).to_have_count(1)
    expect(chart.locator("canvas")).to_have_count(1)
    expect(chart).not_to_contain_text("cube")
    error = page.page.evaluate("playground.runPython('pe.browser.plot([[1, 2]])').catch(e => e.message)")
    assert "ShapeError: plot: series 'y' must be 1-D, got shape (1, 2)" in error


def test_the_memory_timeline_samples_every_snapshot(page):
    before = len(page.page.evaluate("playground.charts().timeline.t_s"))
    page.run("kept = [pe.ones((256,)) for _ in range(5)]")
    # a run's memory snapshot is posted after its answer: wait for it rather than race it
    page.page.wait_for_function("n => playground.charts().timeline.t_s.length > n", arg=before)
    after = page.page.evaluate("playground.charts().timeline")
    assert after["t_s"] == sorted(after["t_s"])
    last = page.memory()  # this request's snapshot arrives after its answer
    page.page.wait_for_function("n => playground.charts().timeline.tensors.at(-1) === n", arg=last["num_tensors"])
    assert page.page.evaluate("playground.charts().timeline.gpu_bytes.at(-1)") == last["num_bytes_in_gpu"]
    show_panel(page.page, "Memory lab")
    timeline = page.page.get_by_role("region", name="Memory lab").get_by_role("figure", name="Memory over the session")
    expect(timeline.locator("canvas")).to_have_count(1)
    page.run("pe.dispose(kept)")


def test_the_chart_bundle_loaded_under_the_csp(page):
    assert not [line for line in page.console if "Content Security Policy" in line or "pageerror" in line], page.console
    sheets = page.page.evaluate(
        "[...document.styleSheets].map(s => s.href || '').filter(h => h.includes('vendor/charts-'))"
    )
    assert len(sheets) == 1 and sheets[0].endswith(".css")
