"""The Teach panel in the page: examples of two classes (three bundled samples, two images drawn on a canvas) train
a head on EfficientNet-Lite0's features that names its own training images; the head's download (model.json + .bin)
loads back in the page, in CPython (pe.load_layers_model) and in TensorFlow.js (Node), predicting the same; the full
model's download (the image in) predicts in TensorFlow.js what the page predicts; no request carries an image.
(Pose classes, live prediction and the classes kept across a reload: e2e/test_vision.py.)"""

import asyncio
import base64
import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from conftest import show_panel
from playwright.sync_api import expect

import py_engine as pe
from tests.tfjs_node import run_tfjs

SLOW_MS = 600_000  # the first example loads the classifier: 18 MB of weights, then the pipelines compile (SwiftShader)
SAMPLES = {"Cat": "samples/chelsea.png", "Coffee": "samples/coffee.webp", "Rocket": "samples/rocket.jpg"}

# Two drawings, nothing like a photo: rings and a checkerboard, drawn on a canvas in the page.
DRAW = """(kind) => {
  const canvas = Object.assign(document.createElement("canvas"), {width: 240, height: 200});
  const g = canvas.getContext("2d");
  g.fillStyle = "#ffffff";
  g.fillRect(0, 0, 240, 200);
  if (kind === "rings") {
    g.lineWidth = 10;
    for (let r = 90; r > 0; r -= 22) {
      g.strokeStyle = r % 44 ? "#d01c1c" : "#1c3fd0";
      g.beginPath(); g.arc(120, 100, r, 0, 2 * Math.PI); g.stroke();
    }
  } else {
    g.fillStyle = "#14a03c";
    for (let y = 0; y < 200; y += 40) for (let x = (y / 40) % 2 * 40; x < 240; x += 80) g.fillRect(x, y, 40, 40);
  }
  return canvas.toDataURL("image/png");
}"""

PREDICT_ALL = """async (images) => {
  const out = [];
  for (const image of images) {
    const top = await playground.teach.predict(image);
    out.push({top, features: Array.from(await playground.teach.embed(image))});
  }
  return out;
}"""


def wait_for_text(locator, text, teach):
    """Wait until `locator` shows `text`; a failure says what the panel's status line says."""
    wait_for(lambda: expect(locator).to_contain_text(text, timeout=SLOW_MS), teach)


def wait_for(check, teach):
    """check(); a failure says what the panel's status line says."""
    try:
        check()
    except AssertionError as e:
        status = teach.get_by_role("status", name="Teach status").text_content()
        raise AssertionError(f"the Teach panel says: {status!r}") from e


def probabilities(top, n):
    """A predict() answer (best first) as a vector in class order."""
    vector = np.zeros(n, np.float32)
    for row in top:
        vector[row["index"]] = row["probability"]
    return vector


def engine_predict(folder, features):
    """Our engine in CPython (numpy) on the downloaded files, in a thread: Playwright holds this thread's loop."""

    async def predict():
        await pe.set_backend("numpy")
        model = await pe.load_layers_model(folder)
        try:
            out = model.predict(features)
            values = out.numpy()
            out.dispose()
            return values
        finally:
            model.dispose()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, predict()).result()


def tfjs_predict(folder, features, tmp_path):
    given, got = tmp_path / "features.json", tmp_path / "tfjs.json"
    given.write_text(json.dumps({"shape": list(features.shape), "data": features.ravel().tolist()}))
    run_tfjs("predict_saved_model.mjs", folder, given, got)
    (result,) = json.loads(got.read_text())
    return np.array(result["data"], np.float32).reshape(result["shape"])


# A 224x224 drawing (the full model's input size, so the page's resize keeps it as it is): its data: URL and RGBA.
SQUARE = """() => {
  const canvas = Object.assign(document.createElement("canvas"), {width: 224, height: 224});
  const g = canvas.getContext("2d");
  g.fillStyle = "#f4f4f4";
  g.fillRect(0, 0, 224, 224);
  g.fillStyle = "#1c3fd0";
  for (let k = 0; k < 7; k++) g.fillRect(16 * k, 32 * k, 80, 24);
  return [canvas.toDataURL("image/png"), Array.from(g.getImageData(0, 0, 224, 224).data)];
}"""


def download(page, teach, button, folder):
    """Click the download button; the folder its two files (model.json and one shard) were saved into."""
    downloads = []
    page.on("download", lambda d: downloads.append(d))
    teach.get_by_role("button", name=button, exact=True).click()
    status = teach.get_by_role("status", name="Teach status")  # "Saving ..." since the click, then "Downloaded ..."
    wait_for(lambda: expect(status).to_contain_text("Downloaded", timeout=SLOW_MS), teach)
    expect(teach.get_by_role("link")).to_have_count(2)
    for _ in range(200):  # the download events reach this thread while it waits in Playwright
        if len(downloads) == 2:
            break
        page.wait_for_timeout(100)
    assert len(downloads) == 2, [d.suggested_filename for d in downloads]
    folder.mkdir()
    for d in downloads:
        d.save_as(folder / d.suggested_filename)
    return folder


def test_teach_trains_on_samples_and_drawings_and_the_download_loads_back_everywhere(gpu_page, tmp_path):
    page, seen = gpu_page.page, len(gpu_page.requests)
    show_panel(page, "Teach")
    teach = page.get_by_role("region", name="Teach")
    teach.get_by_role("textbox", name="Class 1 name").fill("photo")
    teach.get_by_role("textbox", name="Class 2 name").fill("drawing")
    photos, drawings = teach.get_by_role("listitem", name="Class 1"), teach.get_by_role("listitem", name="Class 2")
    for k, sample in enumerate(SAMPLES, 1):
        teach.get_by_role("button", name=f"Add the {sample} sample to class 1").click()
        wait_for_text(photos, f"{k} image", teach)
    drawn = {kind: page.evaluate(DRAW, kind) for kind in ("rings", "checks")}
    files = [
        {"name": f"{kind}.png", "mimeType": "image/png", "buffer": base64.b64decode(url.split(",", 1)[1])}
        for kind, url in drawn.items()
    ]
    teach.get_by_label("Add images to class 2").set_input_files(files)
    wait_for_text(drawings, "2 images", teach)
    expect(teach.get_by_role("textbox", name="Class 1 name")).to_have_value("photo")

    teach.get_by_label("Epochs").fill("40")
    teach.get_by_role("button", name="Train", exact=True).click()
    status = teach.get_by_role("status", name="Teach status")
    expect(status).to_contain_text("Trained on 5 images for 40 epochs", timeout=SLOW_MS)
    events = [e for e in page.evaluate("playground.events('training')") if e["kind"] == "epoch"][-40:]
    assert [e["epoch"] for e in events] == list(range(40))
    losses = [e["logs"]["loss"] for e in events]
    assert losses[-1] < 0.2 * losses[0], losses
    chart = teach.get_by_role("img", name="Loss per epoch")
    assert chart.get_attribute("aria-label").count(",") == 39  # the chart drew every epoch

    # The head names its own training images, in the page (the drawings as data: URLs decode there too).
    images = [*SAMPLES.values(), *drawn.values()]
    truth = [0, 0, 0, 1, 1]
    answers = page.evaluate(PREDICT_ALL, images)
    assert [a["top"][0]["label"] for a in answers] == [["photo", "drawing"][c] for c in truth], answers
    ours = np.stack([probabilities(a["top"], 2) for a in answers])
    features = np.array([a["features"] for a in answers], np.float32)
    assert features.shape == (5, 1280) and np.all(np.isfinite(features))
    np.testing.assert_allclose(ours.sum(axis=1), 1, atol=1e-5)
    teach.get_by_label("Classify an image with your classes:").set_input_files(files[0])
    results = teach.get_by_role("list", name="Your classes' probabilities")
    expect(results.get_by_role("listitem").first).to_contain_text("drawing", timeout=SLOW_MS)

    teach.screenshot(path=tmp_path / "teach.png")  # trained: the examples, the loss chart, a classified drawing
    assert (tmp_path / "teach.png").stat().st_size > 10_000

    # The head alone: model.json and its weight shard, as model.save wrote them.
    folder = download(page, teach, "Download the head alone", tmp_path / "head")
    expect(status).to_contain_text("the head alone (its input is EfficientNet-Lite0's 1280 pooled features")
    model_json = json.loads((folder / "model.json").read_text())
    shards = [p for group in model_json["weightsManifest"] for p in group["paths"]]
    assert sorted(p.name for p in folder.iterdir()) == sorted(["model.json", *shards]) and shards[0].endswith(".bin")
    assert sum((folder / s).stat().st_size for s in shards) == (1280 * 2 + 2) * 4
    metadata = model_json["userDefinedMetadata"]["teach"]
    assert (
        metadata["classes"] == ["photo", "drawing"] and metadata["layer"] == "avg_pool" and metadata["kind"] == "image"
    )
    assert metadata["body"] == "efficientnet-lite0"  # the classifier the features came from
    exported = page.evaluate(
        "playground.teach.exportModel().then(({modelJson, weights}) => ({modelJson, size: weights.byteLength}))"
    )
    assert exported == {"modelJson": model_json, "size": (1280 * 2 + 2) * 4}

    # It predicts the same in CPython, in TensorFlow.js and in the page once loaded back there.
    np.testing.assert_allclose(engine_predict(folder, features), ours, rtol=0, atol=1e-4)
    np.testing.assert_allclose(tfjs_predict(folder, features, tmp_path), ours, rtol=0, atol=1e-4)
    teach.get_by_label("Load a downloaded model").set_input_files(sorted(folder.iterdir()))
    expect(status).to_contain_text("Loaded a head for photo, drawing", timeout=60_000)
    again = page.evaluate(PREDICT_ALL, images)
    np.testing.assert_allclose(np.stack([probabilities(a["top"], 2) for a in again]), ours, rtol=0, atol=1e-4)

    # The full model (EfficientNet-Lite0 and the head, a 224x224 image in) predicts in TF.js what the page predicts.
    full = download(page, teach, "Download model", tmp_path / "full")
    expect(status).to_contain_text("the full model (a 224x224 RGB image of 0..255 in, one probability per class out)")
    assert json.loads((full / "model.json").read_text())["userDefinedMetadata"]["teach"]["full"] is True
    url, rgba = page.evaluate(SQUARE)
    pixels = np.array(rgba, np.float32).reshape(1, 224, 224, 4)[..., :3]
    in_page = probabilities(page.evaluate("(url) => playground.teach.predict(url)", url), 2)
    np.testing.assert_allclose(tfjs_predict(full, pixels, tmp_path)[0], in_page, rtol=0, atol=2e-3)

    # No request carried an image: the page's own server got GETs without a body, of its files and the model's.
    requests = gpu_page.requests[seen:]
    origin = page.url.split("?")[0]
    sent = [r for r in requests if not r.url.startswith(("blob:", "data:"))]
    assert all(r.url.startswith(origin) and r.method == "GET" and r.post_data_buffer is None for r in sent), [
        (r.method, r.url[:100]) for r in sent
    ]
    assert all(len(r.url) < 300 for r in sent), [r.url[:100] for r in sent]
    assert not [e for e in gpu_page.console if e.startswith("pageerror")], gpu_page.console
