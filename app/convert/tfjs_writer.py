"""Writes a TensorFlow.js layers-model folder: model.json plus the weights as binary shards.

As TF.js does, all weights go into one group, concatenated in manifest order (little-endian) and cut into shards of
at most `shard_bytes` (a weight may span two shards). Each group also lists the sha256 of its shards, in a
"sha256" key aligned with "paths", which TF.js ignores and py_engine verifies.
"""

import hashlib
import json
from pathlib import Path

import numpy as np

SHARD_BYTES = 4 * 1024 * 1024
DTYPES = {np.dtype(np.float32): "float32", np.dtype(np.int32): "int32"}


def shard(data: bytes, shard_bytes: int = SHARD_BYTES) -> list[bytes]:
    """data cut into pieces of shard_bytes, the last one shorter; one empty shard for no data."""
    if shard_bytes <= 0:
        raise ValueError(f"shard size must be positive, got {shard_bytes}")
    return [data[i : i + shard_bytes] for i in range(0, len(data), shard_bytes)] or [b""]


def write_layers_model(
    folder: Path,
    topology: dict,
    weights: list[tuple[str, np.ndarray]],
    shard_bytes: int = SHARD_BYTES,
    generated_by: str = "py_engine app.convert",
    converted_by: str | None = None,
) -> dict:
    """Writes folder/model.json and folder/group1-shardXofN.bin; returns the model.json content."""
    specs, chunks = [], []
    for name, value in weights:
        value = np.asarray(value)
        if value.dtype not in DTYPES:
            raise ValueError(f"weight {name!r} has dtype {value.dtype}; TF.js weights here are float32 or int32")
        specs.append({"name": name, "shape": list(value.shape), "dtype": DTYPES[value.dtype]})
        chunks.append(value.astype(value.dtype.newbyteorder("<"), copy=False).tobytes())
    if len({s["name"] for s in specs}) != len(specs):
        raise ValueError("weight names must be unique")
    pieces = shard(b"".join(chunks), shard_bytes)
    paths = [f"group1-shard{i}of{len(pieces)}.bin" for i in range(1, len(pieces) + 1)]
    folder.mkdir(parents=True, exist_ok=True)
    for path, piece in zip(paths, pieces):
        (folder / path).write_bytes(piece)
    manifest = [{"paths": paths, "weights": specs, "sha256": [hashlib.sha256(p).hexdigest() for p in pieces]}]
    model = {
        "format": "layers-model",
        "generatedBy": generated_by,
        "convertedBy": converted_by,
        "modelTopology": topology,
        "weightsManifest": manifest,
    }
    (folder / "model.json").write_text(json.dumps(model, separators=(",", ":")))
    return model
