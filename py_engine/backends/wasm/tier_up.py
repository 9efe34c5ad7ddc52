"""The kernels' optimized code, compiled before a model needs it.

V8 compiles a WebAssembly function with its baseline compiler (Liftoff) at its first call, and with its optimizing
compiler (TurboFan, on another thread) once the function has run a while (dynamic tiering: a budget of code run, not
of calls or time); the optimized code serves the calls after that. The module's functions are its exports (the C's
helpers are inlined into them), and the backend's self-test at start runs only the product that long. So a graph
model's first run, its warm-up, ran most of its kernels on baseline code: in the page, movenet-lightning's first
convolution took 4.5-5.7 ms against 0.5 optimized, its depthwise convolutions 3.6-12 ms against 2.4, centernet's
kernels 159 ms against 98 (docs/journal/graph-models-warmup.md).

`run()` calls each kernel a model's forward pass runs (a detector's and a pose model's decoders, a classifier's head
included) on small made-up arrays, often enough that V8 optimizes it. The page's worker runs it once idle
(static/worker/playground_ahead.py), as it imports numpy.random then: nothing a model's load or runs wait for.
"""

import numpy as np

from .kernels import fused, image, linalg, math, nn, reduce, shape

CALLS = 24  # each case's calls: after them a first model's kernels took what a second model's do (the page)


def made_up(dims, seed):
    """Irregular float32 values of about unit size (without numpy.random, which the page imports later)."""
    n = int(np.prod(dims))
    return (np.sin(np.arange(n, dtype=np.float32) * np.float32(0.731) + np.float32(seed)) * np.float32(1.7)).reshape(
        dims
    )


def cases():
    """{an export of the module: a call of its wrapper that runs it}, on shapes as small as reach each one's main path
    (math.SMALL elements or more: below it the elementwise wrappers run numpy's kernels)."""
    x, rgb = made_up((1, 32, 32, 16), 1), made_up((1, 32, 32, 3), 2)
    same = {"pad": ((1, 1), (1, 1)), "dilations": (1, 1)}
    filters, bias = made_up((3, 3, 3, 16), 3), made_up((16,), 4)
    depthwise, pointwise = made_up((3, 3, 16, 1), 5), made_up((1, 1, 16, 16), 6)
    rows, narrow = made_up((512, 16), 7), made_up((16, 17), 8)
    flat, column, row = made_up((16384,), 9), made_up((4096, 1), 10), made_up((17,), 11)
    halves, scores = made_up((16384,), 12).astype(np.float16), made_up((1, 16384), 13)
    counts = (flat * 100).astype(np.int32)
    boxes, box_index = np.array([[0.1, 0.2, 0.8, 0.9]], np.float32), np.zeros(1, np.int32)
    add, sigmoid, max_pool = math._binary("Add"), math._unary("Sigmoid"), nn._pool(average=False)
    plain = {"strides": (1, 1), "pad": ((0, 0), (0, 0)), "dilations": (1, 1)}
    return {
        "conv2d": lambda: fused._fused_conv2d(rgb, filters, bias, strides=(2, 2), activation="relu6", **same),
        "depthwise": lambda: fused._fused_depthwise(x, depthwise, bias, strides=(1, 1), activation="relu6", **same),
        "gemm": lambda: fused._fused_conv2d(x, pointwise, bias, activation="relu", **plain),
        "gemm_narrow_edge": lambda: linalg._batch_matmul(rows, narrow, False, False),
        "binary": lambda: add(flat, flat),
        "binary_outer": lambda: add(column, row),
        "unary": lambda: sigmoid(flat),
        "pool": lambda: max_pool(x, (3, 3), (1, 1), same["pad"]),
        "resize_bilinear": lambda: image._resize_bilinear(x, (64, 64), False, True),
        "copy_rows": lambda: shape._concat(x, x, axis=3),
        "sum_rows": lambda: reduce._mean_kernel(x, (1, 2), False),
        "top_k_rows": lambda: reduce._top_k(scores, 100),
        "f16_to_f32": lambda: math.widen_float16(halves),
        "equal": lambda: math._equal(flat, flat),
        "to_f32": lambda: math._cast(counts, "float32"),
        "binary_i32": lambda: add(counts, counts),
        "arg_max": lambda: reduce._arg_max(x, 3),
        "gather_nd": lambda: shape._gather_nd(x, np.zeros((64, 2), np.int32)),
        "softmax_rows": lambda: reduce._softmax(x, 3),
        "log_values": lambda: math._log(flat),
        "crop_and_resize": lambda: image._crop_and_resize(x, boxes, box_index, (16, 16), "bilinear", 0.0),
    }


def run(calls=CALLS):
    """Call each case `calls` times."""
    for case in cases().values():
        for _ in range(calls):
            case()
