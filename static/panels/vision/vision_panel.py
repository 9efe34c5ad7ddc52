"""The Vision panel's Python side (static/panels/vision/vision_panel.js drives it through static/panels/vision/vision_worker.js):
objects, poses, faces and hands in one image with pe.vision's detectors on the graph models the server serves.

Each task's detector is loaded once per worker (and again once Clear namespace or Restart released its weights); an image's tensors live only while it is detected, so the tensor count stays flat frame after frame.
"""

import time

import py_engine as pe

MODELS = "models/"  # the server's graph models (docs/models.md), relative to the page
TASKS = ("objects", "pose", "faces", "hands")
MAX_OBJECTS = 20
OBJECT_THRESHOLD = 0.3

_detectors = {}  # task -> (detector, the tensor ids it holds)


async def _load(task):
    vision = pe.vision
    if task == "objects":
        return await vision.ObjectDetector.load(MODELS + "centernet")
    if task == "pose":
        return await vision.PoseDetector.load(MODELS + "movenet-lightning")
    if task == "faces":
        return await vision.FaceDetector.load(MODELS + "blazeface", emotion=MODELS + "emotion")
    return await vision.HandDetector.load(MODELS + "handtrack", MODELS + "handlandmark-lite")


def _check_task(task):
    if task not in TASKS:
        raise ValueError(f"vision: the task must be one of {', '.join(TASKS)}; got {task!r}")
    return task


def _usable(task):
    found = _detectors.get(task)
    return found is not None and all(i in pe.ENGINE.live for i in found[1])


async def detector(task):
    """The task's detector, loaded on first use; returns (detector, load_ms), load_ms 0 once loaded."""
    task = _check_task(task)
    if _usable(task):
        return _detectors[task][0], 0.0
    began = time.perf_counter()
    before = set(pe.ENGINE.live)
    loaded = await _load(task)
    # requests run one at a time, so every tensor that appeared while loading is the detector's
    _detectors[task] = (loaded, set(pe.ENGINE.live) - before)
    return loaded, (time.perf_counter() - began) * 1e3


async def _run(task, found, image):
    if task == "objects":
        return await found.detect(image, max_results=MAX_OBJECTS, threshold=OBJECT_THRESHOLD)
    if task == "pose":
        return await found.estimate_poses(image)
    if task == "faces":
        return await found.estimate_faces(image)
    return await found.estimate_hands(image)


async def detect(task, pixels, height, width):
    """{task, results: [to_dict() of each], backend, timings: {detect_ms}, load_ms} for RGBA pixels (a JS
    Uint8Array) of an image `height` x `width`; results in that image's pixel coordinates."""
    found, load_ms = await detector(task)
    began = time.perf_counter()
    with pe.scope():
        image = pe.browser.from_pixels(pixels, int(height), int(width))
        results = await _run(task, found, image)
    return {
        "task": task,
        "results": [r.to_dict() for r in results],
        "backend": pe.get_backend(),
        "timings": {"detect_ms": (time.perf_counter() - began) * 1e3},
        "load_ms": load_ms,
    }
