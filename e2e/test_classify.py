"""The Classify panel's path in the page: decode an image, classify it with EfficientNet-Lite0, leak nothing."""

import base64
import struct
import zlib
from pathlib import Path

import numpy as np

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "efficientnet_lite0_chelsea.npz"
MEAN, STD = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
CATS = {281, 282, 285}  # tabby, tiger cat, Egyptian cat
CLASSIFY_TIMEOUT_MS = 300_000  # the first call downloads 18 MB of weights and compiles the pipelines


def png_bytes(rgb):
    """An RGB uint8 image as PNG (zlib + struct: no imaging library in the venv)."""
    height, width, _ = rgb.shape

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + row.tobytes() for row in rgb)  # filter type 0 on every row
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    return png + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def chelsea_png():
    """scikit-image's chelsea as the model's reference input (224x224), undone back to pixels."""
    x = np.load(FIXTURE)["input"][0]
    return png_bytes(np.clip(np.round((x * STD + MEAN) * 255), 0, 255).astype(np.uint8))


def chelsea_url():
    return "data:image/png;base64," + base64.b64encode(chelsea_png()).decode()


def classify(page, url):
    return page.page.evaluate(
        """([url, ms]) => Promise.race([playground.classify(url), new Promise((_, reject) =>
               setTimeout(() => reject(new Error(`classify did not finish in ${ms} ms`)), ms))])""",
        [url, CLASSIFY_TIMEOUT_MS],
    )


def test_classify_names_the_cat_and_leaks_nothing(gpu_page):
    url = chelsea_url()
    top = classify(gpu_page, url)
    assert top[0]["index"] in CATS, top
    assert len(top) == 5 and all(set(r) == {"index", "label", "probability"} for r in top)
    probabilities = [r["probability"] for r in top]
    assert probabilities == sorted(probabilities, reverse=True) and 0 < sum(probabilities) <= 1.0001
    assert top[0]["label"] in ("tabby", "tiger cat", "Egyptian cat", f"class {top[0]['index']}")  # no labels.json
    last = gpu_page.page.evaluate("playground.lastClassification")
    assert set(last["timings"]) == {"preprocess_ms", "forward_ms", "readback_ms"}
    assert last["load"]["load_ms"] > 0 and last["load"]["warmup_ms"] > 0
    status = gpu_page.page.inner_text("#classify-status")
    assert "forward" in status and "warm-up" in status
    assert top[0]["label"] in gpu_page.page.inner_text("#classify-results")

    memory = gpu_page.memory()
    for _ in range(10):
        again = classify(gpu_page, url)
        assert [r["index"] for r in again] == [r["index"] for r in top]
    after = gpu_page.memory()
    assert (after["num_tensors"], after["num_bytes_in_gpu"]) == (memory["num_tensors"], memory["num_bytes_in_gpu"])


def test_the_panel_classifies_a_chosen_file(gpu_page):
    page = gpu_page.page
    page.set_input_files(
        "#classify-file", files=[{"name": "chelsea.png", "mimeType": "image/png", "buffer": chelsea_png()}]
    )
    page.wait_for_function(
        "() => document.querySelectorAll('#classify-results li').length === 5", timeout=CLASSIFY_TIMEOUT_MS
    )
    assert page.evaluate("playground.lastClassification.top[0].index") in CATS
    assert "readback" in page.inner_text("#classify-status")
