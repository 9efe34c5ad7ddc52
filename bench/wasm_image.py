"""The wasm backend's image kernels against numpy's in the same Pyodide (Node), on the vision tasks' shapes.

    .venv/bin/python bench/wasm_image.py [--rounds 3]

Prints, per case, pe.resize_bilinear's or pe.crop_and_resize's time on the numpy backend and on wasm (one thread),
the backends in turns within a round, the best of --rounds rounds, and wasm / numpy. The cases: FaceDetector's
letterbox (a 512x512 photo to BlazeFace's 256x256, pixel centres kept), ObjectDetector's camera frame (int32 pixels
to CenterNet's 512x512), a graph model's ResizeBilinear node (a feature map doubled), and a face's crops (the mesh's
192x192, two eyes' 64x64, the emotion model's 64x64). Timings are for reading, never asserted.
"""

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.pyodide import start_node_pyodide  # noqa: E402 - the repository root is on the path now

CASES = """
import time

rng = np.random.default_rng(0)
photo = pe.tensor(rng.uniform(0, 255, (1, 512, 512, 3)).astype(np.float32))
frame = pe.tensor(rng.integers(0, 256, (1, 480, 640, 3)).astype(np.int32))
features = pe.tensor(rng.standard_normal((1, 32, 32, 64)).astype(np.float32))
face = pe.tensor([[0.2, 0.25, 0.7, 0.75]], "float32")
eyes = pe.tensor([[0.3, 0.3, 0.45, 0.45], [0.3, 0.6, 0.45, 0.45]], "float32")  # the second one mirrored
first, both = pe.tensor([0], "int32"), pe.tensor([0, 0], "int32")
CASES = {
    "letterbox 512x512x3 -> 256x256 (half pixel)": lambda: pe.resize_bilinear(photo, (256, 256), False, True),
    "int32 frame 480x640x3 -> 512x512": lambda: pe.resize_bilinear(frame, (512, 512)),
    "feature map 32x32x64 -> 64x64": lambda: pe.resize_bilinear(features, (64, 64)),
    "face crop 192x192x3": lambda: pe.crop_and_resize(photo, face, first, (192, 192)),
    "two eye crops 64x64x3": lambda: pe.crop_and_resize(photo, eyes, both, (64, 64)),
    "emotion crop 64x64x3": lambda: pe.crop_and_resize(photo, face, first, (64, 64)),
}


async def best_ms(backend, reps=10):
    assert await pe.set_backend(backend, **({"threads": 1} if backend == "wasm" else {}))
    result = {}
    for name, op in CASES.items():
        op().dispose()
        start = time.perf_counter()
        for _ in range(reps):
            op().dispose()
        result[name] = (time.perf_counter() - start) / reps * 1e3
    return result
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    node = start_node_pyodide()
    try:
        node.run(CASES + "\nNone")
        best = {"numpy": {}, "wasm": {}}
        for _ in range(args.rounds):  # in turns, so a change of load on the machine touches both alike
            for backend, rows in best.items():
                for case, ms in node.run(f"await best_ms({backend!r})").items():
                    rows[case] = min(ms, rows.get(case, float("inf")))
    finally:
        node.close()
    print(f"best of {args.rounds} rounds, ms per call (Pyodide in Node, wasm on one thread)")
    print(f"{'case':46} {'numpy':>8} {'wasm':>8} {'wasm/numpy':>11}")
    for case, ms in best["numpy"].items():
        print(f"{case:46} {ms:8.2f} {best['wasm'][case]:8.2f} {best['wasm'][case] / ms:10.2f}x")


if __name__ == "__main__":
    main()
