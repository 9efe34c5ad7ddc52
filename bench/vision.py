"""pe.vision's tasks against their models' bare execution, measured in the same run.

    .venv/bin/python bench/vision.py [--models DIR] [--backend numpy|webgpu] [--runs N]

For each task on its photo (tests/fixtures/vision_photos.npz): the time of the whole call (checks, preprocessing,
every model it runs, decoding, the results as Python numbers) over the time of the same model calls alone (each
model's execute on the inputs the task gave it, the outputs it asked for read back), timed in turns; medians. The ratio is
what the task adds to its models; a task near 1.0 costs its models and little else. DIR holds the graph models
(`python -m app fetch-models --models DIR`, the default `models`). Timings are for reading, never asserted.
"""

import argparse
import asyncio
import statistics
import time
from pathlib import Path

import numpy as np

import py_engine as pe
from py_engine import vision

PHOTOS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "vision_photos.npz"


def tasks(models, photos):
    """name: (load coroutine, the detector's model attributes, call(detector) -> coroutine)."""
    face_extras = {"mesh": models / "facemesh", "iris": models / "iris", "emotion": models / "emotion"}
    return {
        "PoseDetector (movenet-lightning)": (
            vision.PoseDetector.load(models / "movenet-lightning"),
            ["model"],
            lambda d: d.estimate_poses(photos["astronaut"]),
        ),
        "FaceDetector (blazeface)": (
            vision.FaceDetector.load(models / "blazeface"),
            ["model"],
            lambda d: d.estimate_faces(photos["astronaut"]),
        ),
        "FaceDetector (+ facemesh, iris, emotion)": (
            vision.FaceDetector.load(models / "blazeface", **face_extras),
            ["model", "mesh", "iris", "emotion"],
            lambda d: d.estimate_faces(photos["astronaut"]),
        ),
        "HandDetector (handtrack + handlandmark-lite)": (
            vision.HandDetector.load(models / "handtrack", models / "handlandmark-lite"),
            ["detector", "landmarks"],
            lambda d: d.estimate_hands(photos["astronaut"], min_score=0.15),
        ),
        "ObjectDetector (centernet)": (
            vision.ObjectDetector.load(models / "centernet"),
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


async def main(args):
    assert await pe.set_backend(args.backend), pe.engine.ENGINE.fallback_reason
    with np.load(PHOTOS) as f:
        photos = {name: f[name] for name in f.files}
    print(f"backend {pe.get_backend()}, median of {args.runs} runs each")
    print(f"{'task':46} {'whole call':>11} {'models alone':>13} {'ratio':>6}")
    for name, (load, attrs, call) in tasks(Path(args.models), photos).items():
        detector = await load
        recorders = {attr: Calls(getattr(detector, attr)) for attr in attrs}
        for attr, recorder in recorders.items():
            setattr(detector, attr, recorder)
        await call(detector)
        calls = [(r.model, c) for r in recorders.values() for c in r.calls]
        for attr, recorder in recorders.items():
            setattr(detector, attr, recorder.model)
        whole, alone, ratio = await paired_seconds(lambda d=detector, c=call: c(d), lambda c=calls: bare(c), args.runs)
        print(f"{name:46} {whole * 1e3:8.1f} ms {alone * 1e3:10.1f} ms {ratio:6.2f}")
        detector.dispose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="models", help="the folder of the graph models (default: models)")
    parser.add_argument("--backend", default="numpy", choices=["numpy", "webgpu"])
    parser.add_argument("--runs", type=int, default=10)
    asyncio.run(main(parser.parse_args()))
