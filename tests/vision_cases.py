"""The vision tests' reference: each task run once on its photo with its models recording every input they get,
then TF.js's graph execution (tests/tfjs/run_graph_models.mjs, one Node run for all) on those same inputs; a task
run again with its models replaced by TF.js's outputs decodes what TF.js computed."""

import json
from pathlib import Path

import numpy as np

import py_engine as pe
from tests.tfjs_node import run_tfjs

PHOTOS = Path(__file__).parent / "fixtures" / "vision_photos.npz"  # scikit-image 0.25.2's astronaut.png, coffee.png


def photo(name):
    """uint8 [H, W, 3]: "astronaut" (512x512, a person and a face) or "coffee" (400x600, a cup on a table)."""
    with np.load(PHOTOS) as photos:
        return photos[name]


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
