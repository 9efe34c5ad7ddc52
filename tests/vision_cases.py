"""The vision tests' cases and reference, shared by tests/test_vision.py (CPython) and e2e/test_vision_tfjs.py (the
page): each task on its photo (TASKS), run once on numpy with its models recording every input they get, then TF.js's
graph execution (tests/tfjs/run_graph_models.mjs, one Node run for all) on those same inputs; a task run again with
its models replaced by TF.js's outputs decodes what TF.js computed, which our results must match within a pixel or
two (assert_close). And a photo as the video Chromium's fake camera plays (write_y4m: e2e/test_vision.py,
bench/vision.py --page)."""

import json
import math
from pathlib import Path

import numpy as np

import py_engine as pe
from py_engine import vision
from tests.tfjs_node import run_tfjs

PHOTOS = Path(__file__).parent / "fixtures" / "vision_photos.npz"  # scikit-image 0.25.2's astronaut.png, coffee.png


def photo(name):
    """uint8 [H, W, 3]: "astronaut" (512x512, a person and a face) or "coffee" (400x600, a cup on a table)."""
    with np.load(PHOTOS) as photos:
        return photos[name]


# the photos have no bare hand: the astronaut's gloved hand scores 0.19 in handtrack (the landmark model is surer)
HAND_SCORE = 0.15

# task: (its class in pe.vision, {the detector's attribute: its model}, in load's order, the call, photo, options)
TASKS = {
    "pose": ("PoseDetector", {"model": "movenet-lightning"}, "estimate_poses", "astronaut", {}),
    "faces": (
        "FaceDetector",
        {"model": "blazeface", "mesh": "facemesh", "iris": "iris", "emotion": "emotion"},
        "estimate_faces",
        "astronaut",
        {},
    ),
    "hands": (
        "HandDetector",
        {"detector": "handtrack", "landmarks": "handlandmark-lite"},
        "estimate_hands",
        "astronaut",
        {"min_score": HAND_SCORE},
    ),
    "objects": ("ObjectDetector", {"model": "centernet"}, "detect", "coffee", {"threshold": 0.1}),
}

PIXELS, SCORE = 2.0, 0.02  # how far our results may be from those decoded from TF.js's outputs


def load(task, models_dir):
    """The task's detector on its models in models_dir (a coroutine)."""
    kind, models, *_ = TASKS[task]
    return getattr(vision, kind).load(*(models_dir / name for name in models.values()))


def call(task, detector):
    """The task's call on its photo (a coroutine of its results)."""
    _, _, method, name, options = TASKS[task]
    return getattr(detector, method)(photo(name), **options)


def as_plain(results):
    return [r.to_dict() for r in results]


def assert_close(ours, theirs, path="result"):
    """Plain results alike: the same structure and names, coordinates within PIXELS, scores within SCORE."""
    if isinstance(ours, dict):
        assert ours.keys() == theirs.keys(), path
        for key in ours:
            assert_close(ours[key], theirs[key], f"{path}.{key}")
    elif isinstance(ours, list):
        assert len(ours) == len(theirs), f"{path}: {len(ours)} here, {len(theirs)} from TF.js's outputs"
        for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            assert_close(a, b, f"{path}[{k}]")
    elif isinstance(ours, float):
        tolerance = SCORE if path.endswith("score") or ".emotion." in path else PIXELS
        assert math.isfinite(ours) and abs(ours - theirs) <= tolerance, f"{path}: {ours} here, {theirs} from TF.js"
    else:
        assert ours == theirs, path


def write_y4m(rgb, path):
    """One frame of 4:2:0 video (full-range BT.601, as JPEG), which Chromium's fake camera plays in a loop."""
    r, g, b = (rgb[..., i].astype(np.float64) for i in range(3))
    y = 0.299 * r + 0.587 * g + 0.114 * b
    u = -0.168736 * r - 0.331264 * g + 0.5 * b + 128
    v = 0.5 * r - 0.418688 * g - 0.081312 * b + 128
    height, width = y.shape
    half = [c.reshape(height // 2, 2, width // 2, 2).mean(axis=(1, 3)) for c in (u, v)]
    planes = [np.clip(np.rint(c), 0, 255).astype(np.uint8).tobytes() for c in (y, *half)]
    path.write_bytes(f"YUV4MPEG2 W{width} H{height} F30:1 Ip A1:1 C420jpeg\n".encode() + b"FRAME\n" + b"".join(planes))


class Recorder:
    """A model that runs and keeps a copy of each input it is given."""

    def __init__(self, model):
        self.model, self.recorded = model, []

    def __getattr__(self, name):
        return getattr(self.model, name)

    def execute(self, x, outputs=None):
        self.recorded.append(x.numpy())
        return self.model.execute(x, outputs)

    async def execute_async(self, x, outputs=None):
        self.recorded.append(x.numpy())
        return await self.model.execute_async(x, outputs)


class Replay:
    """A model that answers its k-th call with TF.js's outputs for the k-th recorded input (inputs checked alike)."""

    def __init__(self, model, calls):
        self.model, self.calls, self.made = model, list(calls), 0

    def __getattr__(self, name):
        return getattr(self.model, name)

    def execute(self, x, outputs=None):
        recorded, answers = self.calls.pop(0)
        assert x.shape == recorded.shape and x.dtype == recorded.dtype
        # TF.js names its outputs by the signature's keys, in the order of the model's outputs here
        by_name = {o.name: value for o, (_, value) in zip(self.model.outputs, answers, strict=True)}
        names = [o.name for o in self.model.outputs] if outputs is None else outputs
        names = [names] if isinstance(names, str) else names
        ys = [pe.tensor(by_name[n.split(":")[0]]) for n in names]
        self.made += len(ys)
        return ys[0] if len(ys) == 1 and (outputs is None or isinstance(outputs, str)) else ys

    async def execute_async(self, x, outputs=None):
        return self.execute(x, outputs)


async def tfjs_reference(models_dir, out):
    """{task: {attribute: [(input, TF.js's outputs)]}}: each task's model inputs on numpy, and TF.js's answers."""
    recorded = {}
    with pe.on_backend("numpy"):
        for task, (_, models, *_) in TASKS.items():
            detector = await load(task, models_dir)
            recorders = {attr: Recorder(getattr(detector, attr)) for attr in models}
            for attr, recorder in recorders.items():
                setattr(detector, attr, recorder)
            await call(task, detector)
            for attr, recorder in recorders.items():
                recorded[f"{task}.{attr}"] = (models[attr], recorder.recorded)
                setattr(detector, attr, recorder.model)
            detector.dispose()
    answers = tfjs_outputs(models_dir, recorded, out)
    return {task: {attr: answers[f"{task}.{attr}"] for attr in models} for task, (_, models, *_) in TASKS.items()}


async def decoded_from_tfjs(task, models_dir, reference):
    """The task's plain results with its models answered by TF.js's outputs (reference[task]), on this backend."""
    detector = await load(task, models_dir)
    models = {attr: getattr(detector, attr) for attr in reference[task]}
    try:
        for attr, model in models.items():
            setattr(detector, attr, Replay(model, reference[task][attr]))
        results = as_plain(await call(task, detector))
        assert all(not getattr(detector, attr).calls for attr in models), "fewer model calls than recorded"
        return results
    finally:
        for attr, model in models.items():
            setattr(detector, attr, model)
        detector.dispose()


def tfjs_outputs(models_dir, recorded, out):
    """{key: [(input, [(output name, array)])]} for recorded {key: (model name, [input arrays])}: TF.js's outputs
    for each input, all in one Node run (each case a link to the model's folder, so every output file is its own)."""
    links, cases = out / "models", []
    links.mkdir()
    for key, (model, inputs) in recorded.items():
        for k, array in enumerate(inputs):
            case = f"{key}-{k}"
            (links / case).symlink_to(models_dir / model, target_is_directory=True)
            (out / f"{case}.bin").write_bytes(array.tobytes())
            cases.append({"model": case, "inputs": [{"file": f"{case}.bin", "shape": list(array.shape), "dtype": str(array.dtype)}]})  # fmt: skip
    (out / "cases.json").write_text(json.dumps(cases))
    run_tfjs("run_graph_models.mjs", links, out / "cases.json", out)
    read = {"float32": "<f4", "int32": "<i4", "bool": "u1"}
    result = {}
    for key, (_, inputs) in recorded.items():
        result[key] = []
        for k, array in enumerate(inputs):
            written = json.loads((out / f"{key}-{k}.json").read_text())
            answers = [(o["name"], np.fromfile(out / o["file"], read[o["dtype"]]).reshape(o["shape"])) for o in written]
            result[key].append((array, answers))
    return result
