"""pe.vision's tasks in the page against TF.js: the page's Python runs each task (tests/vision_cases.py's TASKS: pose,
faces with mesh, iris and emotion, hands, objects) on the same photos as tests/test_vision.py, on wasm and on webgpu,
with the models the server serves; the results must be those decoded from TF.js's graph execution of the same models
on the task's inputs (coordinates within 2 pixels, scores within 0.02), as the CPython tests check on numpy and webgpu.
One shared page runs both backends."""

import asyncio
import base64
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.vision_cases import TASKS, assert_close, decoded_from_tfjs, photo, tfjs_reference

RUN_TIMEOUT_S = 300  # every task's models loaded and run once, on SwiftShader's WebGPU (a CPU renderer), 2 shared cores

# Runs in the page: the photos from their bytes, each task's detector loaded from the server, run and disposed; the
# results as JSON (floats stay floats), and the tensors left over
IN_PAGE = """
import base64, json
import numpy as np

photos = {name: np.frombuffer(base64.b64decode(text), np.uint8).reshape(shape) for name, (text, shape) in PHOTOS.items()}
first, before = pe.get_backend(), pe.memory().num_tensors
assert await pe.set_backend(BACKEND), f"the page has no {BACKEND} backend"
found = {}
for task, (kind, models, method, name, options) in TASKS.items():
    detector = await getattr(pe.vision, kind).load(*[MODELS + model for model in models.values()])
    found[task] = [r.to_dict() for r in await getattr(detector, method)(photos[name], **options)]
    detector.dispose()
on = pe.get_backend()
await pe.set_backend(first)
json.dumps({"backend": on, "found": found, "left": pe.memory().num_tensors - before})
"""


@pytest.fixture(scope="module")
def decoded_by_tfjs(models_dir, tmp_path_factory):
    """A future of {task: results decoded from TF.js's outputs}: the reference of tests/test_vision.py, computed on
    numpy in CPython (and TF.js in Node) from the same model folders the server serves, in a thread of its own while
    the page runs (Playwright's sync API holds this thread's event loop)."""
    out = tmp_path_factory.mktemp("vision-tfjs")

    async def decode():
        reference = await tfjs_reference(models_dir, out)
        return {task: await decoded_from_tfjs(task, models_dir, reference) for task in TASKS}

    with ThreadPoolExecutor(1) as pool:
        yield pool.submit(asyncio.run, decode())


@pytest.fixture(scope="module")
def found_in_page(_wasm_page, server_url):
    """{backend: {task: results}}: every task run once in the shared page on wasm, then on webgpu (then back on
    wasm), while the reference is computed."""
    photos = {}
    for task in TASKS.values():
        image = photo(task[3])
        photos[task[3]] = (base64.b64encode(image.tobytes()).decode(), list(image.shape))
    code = IN_PAGE.replace("TASKS", repr(TASKS)).replace("MODELS", repr(f"{server_url}models/"))
    found = {}
    for backend in ("wasm", "webgpu"):
        # the photos' base64 goes in last, where no placeholder is looked for
        run = code.replace("BACKEND", repr(backend)).replace("PHOTOS", repr(photos))
        got = json.loads(_wasm_page.run(run, timeout_s=RUN_TIMEOUT_S))
        assert got["backend"] == backend and got["left"] == 0, got  # each detector's dispose released it all
        found[backend] = got["found"]
    return found


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("backend", ["wasm", "webgpu"])
def test_each_task_in_the_page_gives_what_tfjs_outputs_decode_to(backend, task, decoded_by_tfjs, found_in_page):
    ours = found_in_page[backend][task]
    assert ours, f"{task}: nothing found on the photo on {backend}"
    assert_close(ours, decoded_by_tfjs.result()[task])
