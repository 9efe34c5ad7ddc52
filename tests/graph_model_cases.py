"""The graph models' test inputs (a real photo, sized and typed for each model) and TF.js's outputs on them
(tests/tfjs/run_graph_models.mjs), shared by the graph-model tests through the session fixture in conftest.py."""

import base64
import json
from pathlib import Path

import numpy as np

import py_engine as pe
from tests.tfjs_node import run_tfjs

PHOTO = Path(__file__).parent / "fixtures" / "efficientnet_lite0_chelsea.npz"  # scikit-image's chelsea.png
MEAN, STD = np.array([0.485, 0.456, 0.406], np.float32), np.array([0.229, 0.224, 0.225], np.float32)


def photo():
    """scikit-image's chelsea.png, 224x224 RGB in [0, 1] (undoing the fixture's ImageNet normalization)."""
    return np.clip(np.load(PHOTO)["input"][0] * STD + MEAN, 0, 1)


def model_input(shape, dtype):
    """The photo as a model's input: resized to its height and width, one channel (gray) or three, float32 in
    [0, 1] or int32 in [0, 255]; a batch of one where the batch size is free."""
    shape = [1 if d == -1 else d for d in shape]
    with pe.on_backend("numpy"), pe.scope():
        image = pe.resize_bilinear(pe.tensor(photo()[None]), shape[1:3]).numpy()
    if shape[3] == 1:
        image = image.mean(axis=3, keepdims=True)
    image = np.broadcast_to(image, shape)
    return np.ascontiguousarray(
        np.round(image * 255).astype(np.int32) if dtype == "int32" else image,
        np.float32 if dtype == "float32" else np.int32,
    )


def model_inputs(model_json):
    """[(input name, array)] for model.json: the signature's inputs (in its order), else its placeholders."""
    artifacts = json.loads(Path(model_json).read_text())
    signature = (artifacts.get("signature") or {}).get("inputs")
    dtypes = {"DT_FLOAT": "float32", "DT_INT32": "int32", "DT_UINT8": "int32"}
    if signature:
        entries = [(e["name"], e["dtype"], e["tensorShape"]) for e in signature.values()]
    else:
        nodes = [n for n in artifacts["modelTopology"]["node"] if n["op"] == "Placeholder"]
        entries = [(n["name"], n["attr"]["dtype"]["type"], n["attr"]["shape"]["shape"]) for n in nodes]
    return [
        (name, model_input([int(d["size"]) for d in shape["dim"]], dtypes[dtype])) for name, dtype, shape in entries
    ]


def tfjs_reference(models_dir, names, out):
    """{model: {"inputs": [(name, array)], "outputs": [(output name, array)]}}: TF.js's outputs, one Node run."""
    cases, inputs = [], {}
    for name in names:
        inputs[name] = model_inputs(models_dir / name / "model.json")
        files = []
        for k, (_, array) in enumerate(inputs[name]):
            (out / f"{name}.input{k}.bin").write_bytes(array.tobytes())
            files.append({"file": f"{name}.input{k}.bin", "shape": list(array.shape), "dtype": str(array.dtype)})
        cases.append({"model": name, "inputs": files})
    (out / "cases.json").write_text(json.dumps(cases))
    run_tfjs("run_graph_models.mjs", models_dir, out / "cases.json", out)
    result = {}
    for name in names:
        outputs = [
            (
                o["name"],
                np.fromfile(out / o["file"], {"float32": "<f4", "int32": "<i4", "bool": "u1"}[o["dtype"]]).reshape(
                    o["shape"]
                ),
            )
            for o in json.loads((out / f"{name}.json").read_text())
        ]
        result[name] = {"inputs": inputs[name], "outputs": outputs}
    return result


# ---- graphs written here: AttrValues, and a model.json of nodes with its one shard of Const weights -------------

TF_DTYPES = {"float32": "DT_FLOAT", "int32": "DT_INT32", "bool": "DT_BOOL"}


def attr(value):
    """A Python value as TensorFlow's AttrValue JSON (a str: a string attr; "DT_...": a type)."""
    if isinstance(value, bool):
        return {"b": value}
    if isinstance(value, int):
        return {"i": str(value)}
    if isinstance(value, float):
        return {"f": value}
    if isinstance(value, str):
        return {"type": value} if value.startswith("DT_") else {"s": base64.b64encode(value.encode()).decode()}
    if all(isinstance(v, str) for v in value):
        return {"list": {"s": [base64.b64encode(v.encode()).decode() for v in value]}}
    return {"list": {"i": [str(v) for v in value]}}


def write_graph_model(folder, nodes, weights, functions=()):
    """folder/model.json (a GraphDef of `nodes`, with library `functions`: FunctionDefs as JSON) and
    folder/weights.bin holding `weights` [(Const name, array)]."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "weights.bin").write_bytes(b"".join(array.tobytes() for _, array in weights))
    specs = [{"name": name, "shape": list(a.shape), "dtype": str(a.dtype)} for name, a in weights]
    artifacts = {
        "format": "graph-model",
        "modelTopology": {"node": nodes, "library": {"function": list(functions)}, "versions": {"producer": 1}},
        "weightsManifest": [{"paths": ["weights.bin"], "weights": specs}],
    }
    (folder / "model.json").write_text(json.dumps(artifacts))
    return folder
