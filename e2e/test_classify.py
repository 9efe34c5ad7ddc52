"""The Classify panel's path in the page: decode an image, classify it with EfficientNet-Lite0, leak nothing."""

import base64
import shutil
from pathlib import Path

import pytest
from conftest import Playground, serving, show_panel

SAMPLES = Path(__file__).resolve().parent.parent / "static" / "samples"
CATS = {281, 282, 285}  # tabby, tiger cat, Egyptian cat
CLASSIFY_TIMEOUT_MS = 300_000  # the first call downloads 18 MB of weights and compiles the pipelines
RUNS = 100
PREPROCESS_DISPATCHES = 4  # unpack the RGBA words, cast, resize, normalize (a 1x1 convolution)
# EfficientNet-Lite0 folded: fused convolutions (the first: its patches copied, then their matmul), residual adds,
# pooling, the head's convolution
FORWARD_DISPATCHES = 61


def classify(page, image):
    return page.page.evaluate(
        """([image, ms]) => Promise.race([playground.classify(image), new Promise((_, reject) =>
               setTimeout(() => reject(new Error(`classify did not finish in ${ms} ms`)), ms))])""",
        [image, CLASSIFY_TIMEOUT_MS],
    )


def data_url(path):
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode()


def classify_in_a_row(page, image, runs):
    """The top-1 index of `runs` classifications of one image, back to back in the page."""
    return page.page.evaluate(
        """async ([image, runs]) => {
               const top1 = [];
               for (let i = 0; i < runs; i++) top1.push((await playground.classify(image))[0].index);
               return top1;
           }""",
        [image, runs],
    )


def test_classify_names_the_cat_and_stays_flat_over_100_runs(gpu_page):
    seen = len(gpu_page.requests)
    top = classify(gpu_page, "samples/chelsea.png")
    assert top[0]["index"] in CATS, top
    assert len(top) == 5 and all(set(r) == {"index", "label", "probability"} for r in top)
    probabilities = [r["probability"] for r in top]
    assert probabilities == sorted(probabilities, reverse=True) and 0 < sum(probabilities) <= 1.0001
    assert top[0]["label"] in ("tabby", "tiger cat", "Egyptian cat")
    last = gpu_page.page.evaluate("playground.lastClassification")
    assert set(last["timings"]) == {"preprocess_ms", "forward_ms", "readback_ms"} and last["backend"] == "webgpu"
    assert last["load"]["load_ms"] > 0 and last["load"]["warmup_ms"] > 0
    # the progress bar followed the download to its end, then hid
    progress = gpu_page.page.evaluate(
        "(({max, value, hidden}) => ({max, value, hidden}))(document.querySelector('#classify-progress'))"
    )
    assert progress == {"max": last["load"]["download_bytes"], "value": last["load"]["download_bytes"], "hidden": True}
    status = gpu_page.page.inner_text("#classify-status")
    assert "forward" in status and "warm-up" in status
    assert top[0]["label"] in gpu_page.page.inner_text("#classify-results")

    # 100 more, from a data: URL: the same answer, no tensor or GPU byte left behind, no pipeline compiled.
    url = data_url(SAMPLES / "chelsea.png")
    classify(gpu_page, url)  # the first of this image size may compile; none after it may
    memory, stats = gpu_page.memory(), gpu_page.stats()
    # the folded model replaced the unfolded one on the GPU: about the weights' size, not twice it
    assert memory["num_bytes_in_gpu"] <= 1.02 * last["load"]["download_bytes"], (memory, last["load"])
    assert classify_in_a_row(gpu_page, url, RUNS) == [top[0]["index"]] * RUNS
    after, stats_after = gpu_page.memory(), gpu_page.stats()
    assert (after["num_tensors"], after["num_bytes_in_gpu"]) == (memory["num_tensors"], memory["num_bytes_in_gpu"])
    assert stats_after["pipeline_compiles"] == stats["pipeline_compiles"]
    # each classification copies its pixels to the GPU once, 4 bytes each, and reads back its 1000 logits once; its
    # preprocessing's dispatches are submitted together, then the captured forward pass replays its own in one
    # submit
    moved = {
        k: stats_after[k] - stats[k]
        for k in ("uploads", "upload_bytes", "readbacks", "readback_bytes", "dispatches", "submits", "capture_replays")
    }
    assert moved == {
        "uploads": RUNS,
        "upload_bytes": RUNS * 451 * 300 * 4,
        "readbacks": RUNS,
        "readback_bytes": RUNS * 1000 * 4,
        "dispatches": RUNS * (PREPROCESS_DISPATCHES + FORWARD_DISPATCHES),
        "submits": RUNS * 2,
        "capture_replays": RUNS,
    }

    # The image never left the page: the log holds the model's downloads and nothing that carries a body.
    origin = gpu_page.page.url.split("?")[0]
    requests = gpu_page.requests[seen:]
    paths = [r.url.removeprefix(origin) for r in requests]
    # the log sees the worker: it asked for the shards (while the page booted, static/worker/prefetch.js)
    assert any(r.url.startswith(origin + "models/efficientnet-lite0/shards/") for r in gpu_page.requests)
    assert all(r.method == "GET" and r.post_data_buffer is None for r in requests), [
        (r.method, r.url) for r in requests
    ]
    assert all(len(r.url) < 300 and not r.url.startswith("data:") for r in requests), paths


def test_the_panel_classifies_a_chosen_file(gpu_page):
    page = gpu_page.page
    page.set_input_files("#classify-file", SAMPLES / "chelsea.png")
    page.wait_for_function(
        "() => document.querySelectorAll('#classify-results li').length === 5", timeout=CLASSIFY_TIMEOUT_MS
    )
    assert page.evaluate("playground.lastClassification.top[0].index") in CATS
    assert "readback" in page.inner_text("#classify-status")


def test_a_dropped_file_is_classified(gpu_page):
    page = gpu_page.page
    page.evaluate(
        """async () => {
               const blob = await (await fetch("samples/coffee.webp")).blob();
               const dropped = new DataTransfer();
               dropped.items.add(new File([blob], "coffee.webp", { type: "image/webp" }));
               document.querySelector("#classify-results").replaceChildren();
               document.querySelector("#classify-drop").dispatchEvent(
                   new DragEvent("drop", { dataTransfer: dropped, bubbles: true, cancelable: true }));
           }"""
    )
    page.wait_for_function(
        "() => document.querySelectorAll('#classify-results li').length === 5", timeout=CLASSIFY_TIMEOUT_MS
    )
    assert page.evaluate("playground.lastClassification.top[0].index") == 967  # espresso


def test_a_file_that_is_not_an_image_is_refused_clearly(gpu_page):
    page = gpu_page.page
    memory = gpu_page.memory()
    page.set_input_files("#classify-file", files=[{"name": "notes.png", "mimeType": "image/png", "buffer": b"hello"}])
    page.wait_for_function(
        "() => document.querySelector('#classify-status').textContent.startsWith('Could not classify')"
    )
    assert "notes.png: the browser could not decode it as an image" in page.inner_text("#classify-status")
    assert gpu_page.memory()["num_tensors"] == memory["num_tensors"]


@pytest.mark.parametrize(("sample", "expected"), [("chelsea.png", CATS), ("coffee.webp", {967}), ("rocket.jpg", {657})])
def test_each_bundled_sample_is_classified(gpu_page, sample, expected):
    page = gpu_page.page
    page.evaluate("document.querySelector('#classify-results').replaceChildren()")
    show_panel(page, "Classify")
    page.click(f"[data-sample='samples/{sample}']")
    page.wait_for_function(
        "() => document.querySelectorAll('#classify-results li').length === 5", timeout=CLASSIFY_TIMEOUT_MS
    )
    top = page.evaluate("playground.lastClassification.top")
    assert top[0]["index"] in expected, top


@pytest.mark.parametrize("mime", ["image/jpeg", "image/webp"])
def test_jpeg_and_webp_blobs_encoded_by_the_browser(gpu_page, mime):
    """The cat re-encoded by Chromium itself, then classified from the Blob."""
    top = gpu_page.page.evaluate(
        """async ([url, mime]) => {
               const image = new Image();
               image.src = url;
               await image.decode();
               const canvas = new OffscreenCanvas(image.width, image.height);
               canvas.getContext("2d").drawImage(image, 0, 0);
               const blob = await canvas.convertToBlob({ type: mime, quality: 0.9 });
               if (blob.type !== mime) throw new Error(`the browser encoded ${blob.type}, not ${mime}`);
               return playground.classify(blob);
           }""",
        ["samples/chelsea.png", mime],
    )
    assert top[0]["index"] in CATS, top


def test_a_large_photo_is_shrunk_by_the_browser_before_upload(gpu_page):
    """A 4000x2660 photo goes to the GPU as 770x512 (antialiased by the browser), and still names the cat."""
    top = gpu_page.page.evaluate(
        """async (url) => {
               const image = new Image();
               image.src = url;
               await image.decode();
               const canvas = new OffscreenCanvas(4000, 2660);
               canvas.getContext("2d").drawImage(image, 0, 0, 4000, 2660);
               return playground.classify(await canvas.convertToBlob({ type: "image/jpeg", quality: 0.9 }));
           }""",
        "samples/chelsea.png",
    )
    assert top[0]["index"] in CATS, top
    sizes = gpu_page.page.evaluate("playground.lastClassification.image")
    assert sizes == {"original": {"width": 4000, "height": 2660}, "uploaded": {"width": 770, "height": 512}}
    assert "4000x2660 shrunk to 770x512" in gpu_page.page.inner_text("#classify-status")


def test_classify_on_the_numpy_fallback_agrees_with_webgpu(gpu_page, numpy_page):
    on_gpu = classify(gpu_page, "samples/chelsea.png")
    on_numpy = classify(numpy_page, "samples/chelsea.png")
    assert numpy_page.page.evaluate("playground.lastClassification.backend") == "numpy"
    assert numpy_page.page.inner_text("#classify-status").startswith("numpy: preprocess")
    assert on_numpy[0]["index"] == on_gpu[0]["index"]
    gpu = {r["index"]: r["probability"] for r in on_gpu}
    assert all(abs(r["probability"] - gpu[r["index"]]) < 1e-3 for r in on_numpy if r["index"] in gpu)


def test_a_second_visit_takes_the_weights_from_the_browser_cache(webgpu_browser, server_url, server_log):
    """The model's files download ahead of the first classification (static/worker/prefetch.js, from the end of the
    boot's import), so loading the classifier asks the network for none; the shards' URLs name their content and are
    served immutable: the browser fetches each only once."""
    start = len(server_log())
    first = Playground(webgpu_browser, server_url)
    second = None
    try:
        assert not first.page.evaluate("playground.loadClassifier()")["cached"]
        model_files = [r.url for r in first.requests if "/models/" in r.url]
        # model.json, 5 shards, 2 sidecars, each asked for once: by the prefetch, whose bytes the loader took (a request
        # of its own would ask for a file again)
        assert len(model_files) == len(set(model_files)) == 8, model_files
        assert all("/models/efficientnet-lite0/" in url for url in model_files), model_files
        fetched = [line for line in server_log()[start:] if "/shards/" in line]
        assert len(fetched) == 5 and all('" 200' in line for line in fetched), fetched
        start = len(server_log())
        second = Playground(webgpu_browser, server_url, context=first.context)  # same browser profile, new page
        loaded = second.page.evaluate("playground.loadClassifier()")
        assert not loaded["cached"] and loaded["download_bytes"] > 18_000_000  # a new worker: it loaded the model
        again = server_log()[start:]
        assert not [line for line in again if "/shards/" in line], again  # ... with no shard from the server
        assert [line for line in again if "/models/efficientnet-lite0/model.json" in line]  # model.json revalidated
    finally:
        if second is not None:
            second.page.close()
        first.close()


def test_the_loaded_classifier_follows_a_backend_switch(gpu_page):
    """The backend menu moves the model's weights: no reload, the same answer, the GPU emptied (its buffer pool
    too) and refilled."""
    on_gpu = classify(gpu_page, "samples/chelsea.png")
    gpu_bytes = gpu_page.memory()["num_bytes_in_gpu"]
    for backend, in_gpu in (("numpy", 0), ("webgpu", gpu_bytes)):
        gpu_page.page.evaluate("name => playground.setBackend(name)", backend)
        again = classify(gpu_page, "samples/chelsea.png")
        last = gpu_page.page.evaluate("playground.lastClassification")
        assert (last["backend"], last["load"]["cached"]) == (backend, True)
        assert (
            again[0]["index"] == on_gpu[0]["index"] and abs(again[0]["probability"] - on_gpu[0]["probability"]) < 1e-3
        )
        memory = gpu_page.memory()
        assert memory["num_bytes_in_gpu"] == in_gpu
        if backend == "numpy":
            assert memory["num_bytes_in_gpu_allocated"] == 0, memory


@pytest.fixture
def broken_models(models_dir, tmp_path):
    """A copy of the classifier's folder whose first weight shard has one byte flipped (its size unchanged)."""
    shutil.copytree(models_dir / "efficientnet-lite0", tmp_path / "models" / "efficientnet-lite0")
    shard = tmp_path / "models" / "efficientnet-lite0" / "group1-shard1of5.bin"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    return tmp_path / "models"


def test_a_corrupt_or_missing_shard_is_a_clear_error_in_the_page(webgpu_browser, broken_models, tmp_path):
    with serving(broken_models, tmp_path / "server.log") as url:
        page = Playground(webgpu_browser, url)
        try:
            page.page.set_input_files("#classify-file", SAMPLES / "chelsea.png")
            page.page.wait_for_function(
                "() => document.querySelector('#classify-status').textContent.startsWith('Could not classify')",
                timeout=CLASSIFY_TIMEOUT_MS,
            )
            status = page.page.inner_text("#classify-status")
            assert "group1-shard1of5.bin" in status and "corrupt" in status and "sha256" in status, status
            assert page.page.locator("#classify-progress").is_hidden()
            assert page.memory()["num_tensors"] == 0  # nothing of the half-loaded model is left

            (broken_models / "efficientnet-lite0" / "group1-shard1of5.bin").unlink()
            with pytest.raises(Exception, match=r"group1-shard1of5\.bin") as missing:
                classify(page, "samples/chelsea.png")
            assert "not in the model's folder" in str(missing.value), missing.value  # the server's own words
            assert page.memory()["num_tensors"] == 0
        finally:
            page.close()
