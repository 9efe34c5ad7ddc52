"""The Engine: tensors made, moved, read and disposed, and the per-op path run_kernel -> make_tensor -> scope.

Engine composes one class per responsibility (registry, accounting, scopes, variables, profiler, leaks,
warm-up, capture, fresh values), all sharing this one object's state. They are mixins rather than separate objects so that the per-op
path costs no extra attribute hop: run_kernel reads `self.backend`, calls `self.new_buffer` and
`self.make_tensor` exactly as a single class would.
"""

import itertools
from dataclasses import dataclass

import numpy as np

from ..backend_protocols import CaptureRecording
from ..errors import BackendError, DeviceLostError, DisposedTensorError
from ..kernel_registry import _KERNELS, get_kernel
from ..tensor import Tensor, Variable
from .accounting import BufferAccounting
from .capture import Capture
from .fresh_values import FreshValues
from .leaks import LeakFinder, user_site
from .profiler import Profiler
from .registry import PINNED, BackendRegistry
from .scopes import SCOPES, Scopes, iter_tensors
from .tape import TAPE
from .variables import Variables
from .warmup import Warmup, dry_running


@dataclass
class GpuData:
    """A tensor's GPU buffer (wgpu GPUBuffer, or the bridge's buffer id in the browser)."""

    buffer: object
    shape: tuple
    dtype: str
    tensor_ref: object  # keeps the buffer alive until release()

    def release(self):
        self.tensor_ref.dispose()


class Engine(BackendRegistry, BufferAccounting, Scopes, Variables, Profiler, LeakFinder, Warmup, Capture, FreshValues):
    def __init__(self):
        super().__init__()
        self._ids = itertools.count(1)

    def make_tensor(self, buf, shape, dtype, cls=None):
        """A new tensor holding a reference to `buf`; plain tensors join the innermost open scope."""
        t = object.__new__(cls or Tensor)
        buf.refs += 1
        t.id = next(self._ids)
        t.shape, t.dtype, t.kept, t._buf = shape, dtype, False, buf
        t._created_at = user_site() if self.debug else None
        t._disposed_at = None
        self.live[t.id] = t
        stack = SCOPES.get()
        if stack and cls is None:
            scope = stack[-1]
            scope.tracked[t.id] = t
            t._scope = scope
        else:
            t._scope = None
        return t

    def from_numpy(self, array, dtype):
        """A new tensor holding a copy of `array` (already of the engine dtype `dtype`)."""
        backend = self.active()
        try:
            handle, nbytes = backend.upload(array)
        except DeviceLostError as e:
            self.device_lost(backend, e)
            backend = self.active()
            handle, nbytes = backend.upload(array)
        return self.make_tensor(self.new_buffer(backend, handle, nbytes), array.shape, dtype)

    def from_number(self, array, dtype):
        """A tensor of a one-element array made for an op's Python-number operand: the backend may keep it on the
        host (backend.host_scalar), else it is uploaded."""
        backend = self.active()
        made = backend.host_scalar(array)
        if made is None:
            return self.from_numpy(array, dtype)
        return self.make_tensor(self.new_buffer(backend, *made), array.shape, dtype)

    def view(self, x, shape):
        """A tensor of another shape sharing x's buffer (reshape, expand_dims, squeeze, flatten)."""
        out = self.make_tensor(x._live_buffer(), shape, x.dtype)
        tape = TAPE.get()
        if tape is not None:
            tape.record("Reshape", {"shape": x.shape}, (x,), (out,))
        return out

    def share(self, t):
        """An untracked tensor sharing t's buffer: what the tape saves for the backward pass."""
        out = self.make_tensor(t._live_buffer(), t.shape, t.dtype)
        if out._scope is not None:
            del out._scope.tracked[out.id]
            out._scope = None
        return out

    def dispose_tensor(self, t):
        buf = t._buf
        if buf is None:
            return
        t._buf = None
        if self.debug:
            t._disposed_at = user_site()
        del self.live[t.id]
        if t._scope is not None:
            t._scope.tracked.pop(t.id, None)
            t._scope = None
        variable = type(t) is Variable
        if variable:
            self.variables.pop(t.var_name, None)
        self.unref(buf)
        if variable:  # the captured programs binding it go (engine/capture.py)
            self.variable_disposed()

    def dispose(self, obj):
        for t in list(iter_tensors(obj)):
            self.dispose_tensor(t)

    def read(self, t):
        """Values of t as a new numpy array of its shape (sync readback)."""
        buf = t._live_buffer()
        try:
            host = buf.backend.read(buf.handle)
        except DeviceLostError as e:
            raise self._lost_tensor(t, buf, e) from e
        return np.array(host, copy=True).reshape(t.shape)

    async def read_async(self, t):
        buf = t._live_buffer()
        try:
            host = await buf.backend.read_async(buf.handle)
        except DeviceLostError as e:
            raise self._lost_tensor(t, buf, e) from e
        return np.array(host, copy=True).reshape(t.shape)

    def _lost_tensor(self, t, buf, error):
        self.device_lost(buf.backend, error)
        return DeviceLostError(
            f"{t.name} (shape {t.shape}) lived on the {buf.backend.name} device, which was lost ({error}); "
            "its data is gone: dispose it and compute it again (new work runs on numpy)"
        )

    def data_to_gpu(self, t):
        """t's GPU buffer, for downstream GPU work without a readback; call .release() when done."""
        buf = t._live_buffer()
        backend = self.active()
        if not backend.is_gpu:
            raise BackendError(f"data_to_gpu() needs a GPU backend; the active backend is {backend.name!r}")
        if buf.backend is not backend:
            self.move(buf, backend)
        backend.flush()
        ref = self.keep(self.make_tensor(buf, t.shape, t.dtype))
        return GpuData(backend.native_buffer(buf.handle), t.shape, t.dtype, ref)

    def run_kernel(self, name, inputs, attrs=None):
        """Run kernel `name` on the active backend. Returns a tensor, or a tuple for multi-output kernels."""
        backend = PINNED.get() or self.backend or self.active()
        fn = _KERNELS.get((name, backend.name)) or get_kernel(name, backend.name, getattr(backend, "kernel_fallback", None))  # fmt: skip
        args = []  # what the backend sees of each input: (handle, shape, dtype)
        for t in inputs:
            buf = t._buf
            if buf is None:
                raise DisposedTensorError(t._disposed_message())
            if buf.backend is not backend and not dry_running(backend):  # warm-up moves nothing
                self.move(buf, backend)
            args.append((buf.handle, t.shape, t.dtype))
        if self._profile is not None:
            return self._run_profiled(name, fn, backend, inputs, attrs)
        tape = TAPE.get()
        if tape is not None and isinstance(backend.recorder, CaptureRecording):
            backend.recorder.differentiating()
        try:
            results, multi = backend.run(fn, args, attrs)
        except DeviceLostError as e:
            self.device_lost(backend, e)
            raise
        if multi:
            outs = tuple([self.make_tensor(self.new_buffer(backend, h, n), s, d) for h, n, s, d in results])
        else:
            handle, nbytes, shape, dtype = results[0]
            outs = (self.make_tensor(self.new_buffer(backend, handle, nbytes), shape, dtype),)
        if tape is not None:
            tape.record(name, attrs, inputs, outs)
        return outs if multi else outs[0]
