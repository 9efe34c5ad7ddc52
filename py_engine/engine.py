"""The engine: backend registry, data buffers, tensor tracking, scopes, memory counters, profiling.

All scope bookkeeping lives here. The scope stack is held in a ContextVar, so each asyncio task
sees its own stack: two concurrent tasks, each in its own `with scope():`, release only their own
tensors, across any number of awaits.
"""

import inspect
import itertools
import os
import sys
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np

from .errors import BackendError, DeviceLostError, DisposedTensorError, DTypeError, ShapeError
from .kernels import get_kernel

_SCOPES = ContextVar("py_engine_scopes", default=())
TAPE = ContextVar("py_engine_tape", default=None)  # set only while gradients are being recorded
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class DataBuffer:
    """Backend memory shared by a tensor and its views; freed when the last holder lets go."""

    __slots__ = ("backend", "handle", "nbytes", "refs")

    def __init__(self, backend, handle, nbytes):
        self.backend, self.handle, self.nbytes, self.refs = backend, handle, nbytes, 0


class Scope:
    __slots__ = ("exports", "name", "tracked")

    def __init__(self, name):
        self.tracked, self.exports, self.name = {}, {}, name

    def export(self, *results):
        """Mark tensors (or nested structures of them) to survive this scope; they move to the parent."""
        for t in iter_tensors(results):
            self.exports[t.id] = t
        return results[0] if len(results) == 1 else results


@dataclass
class MemoryInfo:
    num_tensors: int
    num_data_buffers: int
    num_bytes: int
    num_bytes_in_gpu: int  # live tensor data on GPU backends
    num_bytes_in_gpu_allocated: int = 0  # what GPU buffer pools hold, in use or free for reuse
    unreliable: bool = False
    reasons: list = field(default_factory=list)

    def to_dict(self):
        return dict(self.__dict__)


@dataclass
class GpuData:
    """A tensor's GPU buffer (wgpu GPUBuffer, or the bridge's buffer id in the browser)."""

    buffer: object
    shape: tuple
    dtype: str
    tensor_ref: object  # keeps the buffer alive until release()

    def release(self):
        self.tensor_ref.dispose()


@dataclass
class KernelRecord:
    name: str
    backend: str
    input_shapes: list
    output_shapes: list
    bytes_added: int
    time_ms: float


@dataclass
class ProfileInfo:
    new_tensors: int
    new_bytes: int
    peak_bytes: int
    kernels: list
    result: object = None


@dataclass
class LeakSite:
    site: str
    count: int
    num_bytes: int
    shapes: list


def iter_tensors(obj):
    """Every Tensor inside nested lists, tuples and dict values."""
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from iter_tensors(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from iter_tensors(x)


def user_site():
    """file:line of the first caller outside py_engine."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE_DIR):
        f = f.f_back
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else "<unknown>"


class Engine:
    def __init__(self):
        self._factories = {}  # backend name -> (factory, priority)
        self._backends = {}  # backend name -> started instance
        self.backend = None
        self.fallback_reason = None
        self.live = {}  # tensor id -> tensor, every tensor not yet disposed (variables too)
        self.variables = {}
        self.num_data_buffers = 0
        self.num_bytes = 0
        self.peak_bytes = 0
        self.bytes_by_backend = {}
        self.memory_budget = None  # GPU bytes allowed (set_memory_budget)
        self.debug = os.environ.get("PY_ENGINE_DEBUG", "") not in ("", "0")
        self._ids = itertools.count(1)
        self._var_ids = itertools.count(1)
        self._profile = None  # list of KernelRecord while profile() runs

    # ---- backends -------------------------------------------------------------------------

    def register_backend(self, name, factory, priority=0):
        self._factories[name] = (factory, priority)

    async def _start(self, name):
        started = self._backends.get(name)
        if started is not None and started.lost:
            del self._backends[name]  # a backend whose device was lost starts afresh
        if name not in self._backends:
            backend = self._factories[name][0]()
            if inspect.isawaitable(backend):
                backend = await backend
            self._backends[name] = backend
        return self._backends[name]

    async def set_backend(self, name):
        """Make `name` the active backend. Returns False, and falls back to numpy, if it cannot start."""
        if name not in self._factories:
            raise BackendError(f"unknown backend {name!r}; registered backends: {', '.join(sorted(self._factories))}")
        previous = self.backend
        try:
            self.backend = await self._start(name)
            self.fallback_reason = None
            return True
        except Exception as e:  # a backend that cannot start must not leave the engine without one
            if name == "numpy":
                raise
            self.fallback_reason = f"backend {name!r} could not start: {type(e).__name__}: {e}"
            self.backend = await self._start("numpy")
            return False
        finally:
            if previous is not None:
                self._release_if_idle(previous)

    def _release_if_idle(self, backend):
        """A GPU backend that is no longer active keeps no spare buffers: its pool goes back to the device
        (its tensors keep theirs until they move to the active backend or are disposed)."""
        if backend is not self.backend and not backend.lost:
            backend.release_pool()

    def active(self):
        if self.backend is None:  # numpy starts synchronously, so first use needs no await
            self.backend = self._backends.get("numpy") or self._factories["numpy"][0]()
            self._backends["numpy"] = self.backend
        return self.backend

    def backend_info(self):
        backend = self.active()
        return {"name": backend.name, **backend.info(), "fallback_reason": self.fallback_reason}

    def _device_lost(self, backend, error):
        """Fall back to numpy once a backend's device is gone; the reason shows in backend_info()."""
        if self.backend is backend:
            self.fallback_reason = f"backend {backend.name!r} lost its device ({error}); running on numpy"
            self.backend = None
            self.active()

    def forget_backend(self, name):
        """Drop a started backend instance (its tensors must have been moved or disposed)."""
        backend = self._backends.pop(name, None)
        if backend is self.backend:
            self.backend = None

    # ---- buffers and tensors --------------------------------------------------------------

    def _new_buffer(self, backend, handle, nbytes):
        self.num_data_buffers += 1
        self.num_bytes += nbytes
        self.bytes_by_backend[backend.name] = self.bytes_by_backend.get(backend.name, 0) + nbytes
        if self.num_bytes > self.peak_bytes:
            self.peak_bytes = self.num_bytes
        return DataBuffer(backend, handle, nbytes)

    def _unref(self, buf):
        buf.refs -= 1
        if buf.refs == 0:
            buf.backend.free(buf.handle)
            buf.handle = None
            self.num_data_buffers -= 1
            self.num_bytes -= buf.nbytes
            self.bytes_by_backend[buf.backend.name] -= buf.nbytes
            if buf.backend is not self.backend:
                self._release_if_idle(buf.backend)

    def _move(self, buf, backend):
        """Copy a buffer to `backend` (the tensor was made before a backend switch)."""
        old = buf.backend
        host = old.read(buf.handle)
        handle, nbytes = backend.upload(host)
        old.free(buf.handle)
        self._release_if_idle(old)
        self.bytes_by_backend[old.name] -= buf.nbytes
        self.bytes_by_backend[backend.name] = self.bytes_by_backend.get(backend.name, 0) + nbytes
        self.num_bytes += nbytes - buf.nbytes
        buf.backend, buf.handle, buf.nbytes = backend, handle, nbytes

    def make_tensor(self, buf, shape, dtype, cls=None):
        """A new tensor holding a reference to `buf`; plain tensors join the innermost open scope."""
        t = object.__new__(cls or Tensor)
        buf.refs += 1
        t.id = next(self._ids)
        t.shape, t.dtype, t.kept, t._buf = shape, dtype, False, buf
        t._created_at = user_site() if self.debug else None
        t._disposed_at = None
        self.live[t.id] = t
        stack = _SCOPES.get()
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
            self._device_lost(backend, e)
            backend = self.active()
            handle, nbytes = backend.upload(array)
        return self.make_tensor(self._new_buffer(backend, handle, nbytes), array.shape, dtype)

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
        if type(t) is Variable:
            self.variables.pop(t.var_name, None)
        self._unref(buf)

    def dispose(self, obj):
        for t in list(iter_tensors(obj)):
            self.dispose_tensor(t)

    def keep(self, obj):
        for t in iter_tensors(obj):
            t._live_buffer()
            t.kept = True
        return obj

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
        self._device_lost(buf.backend, error)
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
            self._move(buf, backend)
        backend.flush()
        ref = self.keep(self.make_tensor(buf, t.shape, t.dtype))
        return GpuData(backend.native_buffer(buf.handle), t.shape, t.dtype, ref)

    # ---- kernels --------------------------------------------------------------------------

    def run_kernel(self, name, inputs, attrs=None):
        """Run kernel `name` on the active backend. Returns a tensor, or a tuple for multi-output kernels."""
        backend = self.backend or self.active()
        fn = get_kernel(name, backend.name)
        for t in inputs:
            buf = t._buf
            if buf is None:
                raise DisposedTensorError(t._disposed_message())
            if buf.backend is not backend:
                self._move(buf, backend)
        if self._profile is not None:
            return self._run_profiled(name, fn, backend, inputs, attrs)
        try:
            results, multi = backend.run(fn, inputs, attrs)
        except DeviceLostError as e:
            self._device_lost(backend, e)
            raise
        outs = tuple(
            [self.make_tensor(self._new_buffer(backend, h, n), shape, dtype) for h, n, shape, dtype in results]
        )
        tape = TAPE.get()
        if tape is not None:
            tape.record(name, attrs, inputs, outs)
        return outs if multi else outs[0]

    def _run_profiled(self, name, fn, backend, inputs, attrs):
        records, self._profile = self._profile, None
        try:
            bytes_before = self.num_bytes
            start = time.perf_counter()
            out = self.run_kernel(name, inputs, attrs)
            elapsed = (time.perf_counter() - start) * 1e3
            outs = out if isinstance(out, tuple) else (out,)
            records.append(
                KernelRecord(
                    name,
                    backend.name,
                    [t.shape for t in inputs],
                    [t.shape for t in outs],
                    self.num_bytes - bytes_before,
                    elapsed,
                )
            )
            return out
        finally:
            self._profile = records

    # ---- scopes ---------------------------------------------------------------------------

    def start_scope(self, name=None):
        scope = Scope(name)
        _SCOPES.set(_SCOPES.get() + (scope,))
        return scope

    def end_scope(self, result=None):
        stack = _SCOPES.get()
        if not stack:
            raise RuntimeError("end_scope() called with no open scope; pair it with start_scope()")
        _SCOPES.set(stack[:-1])
        self._close(stack[-1], stack[-2] if len(stack) > 1 else None, result)
        return result

    def _close(self, scope, parent, result):
        survivors = dict(scope.exports)
        for t in iter_tensors(result):
            survivors[t.id] = t
        tracked, scope.tracked = scope.tracked, {}
        for tid, t in tracked.items():
            if tid in survivors:
                t._scope = parent
                if parent is not None:
                    parent.tracked[tid] = t
            elif t.kept:
                t._scope = None
            else:
                t._scope = None
                self.dispose_tensor(t)
        # No GPU submit here: what the scope freed is reused once the work reading it is submitted (at a readback
        # or every batch of dispatches), so a tidy per op costs no submit of its own.

    @contextmanager
    def scope(self, name=None):
        scope = Scope(name)
        token = _SCOPES.set(_SCOPES.get() + (scope,))
        try:
            yield scope
        finally:
            _SCOPES.reset(token)
            stack = _SCOPES.get()
            self._close(scope, stack[-1] if stack else None, None)

    def tidy(self, fn, *args, **kwargs):
        if inspect.iscoroutinefunction(fn):
            raise TypeError(_ASYNC_TIDY)
        with self.scope(getattr(fn, "__name__", None)) as scope:
            result = fn(*args, **kwargs)
            if inspect.isawaitable(result):
                if inspect.iscoroutine(result):
                    result.close()
                raise TypeError(_ASYNC_TIDY)
            scope.export(result)
        return result

    # ---- variables ------------------------------------------------------------------------

    def variable(self, initial, trainable=True, name=None, dtype=None):
        from .ops.convert import as_tensor

        if name is None:
            name = f"Variable_{next(self._var_ids)}"
            while name in self.variables:
                name = f"Variable_{next(self._var_ids)}"
        elif name in self.variables:
            raise ValueError(f"a variable named {name!r} already exists; choose another name or dispose it first")
        value, temporary = as_tensor(initial, dtype, "variable")
        v = self.make_tensor(value._live_buffer(), value.shape, value.dtype, Variable)
        v.var_name, v.trainable = name, bool(trainable)
        self.variables[name] = v
        if temporary:
            self.dispose_tensor(value)
        return v

    def assign(self, v, value):
        from .ops.convert import as_tensor

        v._live_buffer()
        new, temporary = as_tensor(value, None if isinstance(value, Tensor) else v.dtype, "assign")
        try:
            if new.shape != v.shape:
                raise ShapeError(f"assign: {v.var_name} has shape {v.shape}, the new value has shape {new.shape}")
            if new.dtype != v.dtype:
                raise DTypeError(f"assign: {v.var_name} is {v.dtype}, the new value is {new.dtype}; cast it first")
            buf = new._live_buffer()
            buf.refs += 1
            old, v._buf = v._buf, buf
            self._unref(old)
        finally:
            if temporary:
                self.dispose_tensor(new)

    def dispose_variables(self):
        for v in list(self.variables.values()):
            self.dispose_tensor(v)

    # ---- memory and debugging -------------------------------------------------------------

    def memory(self):
        gpus = [b for b in self._backends.values() if b.is_gpu]
        gpu = sum(self.bytes_by_backend.get(b.name, 0) for b in gpus)
        allocated = sum(b.allocated_bytes() for b in gpus)
        reasons = []
        for backend in self._backends.values():
            reasons += backend.memory_caveats()
        return MemoryInfo(len(self.live), self.num_data_buffers, self.num_bytes, gpu, allocated, bool(reasons), reasons)

    def set_memory_budget(self, nbytes):
        """Cap the GPU memory that live tensors may hold at `nbytes` (None: no cap).

        An allocation that would take the GPU bytes in use (memory().num_bytes_in_gpu, plus what the
        running op already took) past the budget raises ResourceExhaustedError naming the op, the
        budget and the bytes, and allocates nothing, so a loop that leaks stops with a message
        instead of exhausting the device. The numpy backend ignores the budget: host memory is
        not the GPU's, and the operating system already stops a process that runs out of it.
        """
        if nbytes is not None and (type(nbytes) is not int or nbytes < 0):
            raise ValueError(f"set_memory_budget takes a number of bytes >= 0 or None, got {nbytes!r}")
        self.memory_budget = nbytes

    def stats(self):
        """The active backend's counters: dispatches, submits, pipeline compiles, uploads, readbacks, bytes."""
        backend = self.active()
        return {"backend": backend.name, **backend.stats()}

    async def warmup(self, fn, *args, **kwargs):
        """Compile the GPU pipelines that fn(*args) needs without running them; returns how many were new.

        fn runs once in a dry mode where kernels record shaders instead of dispatching (values read
        inside fn are meaningless); its tensors are released.
        """
        backend = self.active()
        if not backend.is_gpu:
            return 0
        backend.dry_run = []
        try:
            with self.scope():
                self.dispose(fn(*args, **kwargs))
            shaders = backend.dry_run
        finally:
            backend.dry_run = None
        return await backend.warmup(shaders)

    def profile(self, fn, *args, **kwargs):
        if inspect.iscoroutinefunction(fn):
            raise TypeError("profile() takes a synchronous function; profile the synchronous part of your code")
        if self._profile is not None:
            raise RuntimeError("profile() cannot be nested")
        tensors_before, bytes_before = len(self.live), self.num_bytes
        self.peak_bytes = self.num_bytes
        self._profile = records = []
        try:
            result = fn(*args, **kwargs)
        finally:
            self._profile = None
        return ProfileInfo(
            len(self.live) - tensors_before, self.num_bytes - bytes_before, self.peak_bytes, records, result
        )

    def leaks(self, include_variables=False):
        """Live tensors grouped by where they were created, most numerous first."""
        groups = {}
        for t in self.live.values():
            if isinstance(t, Variable) and not include_variables:
                continue
            site = t._created_at or "unknown site (call pe.set_debug(True) to record creation sites)"
            count, bufs, shapes = groups.get(site, (0, {}, []))
            bufs[id(t._buf)] = t._buf.nbytes
            if len(shapes) < 5 and t.shape not in shapes:
                shapes.append(t.shape)
            groups[site] = (count + 1, bufs, shapes)
        sites = [LeakSite(site, n, sum(bufs.values()), shapes) for site, (n, bufs, shapes) in groups.items()]
        return sorted(sites, key=lambda s: -s.count)


_ASYNC_TIDY = (
    "tidy() takes a synchronous function: tensors created after an `await` could not be tracked. "
    "Use `with pe.scope():` around async code instead (it stays correct across awaits)."
)

ENGINE = Engine()

from .tensor import Tensor, Variable  # noqa: E402 - tensor.py needs this module first
