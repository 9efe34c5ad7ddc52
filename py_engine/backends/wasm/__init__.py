"""The wasm backend: the numpy backend's tensors (numpy arrays in Pyodide's memory), with the kernels where the time
goes run by our own SIMD WebAssembly module on those arrays in place.

A kernel the module does not have runs the numpy backend's kernel on the same arrays (`kernel_fallback`), so moving
a tensor between `numpy` and `wasm` copies nothing and every op works on both; pe.backend_info() lists which kernels
are native. It starts only where Pyodide runs (the page, Node): the module must be instantiated on the
interpreter's own WebAssembly memory. At start a self-test compares a few kernels with numpy on awkward shapes;
anything off (no SIMD, no access to the memory, a wrong result) and set_backend("wasm") falls back to numpy with the
reason in backend_info().
"""

import numpy as np

from ...errors import BackendError
from ...kernels import names_on
from ..numpy import NumpyBackend
from . import native


class WasmBackend(NumpyBackend):
    name = "wasm"
    kernel_fallback = "numpy"

    def __init__(self, module_bytes=None):
        super().__init__()
        data = native.module_bytes() if module_bytes is None else module_bytes
        try:
            exports = native.instantiate(data)
        except native.Unavailable as e:
            raise BackendError(str(e)) from None
        native.exports = exports
        self.module_bytes = len(data)
        _self_test()

    def info(self):
        native_kernels = names_on(self.name)
        return {
            **super().info(),
            "kernels": "WebAssembly SIMD128, one thread, on numpy's memory",
            "module_bytes": self.module_bytes,
            "native_kernels": sorted(native_kernels),
            "fallback_kernels": sorted(names_on(self.kernel_fallback) - native_kernels),
        }


def _self_test():
    """Compare a product, a convolution, a depthwise convolution and an add with numpy on shapes that are not
    multiples of the tiles; BackendError naming the first that differs.

    The shapes are large enough (a few ms in all) that V8 also compiles these kernels' optimized code now, in the
    background, rather than running the first classification's layers on its baseline compiler's."""
    from ..numpy import fused as numpy_fused
    from ..numpy.linalg import matmul
    from .linalg import _batch_matmul
    from .math import SMALL, _binary
    from .nn import _fused_conv2d, _fused_depthwise

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((125, 91), np.float32), rng.standard_normal((91, 67), np.float32)
    x = rng.standard_normal((1, 29, 30, 16), np.float32)
    w, dw = rng.standard_normal((3, 3, 16, 9), np.float32), rng.standard_normal((3, 3, 16, 1), np.float32)
    bias, u = rng.standard_normal(9, np.float32), rng.standard_normal(SMALL + 3, np.float32)
    conv = {"strides": (2, 1), "pad": ((1, 1), (0, 1)), "dilations": (1, 1), "activation": "relu6"}
    checks = {
        "BatchMatMul": (_batch_matmul(a, b, False, False), matmul(a, b)),
        "FusedConv2D": (_fused_conv2d(x, w, bias, **conv), numpy_fused._fused_conv2d(x, w, bias, **conv)),
        "FusedDepthwiseConv2D": (_fused_depthwise(x, dw, **conv), numpy_fused._fused_depthwise(x, dw, **conv)),
        "Add": (_binary("Add")(u, u[::-1].copy()), u + u[::-1]),
    }
    for name, (got, want) in checks.items():
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-4, atol=1e-5):
            native.exports = None
            raise BackendError(f"the wasm kernels' self-test failed: {name} differs from numpy; running on numpy")


from . import linalg, math, nn, reduce  # noqa: E402,F401 - registers the kernels
