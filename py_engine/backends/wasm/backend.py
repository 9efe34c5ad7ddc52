"""The wasm backend's class: the numpy backend's tensors (numpy arrays in Pyodide's memory), with the kernels where
the time goes run by our own SIMD WebAssembly module on those arrays in place.

A kernel the module does not have runs the numpy backend's kernel on the same arrays (`kernel_fallback`), so moving
a tensor between `numpy` and `wasm` copies nothing and every op works on both; pe.backend_info() lists which kernels
are native. It starts only where Pyodide runs (the page, Node): the module must be instantiated on the
interpreter's own WebAssembly memory. At start a self-test compares a few kernels with numpy on awkward shapes;
anything off (no SIMD, no access to the memory, a wrong result) and set_backend("wasm") falls back to numpy with the
reason in backend_info(). set_backend("wasm", threads=n) splits the big kernels over a pool of workers (threads.py).
"""

import asyncio

import numpy as np

from ...errors import BackendError
from ...kernel_registry import names_on
from ..numpy import NumpyBackend
from ..numpy import backend as numpy_backend
from . import native
from . import threads as _threads
from .capture import KernelRecording, write_in_place

MAX_THREADS = 16  # static/worker/wasm_pool.js has control slots for 16 threads
MAX_DEFAULT_THREADS = 4
# below this many logical cores the default is one thread: on 2 the second is shared with the page and every other
# program, and an op waits for a worker preempted while it holds a chunk; on a shared 2-core machine two threads made
# the first classification slower in every run and a CNN's training step no faster (docs/wasm_backend.md, Threads)
MIN_CORES_FOR_THREADS = 4


class WasmBackend(NumpyBackend):
    name = "wasm"
    kernel_fallback = "numpy"
    captures = True  # pe.capture records programs of its kernels (capture.py)

    def __init__(self, module_bytes=None):
        super().__init__()
        data = native.module_bytes() if module_bytes is None else module_bytes
        try:
            exports = native.instantiate(data)
        except native.Unavailable as e:
            raise BackendError(str(e)) from None
        native.exports = exports
        self.module_bytes = len(data)
        self.threads_chosen = False
        self.threads_starting = None  # the default pool's start, in the background
        self._recorder = None
        self.programs = set()  # the captured programs (capture.py)
        self.replays = 0
        _self_test()

    # ---- pe.capture (capture.py) ------------------------------------------------------------------------------

    @property
    def recorder(self):
        """pe.capture's KernelRecording while it records a function (capture.py), else None."""
        return self._recorder

    @recorder.setter
    def recorder(self, recording):
        self._recorder = numpy_backend.host_recording = recording

    def record(self, name, inputs):
        if len({id(h) for h in inputs}) < len(inputs):  # two inputs share an array: the steps cannot tell them apart
            return None
        return KernelRecording(name, self, inputs)

    def run(self, fn, inputs, attrs):
        if self.recorder is not None:
            return self.recorder.run(fn, inputs, attrs)
        return super().run(fn, inputs, attrs)

    def free(self, handle):
        if self.recorder is not None:
            self.recorder.freeing(handle)

    def overwrite(self, handle, source):
        return handle.size == source.size and handle.dtype == source.dtype and write_in_place(handle, source)

    def read(self, handle):
        if self.recorder is not None:
            self.recorder.reading_back()
        return super().read(handle)

    def release_pool(self, idle=False):
        if idle:  # the engine moved on: captured programs go too, re-recorded on use
            for program in list(self.programs):
                program.release()

    def program_bytes(self):
        return sum(p.nbytes for p in self.programs)

    def stats(self):
        return {
            **super().stats(),
            "capture_programs": len(self.programs),
            "capture_bytes": self.program_bytes(),
            "capture_replays": self.replays,
            "capture_native_steps": sum(p.native_steps for p in self.programs),
            "capture_kernel_steps": sum(p.kernel_steps for p in self.programs),
            "capture_split_steps": sum(p.split_steps for p in self.programs),
        }

    async def configure(self, threads=None):
        """set_backend("wasm", threads=n): the big kernels on n threads (1: the calling thread alone, as before),
        started before set_backend returns. None: keep the number set before, else the default for this machine
        (default_threads), whose pool starts in the background: the kernels run on one thread until it is ready.
        Where threads cannot run, one, and backend_info()'s threads_reason says why."""
        if threads is None:
            if not self.threads_chosen:
                self.threads_chosen = True
                n, cores = default_threads(), _threads.cores()
                why = f"the default on {cores} core{'s' * (cores > 1)} (navigator.hardwareConcurrency)"
                starting = _threads.start(n, _threads_cases(), why)
                if n == 1:
                    await starting
                else:  # the pool's workers start while the page goes on
                    self.threads_starting = asyncio.ensure_future(starting)
            return
        if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= MAX_THREADS:
            raise ValueError(f"threads must be a whole number from 1 to {MAX_THREADS}, got {threads!r}")
        self.threads_chosen = True
        await _threads.start(threads, _threads_cases())

    def thread_bytes(self):
        return _threads.kept_bytes()

    def info(self):
        native_kernels = names_on(self.name)
        return {
            **super().info(),
            "kernels": "WebAssembly SIMD128 on numpy's memory; the big ones split over a pool of workers",
            "simd": native.simd(),
            "packed_weight_bytes": _packed_bytes(),
            **_threads.info(),
            "module_bytes": self.module_bytes,
            "native_kernels": sorted(native_kernels),
            "fallback_kernels": sorted(names_on(self.kernel_fallback) - native_kernels),
        }


def _packed_bytes():
    from .kernels.linalg import packed_bytes

    return packed_bytes()


def default_threads():
    """One thread per core (navigator.hardwareConcurrency) from MIN_CORES_FOR_THREADS cores up, at most
    MAX_DEFAULT_THREADS: each thread takes a share of every big kernel, until the copies in and out of the shared
    memory and the ops that stay on one thread take most of the time left."""
    cores = _threads.cores()
    return min(cores, MAX_DEFAULT_THREADS) if cores >= MIN_CORES_FOR_THREADS else 1


def _self_test():
    """Compare a product, a convolution, a depthwise convolution and an add with numpy on shapes that are not
    multiples of the tiles; BackendError naming the first that differs.

    The product is large enough that V8 also compiles its optimized code now, in the background, rather than running
    the first classification's layers on its baseline compiler's; the other kernels run too briefly for that (the
    page has them optimized once idle: tier_up.py)."""
    from ..numpy.kernels import fused as numpy_fused
    from ..numpy.kernels.linalg import matmul
    from .kernels.fused import _fused_conv2d, _fused_depthwise
    from .kernels.linalg import _batch_matmul
    from .kernels.math import SMALL, _binary

    a, b = _values((125, 91), 1), _values((91, 67), 2)
    x = _values((1, 29, 30, 16), 3)
    w, dw = _values((3, 3, 16, 9), 4), _values((3, 3, 16, 1), 5)
    bias, u = _values((9,), 6), _values((SMALL + 3,), 7)
    conv = {"strides": (2, 1), "pad": ((1, 1), (0, 1)), "dilations": (1, 1), "activation": "relu6"}
    checks = {
        "BatchMatMul": (_batch_matmul(a, b, False, False), matmul(a, b)),
        "FusedConv2D": (_fused_conv2d(x, w, bias, **conv), numpy_fused.fused_conv2d(x, w, bias, **conv)),
        "FusedDepthwiseConv2D": (_fused_depthwise(x, dw, **conv), numpy_fused.fused_depthwise(x, dw, **conv)),
        "Add": (_binary("Add")(u, u[::-1].copy()), u + u[::-1]),
    }
    for name, (got, want) in checks.items():
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-4, atol=1e-5):
            native.exports = None
            raise BackendError(f"the wasm kernels' self-test failed: {name} differs from numpy; running on numpy")


def _threads_cases():
    """The threads' self-test (threads.start): the big kernels and gradients on shapes whose rows do not split
    evenly."""
    from .kernels import nn
    from .kernels.linalg import _batch_matmul

    a, b = _values((125, 91), 1), _values((91, 67), 2)
    x, w, dw = _values((1, 29, 30, 16), 3), _values((3, 3, 16, 9), 4), _values((3, 3, 16, 1), 5)
    conv = {"strides": (2, 1), "pad": ((1, 1), (0, 1)), "dilations": (1, 1)}
    # the gradients split by images, taps or channels: a batch of 3 and the outputs' gradients (15 x 29 per image)
    xs, dy, ddy = _values((3, 29, 30, 16), 6), _values((3, 15, 29, 9), 7), _values((3, 15, 29, 16), 8)
    return {
        "BatchMatMul": lambda: _batch_matmul(a, b, False, False),
        "Conv2D": lambda: nn._conv2d(x, w, activation="relu6", **conv),
        "DepthwiseConv2dNative": lambda: nn._depthwise(x, dw, **conv),
        "MaxPool": lambda: nn._pool(average=False)(x, (3, 2), (2, 2), ((1, 1), (0, 1))),
        "Conv2DBackpropInput": lambda: nn._conv2d_backprop_input(dy, w, input_shape=xs.shape, **conv),
        "Conv2DBackpropFilter": lambda: nn._conv2d_backprop_filter(xs, dy, filter_shape=w.shape, **conv),
        "DepthwiseConv2dNativeBackpropFilter": lambda: nn._depthwise_backprop_filter(
            xs, ddy, filter_shape=dw.shape, **conv
        ),
    }


def _values(shape, seed):
    """Irregular float32 values of about unit size, without numpy.random: importing it at start would cost the page
    a few hundred ms of its boot (the page loads its wasm modules when idle)."""
    n = int(np.prod(shape))
    return (np.sin(np.arange(n, dtype=np.float32) * np.float32(0.731) + np.float32(seed)) * np.float32(1.7)).reshape(
        shape
    )
