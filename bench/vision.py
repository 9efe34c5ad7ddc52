"""pe.vision's tasks against their models' bare execution, measured in the same run; in the page, frames per second.

    .venv/bin/python bench/vision.py [--models DIR] [--backend numpy|webgpu] [--runs N]
    .venv/bin/python bench/vision.py --page [--runs N] [--frames N] [--url URL]

For each task on its photo (tests/fixtures/vision_photos.npz): the time of the whole call (checks, preprocessing,
every model it runs, decoding, the results as Python numbers) over the time of the same model calls alone (each
model's execute on the inputs the task gave it, the outputs it asked for read back), timed in turns; medians
(bench/vision_calls.py). The ratio is what the task adds to its models; a task near 1.0 costs its models and little
else. In CPython DIR holds the graph models (`python -m app fetch-models --models DIR`, the default `models`).

With --page the same code runs in the page's Python in headless Chromium, on wasm and on webgpu (SwiftShader where
there is no GPU), with the models the server serves; then the Vision tab runs each task live on Chromium's fake camera
(--use-fake-device-for-media-stream) filming the astronaut photo, and its frames per second are read once N frames
have come (the tab's own measure: the last 10 frames, everything from grabbing a frame to drawing what was found).
Timings are for reading, never asserted.
"""

import argparse
import asyncio
import base64
import inspect
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import vision_calls  # noqa: E402 - bench/ is on the path as the script's folder

from tests.vision_cases import PHOTOS, write_y4m  # noqa: E402 - the repository root is on the path now

# Runs in the page, after bench/vision_calls.py's source: the photos from their bytes, every task measured
IN_PAGE = """
import base64
import numpy as np

photos = {name: np.frombuffer(base64.b64decode(text), np.uint8).reshape(shape) for name, (text, shape) in PHOTOS.items()}
[[name, whole, alone, ratio] for name, whole, alone, ratio in await measure(lambda name: MODELS + name, photos, RUNS)]
"""
LIVE_TASKS = ("objects", "pose", "faces", "hands")  # the Vision tab's, as it runs them (faces with emotion)


def photos():
    with np.load(PHOTOS) as f:
        return {name: f[name] for name in f.files}


def print_rows(backend, runs, rows):
    print(f"backend {backend}, median of {runs} runs each")
    print(f"{'task':46} {'whole call':>11} {'models alone':>13} {'ratio':>6}")
    for name, whole, alone, ratio in rows:
        print(f"{name:46} {whole * 1e3:8.1f} ms {alone * 1e3:10.1f} ms {ratio:6.2f}")


async def in_cpython(args):
    import py_engine as pe

    assert await pe.set_backend(args.backend), pe.engine.ENGINE.fallback_reason
    models = Path(args.models)
    rows = await vision_calls.measure(lambda name: models / name, photos(), args.runs)
    print_rows(pe.get_backend(), args.runs, rows)


def live_fps(page, task, frames):
    """(frames per second, ms to detect the last frame, its backend) of the Vision tab on the camera, once `frames`
    have come."""
    page.evaluate("task => playground.vision.start(task)", task)
    page.wait_for_function("n => playground.vision.frames() >= n", arg=frames, timeout=600_000)
    last = "playground.vision.last"
    found = page.evaluate(f"[playground.vision.fps(), {last}.timings.detect_ms, {last}.backend]")
    page.evaluate("playground.vision.stop()")
    return found


def in_page(args):
    from harness import FLAGS, WEBGPU, launch_options, open_settled_playground, playground_server, run_python
    from playwright.sync_api import sync_playwright

    encoded = {name: (base64.b64encode(a.tobytes()).decode(), list(a.shape)) for name, a in photos().items()}
    with tempfile.TemporaryDirectory() as scratch, playground_server(args.url, graph_models=True) as url:
        video = Path(scratch) / "astronaut.y4m"
        write_y4m(photos()["astronaut"], video)
        camera = ["--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"]
        options = launch_options() | {"args": [WEBGPU, *FLAGS, *camera, f"--use-file-for-fake-video-capture={video}"]}
        code = inspect.getsource(vision_calls) + IN_PAGE.replace("MODELS", repr(url + "models/"))
        code = code.replace("RUNS", str(args.runs)).replace("PHOTOS", repr(encoded))  # the photos' base64 last
        with sync_playwright() as p:
            browser = p.chromium.launch(**options)
            try:
                for backend in ("wasm", "webgpu"):
                    context = browser.new_context()
                    page, _ = open_settled_playground(context, url, backend)
                    print_rows(f"{backend} (the page)", args.runs, run_python(page, code))
                    print(f"the Vision tab on the fake camera ({backend}), after {args.frames} frames:")
                    for task in LIVE_TASKS:
                        fps, detect_ms, on = live_fps(page, task, args.frames)
                        print(f"  {task:8} {fps:5.1f} frames per second, {detect_ms:6.1f} ms to detect a frame ({on})")
                    context.close()
            finally:
                browser.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="models", help="the folder of the graph models (default: models)")
    parser.add_argument("--backend", default="numpy", choices=["numpy", "webgpu"])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--page", action="store_true", help="in headless Chromium, on wasm and webgpu")
    parser.add_argument("--frames", type=int, default=12, help="camera frames per task before reading --page's fps")
    parser.add_argument("--url", help="with --page: a running playground server (default: one started here)")
    args = parser.parse_args()
    in_page(args) if args.page else asyncio.run(in_cpython(args))
