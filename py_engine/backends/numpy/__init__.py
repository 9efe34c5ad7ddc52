"""The numpy backend: the reference every other backend is checked against, and the CPU fallback.

A buffer handle is a read-only numpy array that nobody else holds. A kernel is a plain function
of numpy arrays (and keyword attributes) that returns an array or a tuple of arrays.
"""

import warnings

import numpy as np

from ... import dtypes
from ..protocols import Backend

# Overflow, 0/0 and log(0) give inf/nan as on a GPU; numpy's warnings about them from our kernels
# are noise to users. A module filter costs nothing per call (np.errstate costs ~2 us per op).
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"py_engine\.backends\.numpy")

_NAMES = {np.dtype(np.float32): dtypes.float32, np.dtype(np.int32): dtypes.int32, np.dtype(np.bool_): dtypes.bool_}


def own(out):
    """Make a kernel result a buffer: engine dtype, no memory shared with an input, read-only."""
    out = np.asarray(out)
    name = _NAMES.get(out.dtype)
    if name is None:
        name = dtypes.of_numpy(out.dtype)
        out = out.astype(dtypes.NUMPY[name])
    elif out.base is not None:
        out = out.copy()
    out.flags.writeable = False
    return out, out.nbytes, out.shape, name


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
        arrays = []
        for t in inputs:
            h = t._buf.handle
            arrays.append(h if h.shape == t.shape else h.reshape(t.shape))
        out = fn(*arrays, **attrs) if attrs else fn(*arrays)
        if type(out) is tuple:
            return [own(o) for o in out], True
        return [own(out)], False


from . import fused, image, linalg, math, nn, recurrent, reduce, sequence, shape  # noqa: E402,F401 - registers the kernels
