"""pe.vision's calls against their models' bare execution, timed in turns: what bench/vision.py runs in CPython, and
sends as source to the page's Python with --page (so it needs only py_engine, numpy and the standard library)."""

import statistics
import time

import py_engine as pe
from py_engine import vision


def tasks(where, photos):
    """name: (load coroutine, the detector's model attributes, call(detector) -> coroutine); where(model name) is
    the model's location (a folder or a URL)."""
    face_extras = {"mesh": where("facemesh"), "iris": where("iris"), "emotion": where("emotion")}
    return {
        "PoseDetector (movenet-lightning)": (
            vision.PoseDetector.load(where("movenet-lightning")),
            ["model"],
            lambda d: d.estimate_poses(photos["astronaut"]),
        ),
        "FaceDetector (blazeface)": (
            vision.FaceDetector.load(where("blazeface")),
            ["model"],
            lambda d: d.estimate_faces(photos["astronaut"]),
        ),
        "FaceDetector (+ facemesh, iris, emotion)": (
            vision.FaceDetector.load(where("blazeface"), **face_extras),
            ["model", "mesh", "iris", "emotion"],
            lambda d: d.estimate_faces(photos["astronaut"]),
        ),
        "HandDetector (handtrack + handlandmark-lite)": (
            vision.HandDetector.load(where("handtrack"), where("handlandmark-lite")),
            ["detector", "landmarks"],
            lambda d: d.estimate_hands(photos["astronaut"], min_score=0.15),
        ),
        "ObjectDetector (centernet)": (
            vision.ObjectDetector.load(where("centernet")),
            ["model"],
            lambda d: d.detect(photos["coffee"]),
        ),
    }


class Calls:
    """Stands in for a model: runs it, keeping each call's input and the outputs asked for."""

    def __init__(self, model):
        self.model, self.calls = model, []

    def __getattr__(self, name):
        return getattr(self.model, name)

    def execute(self, x, outputs=None):
        self.calls.append((x.numpy(), outputs, False))
        return self.model.execute(x, outputs)

    async def execute_async(self, x, outputs=None):
        self.calls.append((x.numpy(), outputs, True))
        return await self.model.execute_async(x, outputs)


async def bare(calls):
    """The recorded model calls alone: each input uploaded, the model run, the outputs it asked for read back."""
    for model, (x, outputs, is_async) in calls:
        with pe.scope():
            x = pe.tensor(x)
            ys = await model.execute_async(x, outputs) if is_async else model.execute(x, outputs)
            for y in ys if isinstance(ys, list) else [ys]:
                await y.data()


async def paired_seconds(whole, alone, runs):
    """(whole, alone, ratio) medians over runs in turns, each run timing one then the other, so that a load that
    comes and goes on the machine weighs on both alike (the ratio is the median of each pair's)."""
    await whole()  # warm: plans built, pipelines compiled, buffers pooled
    await alone()
    pairs = []
    for _ in range(runs):
        times = []
        for fn in (whole, alone):
            start = time.perf_counter()
            await fn()
            times.append(time.perf_counter() - start)
        pairs.append(times)
    medians = [statistics.median(t) for t in zip(*pairs, strict=True)]
    return *medians, statistics.median(w / a for w, a in pairs)


async def measure(where, photos, runs):
    """[(task, whole call s, models alone s, ratio)] for each task on its photo."""
    rows = []
    for name, (load, attrs, call) in tasks(where, photos).items():
        detector = await load
        recorders = {attr: Calls(getattr(detector, attr)) for attr in attrs}
        for attr, recorder in recorders.items():
            setattr(detector, attr, recorder)
        await call(detector)
        calls = [(r.model, c) for r in recorders.values() for c in r.calls]
        for attr, recorder in recorders.items():
            setattr(detector, attr, recorder.model)
        whole, alone, ratio = await paired_seconds(lambda d=detector, c=call: c(d), lambda c=calls: bare(c), runs)
        rows.append((name, whole, alone, ratio))
        detector.dispose()
    return rows
