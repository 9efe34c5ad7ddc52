"""What the page's worker does once idle (boot.js calls compile_ahead once no request has run for 3 s), so that a
visitor's first model on wasm does not pay for it in its load and warm-up:

- V8's optimized code for the module's kernels (py_engine/backends/wasm/tier_up.py): V8 runs a WebAssembly function on
  its baseline code until it has run a while;
- the code of a graph model's load and first runs (the JSON, the graph's parse and checks, float16's widening, the
  plan, the recording, the program's build, replays), run once on a small graph model made here, in memory: a first
  load in a page ran each of Pyodide's functions it needs for the first time;
- Pyodide's heap grown and written (HEAP_AHEAD_MB), where the device has the memory: a large model's first run
  otherwise writes each new page of the heap for the first time (centernet's grows it by 56 MB).

docs/wasm_backend.md ("Ahead of a first model") has the figures.
"""

import base64
import json

import numpy as np

import py_engine as pe
from py_engine.backends.wasm import tier_up
from py_engine.models import graph_model

HEAP_AHEAD_MB = 64
LOADS = 24
HEAP_AHEAD_DEVICE_GB = 4  # navigator.deviceMemory from which the heap is grown ahead (it says 0.25-8, rounded)


def compile_ahead(device_memory_gb=0):
    """On wasm: run the kernels, then the small model's load, recording and two replays, all disposed; then grow the
    heap where `device_memory_gb` (navigator.deviceMemory, 0 where the browser does not say) allows."""
    if pe.get_backend() != "wasm":
        return
    tier_up.run()
    files = small_model()
    for _ in range(LOADS - 1):  # V8 optimizes a function once it has run a while, as the kernels' calls above
        graph_model.from_bytes(*files).dispose()
    model = graph_model.from_bytes(*files)
    try:
        with pe.scope():
            x = pe.tensor((tier_up.made_up(INPUT_SHAPE, 1) * 64).astype(np.int32) % 256)
            for _ in range(3):  # the recording, then two replays
                with pe.scope():
                    for y in model.execute(x):
                        y.numpy()
    finally:
        model.dispose()
    if device_memory_gb >= HEAP_AHEAD_DEVICE_GB:
        grow_heap(HEAP_AHEAD_MB)


def grow_heap(mb):
    """Have Pyodide's heap hold `mb` MB more, written once: freed, the memory stays the heap's (a WebAssembly memory
    never shrinks), and a later allocation finds its pages already in place."""
    block = np.empty(mb << 20, np.uint8)
    block.fill(1)
    del block


# ---- the small model: a pose model's path in miniature -------------------------------------------------------------
# an int32 image, cast; a strided convolution with relu6; a depthwise one through hard-swish (a chain the executor
# fuses into the convolution); a pointwise one with a residual, resized back up; a sigmoid head and a mean over a
# concat; an argmax over the flattened heatmap, as a pose decoder's. Its weights are float16 and its nodes carry the
# attrs TF.js's converter writes, as the published models' do.
INPUT_SHAPE = (1, 32, 32, 3)
_WEIGHTS = (
    ("w1", (3, 3, 3, 16)),
    ("b1", (16,)),
    ("wd", (3, 3, 16, 1)),
    ("bd", (16,)),
    ("three", ()),
    ("sixth", ()),
    ("wp", (1, 1, 16, 16)),
    ("bp", (16,)),
)
_INT_WEIGHTS = (
    ("axis", (), [3]),
    ("axes", (2,), [1, 2]),
    ("size", (2,), [32, 32]),
    ("flat", (2,), [1, -1]),
    ("dimension", (), [1]),
)


def small_model():
    """(model.json's bytes, [its shard's bytes]) of the small model."""
    values = {name: tier_up.made_up(shape, seed) / 4 for seed, (name, shape) in enumerate(_WEIGHTS)}
    values["three"], values["sixth"] = np.float32(3), np.float32(1 / 6)
    specs = [
        {"name": name, "shape": list(shape), "dtype": "float32", "quantization": {"dtype": "float16"}}
        for name, shape in _WEIGHTS
    ]
    specs += [{"name": name, "shape": list(shape), "dtype": "int32"} for name, shape, _ in _INT_WEIGHTS]
    shard = b"".join(np.asarray(values[name], "<f2").tobytes() for name, _ in _WEIGHTS)
    shard += b"".join(np.array(v, "<i4").tobytes() for _, _, v in _INT_WEIGHTS)
    artifacts = {
        "format": "graph-model",
        "generatedBy": "2.x",
        "convertedBy": "TensorFlow.js Converter v4.22.0",
        "signature": {
            "inputs": {"x:0": {"name": "x:0", "dtype": "DT_INT32", "tensorShape": _shape(INPUT_SHAPE)}},
            "outputs": {
                name: {"name": name, "dtype": dtype, "tensorShape": _shape(shape)}
                for name, dtype, shape in (
                    ("heatmap:0", "DT_FLOAT", (1, 32, 32, 16)),
                    ("pooled:0", "DT_FLOAT", (1, 32)),
                    ("peak:0", "DT_INT32", (1,)),
                )
            },
        },
        "modelTopology": {"node": _nodes(), "library": {}, "versions": {"producer": 1395}},
        "weightsManifest": [{"paths": ["small.bin"], "weights": specs}],
    }
    return json.dumps(artifacts).encode(), [shard]


def _nodes():
    float_t = {"T": {"type": "DT_FLOAT"}}
    same = {"padding": _s("SAME"), "data_format": _s("NHWC"), "dilations": _ints(1, 1, 1, 1)}

    def conv(op, x, w, b, fused, stride=1):
        attrs = {**float_t, **same, "strides": _ints(1, stride, stride, 1), "num_args": {"i": "1"}}
        attrs |= {"explicit_paddings": {"list": {}}, "fused_ops": {"list": {"s": [_s(f)["s"] for f in fused]}}}
        if op == "_FusedConv2D":
            attrs |= {"epsilon": {"f": 0}, "use_cudnn_on_gpu": {"b": True}}
        return (op, [x, w, b], attrs)

    def const(name, shape, dtype):
        value = {"tensor": {"dtype": dtype, "tensorShape": _shape(shape)}}
        return (name, "Const", [], {"value": value, "dtype": {"type": dtype}})

    int_t = {"Tidx": {"type": "DT_INT32"}}
    nodes = [
        ("x", "Placeholder", [], {"shape": {"shape": _shape(INPUT_SHAPE)}, "dtype": {"type": "DT_INT32"}}),
        *(const(name, shape, "DT_FLOAT") for name, shape in _WEIGHTS),
        *(const(name, shape, "DT_INT32") for name, shape, _ in _INT_WEIGHTS),
        (
            "image",
            "Cast",
            ["x"],
            {"DstT": {"type": "DT_FLOAT"}, "SrcT": {"type": "DT_INT32"}, "Truncate": {"b": False}},
        ),
        ("first", *conv("_FusedConv2D", "image", "w1", "b1", ["BiasAdd", "Relu6"], stride=2)),
        ("depthwise", *conv("FusedDepthwiseConv2dNative", "first", "wd", "bd", ["BiasAdd"])),
        ("scaled", "Mul", ["depthwise", "sixth"], float_t),
        ("shifted", "AddV2", ["depthwise", "three"], float_t),
        ("clipped", "Relu6", ["shifted"], float_t),
        ("swished", "Mul", ["scaled", "clipped"], float_t),
        ("pointwise", *conv("_FusedConv2D", "swished", "wp", "bp", ["BiasAdd"])),
        ("residual", "AddV2", ["pointwise", "first"], float_t),
        ("upsampled", "ResizeBilinear", ["residual", "size"], {**float_t, "half_pixel_centers": {"b": True}}),
        ("heatmap", "Sigmoid", ["upsampled"], float_t),
        ("joined", "ConcatV2", ["first", "residual", "axis"], {**float_t, **int_t, "N": {"i": "2"}}),
        ("pooled", "Mean", ["joined", "axes"], {**float_t, **int_t, "keep_dims": {"b": False}}),
        ("flattened", "Reshape", ["heatmap", "flat"], {**float_t, "Tshape": {"type": "DT_INT32"}}),
        ("peak", "ArgMax", ["flattened", "dimension"], {**float_t, **int_t, "output_type": {"type": "DT_INT32"}}),
    ]
    return [{"name": name, "op": op, "input": inputs, "attr": attrs} for name, op, inputs, attrs in nodes]


def _shape(dims):
    return {"dim": [{"size": str(d)} for d in dims]} if dims else {}


def _s(text):
    return {"s": base64.b64encode(text.encode()).decode()}


def _ints(*values):
    return {"list": {"i": [str(v) for v in values]}}
