"""The numpy backend's class: the reference every other backend is checked against, and the CPU fallback.

A buffer handle is a read-only numpy array that nobody else holds. A kernel is a plain function
of numpy arrays (and keyword attributes) that returns an array or a tuple of arrays.
"""

import warnings

import numpy as np

from ... import dtypes
from ...backend_protocols import Backend
from ...errors import warn_at_user_line
from ...kernel_registry import registered_by_user

# Overflow, 0/0 and log(0) give inf/nan as on a GPU; numpy's warnings about them from our kernels
# are noise to users. A module filter costs nothing per call (np.errstate costs ~2 us per op).
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"py_engine\.backends\.numpy")

_NAMES = {np.dtype(np.float32): dtypes.float32, np.dtype(np.int32): dtypes.int32, np.dtype(np.bool_): dtypes.bool_}
_WARNED = set()  # (user kernel, numpy dtype) already said
# the CaptureRecording of a backend that shares these arrays (wasm) while pe.capture records there: a kernel run here
# then (pe.on_backend("numpy") inside the function) is one its replays would not run
host_recording = None


def own(out, kernel=None, backend=None):
    """Make a kernel result a buffer: engine dtype, no memory shared with an input, read-only. `kernel` and the
    `backend` that ran it: where a user's kernel returned another dtype, say so once."""
    out = np.asarray(out)
    name = _NAMES.get(out.dtype)
    if name is None:
        name = dtypes.of_numpy(out.dtype)
        if kernel is not None:
            _say_converted(kernel, backend, out.dtype, name)
        out = out.astype(dtypes.NUMPY[name])
    elif out.base is not None:
        out = out.copy()
    out.flags.writeable = False
    return out, out.nbytes, out.shape, name


def _say_converted(kernel, backend, np_dtype, name):
    """Once per user kernel and dtype: its float64 (int64, ...) result became float32 (int32), as TF.js stores it.
    The engine's own kernels rely on the conversion (np.argmax gives int64) and are not named."""
    user_name = registered_by_user(kernel, (backend.name, backend.kernel_fallback))
    if user_name is None or (user_name, np_dtype) in _WARNED:
        return
    _WARNED.add((user_name, np_dtype))
    warn_at_user_line(
        f"kernel {user_name!r} returned a {np_dtype} array; tensors are float32, int32 or bool (as in TensorFlow.js), "
        f"so it was converted to {name} (said once per kernel and dtype): return .astype({name!r}) from "
        "the kernel, to compute in the precision of the other backends"
    )


class NumpyBackend(Backend):
    name = "numpy"
    is_gpu = False
    host_arrays = True

    def __init__(self):
        # What crosses the engine's boundary, counted as on a GPU backend (tests assert readbacks per epoch).
        self.counts = {"uploads": 0, "upload_bytes": 0, "readbacks": 0, "readback_bytes": 0}

    def info(self):
        return {"device": "cpu", "numpy_version": np.__version__}

    def memory_caveats(self):
        return []

    def flush(self):
        pass  # numpy works synchronously: nothing is ever queued

    def stats(self):
        return dict(self.counts)

    def upload(self, array):
        array.flags.writeable = False
        self.counts["uploads"] += 1
        self.counts["upload_bytes"] += array.nbytes
        return array, array.nbytes

    def read(self, handle):
        self.counts["readbacks"] += 1
        self.counts["readback_bytes"] += handle.nbytes
        return handle

    async def read_async(self, handle):
        return self.read(handle)

    def free(self, handle):
        pass  # the array goes when its last reference does

    def run(self, fn, inputs, attrs):
        if host_recording is not None:
            host_recording.ran_elsewhere(self.name)
        arrays = []
        for h, dims, _ in inputs:
            arrays.append(h if h.shape == dims else h.reshape(dims))
        out = fn(*arrays, **attrs) if attrs else fn(*arrays)
        if type(out) is tuple:
            return [own(o, fn, self) for o in out], True
        return [own(out, fn, self)], False
