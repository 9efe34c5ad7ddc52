"""Our converted EfficientNet-Lite0 in the real TensorFlow.js (npm @tensorflow/tfjs 4.22.0) in the e2e Chromium.

TF.js loads the model from the server's /models endpoint (model.json with our "sha256" lists, then the shards,
as a CDN serves them) and classifies the reference input; its top-5 must be our engine's (CPython, numpy
backend, same folder) and its logits close to ours. TF.js runs on its cpu backend: plain float32 JS, the
reference implementation, with no GPU precision (WebGL textures on SwiftShader) in the comparison.
"""

import asyncio
import base64
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

import py_engine as pe

REPO = Path(__file__).resolve().parent.parent
TF_JS = REPO / "tests" / "tfjs" / "node_modules" / "@tensorflow" / "tfjs" / "dist" / "tf.min.js"
FIXTURE = REPO / "tests" / "fixtures" / "efficientnet_lite0_chelsea.npz"
BLANK = "tfjs-interop.html"  # a same-origin page of nothing but TF.js, answered by the test itself
PREDICT_TIMEOUT_MS = 300_000

PREDICT = """async ([url, inputBase64, shape, ms]) => {
  await tf.setBackend('cpu');
  const bytes = Uint8Array.from(atob(inputBase64), (c) => c.charCodeAt(0));
  const run = async () => {
    const model = await tf.loadLayersModel(url);
    const logits = tf.tidy(() => model.predict(tf.tensor(new Float32Array(bytes.buffer), shape)));
    const values = Array.from(await logits.data());
    logits.dispose();
    model.dispose();
    return {values, backend: tf.getBackend(), version: tf.version.tfjs};
  };
  return Promise.race([run(), new Promise((_, reject) =>
    setTimeout(() => reject(new Error(`TF.js did not predict within ${ms} ms`)), ms))]);
}"""


def engine_logits(folder, x):
    """Our engine's logits, in a thread of its own: Playwright's sync API holds this thread's event loop."""

    async def predict():
        await pe.set_backend("numpy")
        model = await pe.load_layers_model(folder)
        try:
            out = model.predict(x)
            logits = out.numpy()[0]
            out.dispose()
            return logits
        finally:
            model.dispose()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, predict()).result()


def top5(logits):
    return np.argsort(-logits, kind="stable")[:5].tolist()


def test_tfjs_classifies_our_converted_model_as_our_engine_does(webgpu_browser, server_url, models_dir):
    assert TF_JS.is_file(), f"no {TF_JS}: run npm ci --prefix tests/tfjs (in the repo root; scripts/test.sh does it)"
    x = np.load(FIXTURE)["input"]
    context = webgpu_browser.new_context()
    try:
        page = context.new_page()
        page.route(server_url + BLANK, lambda route: route.fulfill(content_type="text/html", body="<!doctype html>"))
        page.goto(server_url + BLANK)
        page.add_script_tag(path=TF_JS)
        got = page.evaluate(
            PREDICT,
            [
                server_url + "models/efficientnet-lite0/model.json",
                base64.b64encode(x.astype("<f4").tobytes()).decode(),
                list(x.shape),
                PREDICT_TIMEOUT_MS,
            ],
        )
    finally:
        context.close()
    assert (got["backend"], got["version"]) == ("cpu", "4.22.0")
    theirs, ours = np.array(got["values"], np.float32), engine_logits(models_dir / "efficientnet-lite0", x)
    assert theirs.shape == ours.shape == (1000,)
    assert top5(theirs) == top5(ours), (top5(theirs), top5(ours))
    np.testing.assert_allclose(theirs, ours, rtol=0, atol=1e-3)
