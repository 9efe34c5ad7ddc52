"""The Teach panel's full model of images: EfficientNet-Lite0 and the trained head as one TF.js layers model that takes
a 224x224 RGB image of 0..255 (tf.loadLayersModel runs it as it is).

Written from the files, not from the loaded classifier (which is folded and cannot be saved): the classifier's
model.json and shards as the server serves them (the browser's cache has them), with
- a 1x1 DepthwiseConv2D "teach_normalize" in front, whose per-channel weight 1 / (255 std) and bias -mean / std do
  the classifier's preprocessing ((x / 255 - mean) / std) inside the model,
- its top (dropout and the 1000-class dense layer) replaced by the head, on the "avg_pool" features.
full_model() is plain Python on those files (tests/test_teach_full_model.py runs it in CPython).
"""

import json

import numpy as np

NORMALIZE = "teach_normalize"
FEATURES_LAYER = "avg_pool"
_DTYPE_BYTES = {"float32": 4, "int32": 4, "uint8": 1, "bool": 1}


def _entries(manifest, data):
    """(weight entry, its bytes) of a weightsManifest whose shards, concatenated in order, are `data`."""
    at = 0
    for group in manifest:
        for entry in group["weights"]:
            if "quantization" in entry:
                raise ValueError(f"teach: the full model needs unquantized weights; {entry['name']} is quantized")
            size = int(np.prod(entry["shape"], dtype=np.int64)) * _DTYPE_BYTES[entry["dtype"]]
            yield entry, data[at : at + size]
            at += size
    if at != len(data):
        raise ValueError(f"teach: the shards hold {len(data)} bytes, the manifest lists {at}")


def full_model(body_json, body_weights, head_json, head_weights, mean, std, metadata):
    """(model.json as a dict, its one shard's bytes) of the body (a functional layers model with an "avg_pool" layer,
    its input the normalized image) and the head (a Sequential of one Dense layer); metadata: userDefinedMetadata."""
    config = body_json["modelTopology"]["config"]
    layers = {layer["name"]: layer for layer in config["layers"]}
    if FEATURES_LAYER not in layers or len(config["input_layers"]) != 1:
        raise ValueError(f"teach: the body needs one input and a layer {FEATURES_LAYER!r} for the full model")
    (input_name, _, _), channels = config["input_layers"][0], 3
    (head_layer,) = head_json["modelTopology"]["config"]["layers"]
    head_config = {k: v for k, v in head_layer["config"].items() if k != "batch_input_shape"}
    kept, top = [], False
    for layer in config["layers"]:
        feeds_on_features = any(node[0] == FEATURES_LAYER for nodes in layer["inbound_nodes"] for node in nodes)
        top = top or feeds_on_features
        if top:  # the layers after avg_pool: the ImageNet classifier the head replaces
            continue
        layer = json.loads(json.dumps(layer))
        for nodes in layer["inbound_nodes"]:
            for node in nodes:
                if node[0] == input_name:
                    node[0] = NORMALIZE
        kept.append(layer)
        if layer["name"] == input_name:
            kept.append({
                "name": NORMALIZE,
                "class_name": "DepthwiseConv2D",
                "config": {
                    "name": NORMALIZE, "trainable": False, "kernel_size": [1, 1], "strides": [1, 1],
                    "padding": "valid", "depth_multiplier": 1, "data_format": "channels_last",
                    "dilation_rate": [1, 1], "activation": "linear", "use_bias": True,
                },
                "inbound_nodes": [[[input_name, 0, 0, {}]]],
            })  # fmt: skip
    head_name = head_config["name"]
    kept.append({
        "name": head_name, "class_name": "Dense", "config": head_config,
        "inbound_nodes": [[[FEATURES_LAYER, 0, 0, {}]]],
    })  # fmt: skip
    kept_names = {layer["name"] for layer in kept}
    mean, std = np.asarray(mean, np.float32), np.asarray(std, np.float32)
    weights = [
        ({"name": f"{NORMALIZE}/depthwise_kernel", "shape": [1, 1, channels, 1], "dtype": "float32"},
         (1 / (255 * std)).astype(np.float32).tobytes()),
        ({"name": f"{NORMALIZE}/bias", "shape": [channels], "dtype": "float32"}, (-mean / std).astype(np.float32).tobytes()),
    ]  # fmt: skip
    weights += [
        (e, b) for e, b in _entries(body_json["weightsManifest"], body_weights) if e["name"].split("/")[0] in kept_names
    ]
    weights += list(_entries(head_json["weightsManifest"], head_weights))
    topology = {
        **body_json["modelTopology"],
        "config": {**config, "name": "teach_full_model", "layers": kept, "output_layers": [[head_name, 0, 0]]},
    }
    shard = b"".join(b for _, b in weights)
    model_json = {
        "format": "layers-model",
        "generatedBy": body_json.get("generatedBy"),
        "convertedBy": "py_engine playground Teach panel",
        "modelTopology": topology,
        "weightsManifest": [{"paths": ["group1-shard1of1.bin"], "weights": [e for e, _ in weights]}],
        "userDefinedMetadata": metadata,
    }
    return model_json, shard
