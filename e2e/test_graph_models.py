"""The graph models of docs/models.md in the page: the server lists them beside the classifier, the Classify panel's
Model menu (it loads layers models) does not offer them, and pe.load_graph_model loads them from /models and runs
them on a real photo on wasm and on webgpu, giving what the same model gives on numpy in CPython, with memory flat
over repeated executes."""

import asyncio
import base64
import json
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from conftest import show_panel

import py_engine as pe
from app.graph_models import MODELS
from tests.graph_model_cases import model_inputs

REPEATS = 4
# the page's kernels (SIMD wasm, WGSL) and numpy's sum in different orders: float32 rounding, grown through the layers
RTOL, ATOL = 2e-3, 2e-3
RUN_TIMEOUT_S = 600  # blazeface on SwiftShader, a CPU renderer, on 2 shared cores

# Runs in the page: the model from the server, executed REPEATS times on the inputs, each run's outputs read back and
# disposed; the memory counts after each run and after the model's dispose, and the last run's outputs (float32).
IN_PAGE = """
import base64
import numpy as np

before = pe.memory().num_tensors
graph_model = await pe.load_graph_model(URL)
graph_inputs = [pe.tensor(np.frombuffer(base64.b64decode(text), dtype).reshape(shape)) for text, dtype, shape in INPUTS]
counts = []
for _ in range(REPEATS):
    ys = graph_model.execute(graph_inputs)
    ys = ys if isinstance(ys, list) else [ys]
    values = [await y.data() for y in ys]
    shapes = [list(y.shape) for y in ys]
    pe.dispose(ys)
    m = pe.memory()
    counts.append([m.num_tensors, m.num_data_buffers, m.num_bytes, m.num_bytes_in_gpu, m.num_bytes_in_gpu_allocated])
names = [o.name for o in graph_model.outputs]
pe.dispose(graph_inputs)
graph_model.dispose()
{
    "backend": pe.get_backend(),
    "names": names,
    "outputs": [[base64.b64encode(v.astype("<f4").tobytes()).decode(), s] for v, s in zip(values, shapes)],
    "counts": counts,
    "left": pe.memory().num_tensors - before,
}
"""


def test_the_model_menu_offers_the_classifier_and_not_the_graph_models(wasm_page, server_url):
    with urllib.request.urlopen(server_url + "models") as response:
        listed = {m["name"]: m["kind"] for m in json.load(response)["models"]}
    assert listed == {"efficientnet-lite0": "layers-model"} | dict.fromkeys(MODELS, "graph-model")
    page = wasm_page.page
    show_panel(page, "Classify")
    menu = page.get_by_role("combobox", name="Model")
    assert menu.locator("option").all_inner_texts() == ["efficientnet-lite0"]
    assert menu.input_value() == "efficientnet-lite0" and menu.is_enabled()
    assert page.evaluate("playground.models()") == ["efficientnet-lite0"]


@pytest.fixture(scope="module")
def on_numpy(models_dir):
    """name -> (inputs, [(output name, values)]): the model run on numpy in CPython, from the same folder the server
    serves, in a thread of its own (Playwright's sync API holds this thread's event loop)."""
    cache = {}

    async def run(name):
        await pe.set_backend("numpy")
        model = await pe.load_graph_model(models_dir / name)
        inputs = [array for _, array in model_inputs(models_dir / name / "model.json")]
        try:
            with pe.scope():
                ys = model.execute([pe.tensor(x) for x in inputs])
                ys = ys if isinstance(ys, list) else [ys]
                return inputs, [(o.name, y.numpy()) for o, y in zip(model.outputs, ys)]
        finally:
            model.dispose()

    def get(name):
        if name not in cache:
            with ThreadPoolExecutor(1) as pool:
                cache[name] = pool.submit(asyncio.run, run(name)).result()
        return cache[name]

    return get


@pytest.mark.parametrize("name", ["movenet-lightning", "blazeface"])
@pytest.mark.parametrize("page_fixture", ["wasm_page", "gpu_page"])
def test_a_graph_model_runs_in_the_page_as_on_numpy_with_memory_flat(request, page_fixture, name, server_url, on_numpy):
    page = request.getfixturevalue(page_fixture)
    inputs, expected = on_numpy(name)
    encoded = [[base64.b64encode(x.tobytes()).decode(), str(x.dtype), list(x.shape)] for x in inputs]
    code = IN_PAGE.replace("URL", repr(f"{server_url}models/{name}/model.json")).replace("INPUTS", repr(encoded))
    got = page.run(code.replace("REPEATS", str(REPEATS)), timeout_s=RUN_TIMEOUT_S)
    assert got["backend"] == page_fixture.removesuffix("_page").replace("gpu", "webgpu")
    assert got["names"] == [out_name for out_name, _ in expected]
    for (out_name, want), (text, shape) in zip(expected, got["outputs"]):
        values = np.frombuffer(base64.b64decode(text), "<f4").reshape(shape)
        assert values.shape == want.shape, (name, out_name)
        scale = max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(values, want, rtol=RTOL, atol=ATOL * scale, err_msg=f"{name} {out_name}")
    counts = np.array(got["counts"])
    # every execute leaves the same tensors, buffers and bytes (the model's weights and the inputs); the GPU pool
    # reaches its size in the first run and keeps it
    assert (counts[:, :4] == counts[0, :4]).all(), counts
    assert (counts[1:, 4] == counts[1, 4]).all(), counts
    assert got["left"] == 0  # the model's dispose released its weights


# Runs in the page: a load, the model files' requests the worker made (resource timing) and what it holds after
AHEAD = """
import asyncio
import js

js.performance.clearResourceTimings()
model = await pe.load_graph_model(MODEL_URL)
model.dispose()
FOLDER = MODEL_URL.rsplit("/", 1)[0]  # the page's classifier may be downloading beside it
requested = [e.name for e in js.performance.getEntriesByType("resource") if e.name.startswith(FOLDER)]
after_load = [url for url in js.pePrefetch.heldURLs() if url.startswith(FOLDER)]
js.pePrefetch.modelFiles(MODEL_URL)  # as a load starts: model.json, then its shards, held
for _ in range(100):
    await asyncio.sleep(0.05)
    held = [url for url in js.pePrefetch.heldURLs() if url.startswith(FOLDER)]
    if len(held) > 1:
        break
js.pePrefetch.dropModelFiles(MODEL_URL)  # as a load that stopped ends
dropped = [url for url in js.pePrefetch.heldURLs() if url.startswith(FOLDER)]
{"requested": requested, "after_load": after_load, "held": held, "dropped": dropped}
"""


def test_a_load_has_the_worker_request_its_files_at_once_and_leaves_none_held(wasm_page, server_url):
    """pe.load_graph_model in the page has the worker request model.json and, as soon as it is there, every shard
    (static/worker/prefetch.js), before Python has read model.json, and takes those answers: each file is asked for
    once, and nothing stays held after the load; a load that stops lets go of what was held for it."""
    url = f"{server_url}models/movenet-lightning/model.json"
    got = wasm_page.run(AHEAD.replace("MODEL_URL", repr(url)))
    assert len(got["requested"]) == len(set(got["requested"])) == 2, got["requested"]  # model.json and its shard
    assert got["after_load"] == []
    assert sorted(got["held"]) == sorted(got["requested"]), got
    assert got["dropped"] == []
