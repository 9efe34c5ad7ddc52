"""Kernels run on the host on purpose: ops whose output's shape depends on the input's values (non-max suppression,
where's coordinates) read their inputs back, run the numpy reference kernel and upload what it returns, as TF.js
does on its GPU backends (its whereAsync and nonMaxSuppressionAsync read back too).

Each input is a readback (pe.stats()["readbacks"]) and each output an upload; they are never a dispatch plan (a
readback spoils the log), and pe.capture refuses them as it refuses any readback. In warm-up's dry run nothing is
read: the numpy kernel runs on zeros of the inputs' shapes, so the outputs get shapes and no values.
"""

import numpy as np

from ... import dtypes
from ...kernel_registry import get_kernel


def on_host(name):
    """A webgpu kernel that runs the numpy backend's kernel `name` on the host."""

    def kernel(backend, *inputs, **attrs):
        numpy_kernel = get_kernel(name, "numpy")
        recorder = backend.recorder
        dry = recorder is not None and not recorder.runs
        arrays = [np.zeros(x.shape, dtypes.NUMPY[x.dtype]) if dry else backend.read(x).reshape(x.shape) for x in inputs]
        out = numpy_kernel(*arrays, **attrs)
        outs = out if type(out) is tuple else (out,)
        made = []
        for o in outs:
            o = np.asarray(o)
            made.append(backend.empty(o.shape, dtypes.of_numpy(o.dtype)) if dry else backend.upload(o)[0])
        return tuple(made) if type(out) is tuple else made[0]

    kernel.__name__ = f"on_host_{name}"
    return kernel


__all__ = ["on_host"]
