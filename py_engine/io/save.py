"""model.save(path): the TF.js layers format, model.json plus weight shards, written into a folder."""

import json
import os
import re
import urllib.parse
import urllib.request

from . import weights
from .topology import KERAS_VERSION, model_topology

_SHARD = re.compile(r"group\d+-shard\d+of\d+\.bin")


def save_layers_model(model, path, max_shard_bytes=None, converted_by=None):
    """Write model.json and group1-shard{i}of{n}.bin into folder `path` (a path or file:// URL).

    Shards hold at most max_shard_bytes (default 4 MiB); shards left from an earlier save are removed.
    Returns {"model_json": path, "shards": [paths], "weight_bytes": n}.
    """
    max_shard_bytes = weights.DEFAULT_SHARD_BYTES if max_shard_bytes is None else max_shard_bytes
    if not isinstance(max_shard_bytes, int) or max_shard_bytes < 1:
        raise ValueError(f"save: max_shard_bytes must be a positive int, got {max_shard_bytes!r}")
    text = os.fspath(path)
    if text.startswith("file://"):
        text = urllib.request.url2pathname(urllib.parse.urlparse(text).path)
    os.makedirs(text, exist_ok=True)
    manifest, shards = weights.pack(list(zip(model.weight_names, model.get_weights())), max_shard_bytes)
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
        "modelTopology": model_topology(model),
        "weightsManifest": manifest,
    }
    training = None if model.training_config is None else model.training_config.to_tfjs()
    if training is not None:
        artifacts["trainingConfig"] = training
    model_json = os.path.join(text, "model.json")
    with open(model_json, "w") as f:  # written last: a folder with a model.json is complete
        json.dump(artifacts, f)
    return {
        "model_json": model_json,
        "shards": [os.path.join(text, p) for p in paths],
        "weight_bytes": sum(map(len, shards)),
    }
