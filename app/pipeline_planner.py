"""Lists the GPU pipelines the page's classifier compiles, for a CPU adapter and for a GPU, as JSON.

    python app/pipeline_planner.py MODEL_DIR OUT.json     (app/classifier_pipelines.py runs it)

Run by path, with the engine wheel first on PYTHONPATH, so that the shaders are those of the engine the page gets,
not of the server's own import. The classifier's path (py_engine.image_classifier) runs on a NullDevice (no GPU) with
warm-up's shader list as the backend's recorder, on the model's outline (model.json, zero weights), so it takes a
second and needs no weights.
"""

import asyncio
import json
import sys
from pathlib import Path

import py_engine as pe
from py_engine.backends.webgpu import WebGPUBackend
from py_engine.backends.webgpu.null_device import ADAPTERS, NullDevice
from py_engine.engine import ENGINE
from py_engine.engine.warmup import dispatched_shaders
from py_engine.image_classifier import ImageClassifier, load_outline

FORMAT = 1
IMAGE = (224, 224)  # an image's size; the path's shaders do not depend on it (the resize takes any size)


async def pipelines(model_dir: Path, adapter: str) -> list:
    """[[key, WGSL, inputs, outputs], ...] in the order the path compiles them on that kind of adapter."""
    metadata = json.loads((model_dir / "metadata.json").read_text())
    ENGINE.register_backend("webgpu", lambda: WebGPUBackend(NullDevice(adapter)))
    ENGINE.forget_backend("webgpu")
    outline = await load_outline(str(model_dir / "model.json"))
    with pe.on_backend("numpy"):
        packed = pe.zeros(IMAGE, dtype="int32")
    if not await pe.set_backend("webgpu"):
        raise RuntimeError(ENGINE.fallback_reason)
    classifier = ImageClassifier(outline, metadata)
    with dispatched_shaders(ENGINE.backend, run=True) as shaders, pe.scope():
        classifier.run(packed)
    classifier.dispose()
    packed.dispose()
    await pe.set_backend("numpy")
    first = {s.key: s for s in shaders}  # each shader once, where the path first compiles it (dicts keep order)
    return [[s.key, s.source, s.n_in, s.n_out] for s in first.values()]


async def main(model_dir: Path, out: Path) -> None:
    plans = {adapter: await pipelines(model_dir, adapter) for adapter in ADAPTERS}
    out.write_text(json.dumps({"format": FORMAT, "adapters": plans}, separators=(",", ":")))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2])))
