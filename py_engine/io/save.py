"""Writing the TF.js layers format into a folder: model.json plus weight shards, for model.save(path) and for
app.convert, which writes a converted model's topology and weights without building it."""

import json
import os
import re
import urllib.parse
import urllib.request

from . import weights_manifest
from .topology import KERAS_VERSION, model_topology

_SHARD = re.compile(r"group\d+-shard\d+of\d+\.bin")


def save_layers_model(model, path, max_shard_bytes=None, converted_by=None):
    """Write model.json and group1-shard{i}of{n}.bin into folder `path` (a path or file:// URL).

    Shards hold at most max_shard_bytes (default 4 MiB); shards left from an earlier save are removed.
    Returns {"model_json": path, "shards": [paths], "weight_bytes": n}.
    """
    return write_layers_model(
        path,
        model_topology(model),
        list(zip(model.weight_names, model.get_weights())),
        max_shard_bytes,
        converted_by,
        None if model.training_config is None else model.training_config.to_tfjs(),
    )


def write_layers_model(path, topology, named_weights, max_shard_bytes=None, converted_by=None, training_config=None):
    """Write model.json (with `topology` as its modelTopology, and `training_config` as its trainingConfig if
    given) and the shards of [(name, array)] into folder `path`, as save_layers_model does; returns what it does."""
    max_shard_bytes = weights_manifest.DEFAULT_SHARD_BYTES if max_shard_bytes is None else max_shard_bytes
    if not isinstance(max_shard_bytes, int) or max_shard_bytes < 1:
        raise ValueError(f"save: max_shard_bytes must be a positive int, got {max_shard_bytes!r}")
    text = os.fspath(path)
    if text.startswith("file://"):
        text = urllib.request.url2pathname(urllib.parse.urlparse(text).path)
    manifest, shards = weights_manifest.pack(named_weights, max_shard_bytes)
    os.makedirs(text, exist_ok=True)
    paths = manifest[0]["paths"] if manifest else []
    for name in os.listdir(text):
        if _SHARD.fullmatch(name) and name not in paths:
            os.remove(os.path.join(text, name))
    for name, data in zip(paths, shards):
        with open(os.path.join(text, name), "wb") as f:
            f.write(data)
    artifacts = {
        "format": "layers-model",
        "generatedBy": KERAS_VERSION,
        "convertedBy": converted_by,
        "modelTopology": topology,
        "weightsManifest": manifest,
    }
    if training_config is not None:
        artifacts["trainingConfig"] = training_config
    model_json = os.path.join(text, "model.json")
    with open(model_json, "w") as f:  # written last: a folder with a model.json is complete
        json.dump(artifacts, f, separators=(",", ":"))  # compact, as TF.js writes it
    return {
        "model_json": model_json,
        "shards": [os.path.join(text, p) for p in paths],
        "weight_bytes": sum(map(len, shards)),
    }
