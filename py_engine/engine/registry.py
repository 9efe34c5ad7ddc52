"""The engine's backends: registered factories, started instances, the active one, and the fallback to numpy."""

import inspect
from contextlib import contextmanager
from contextvars import ContextVar

from ..errors import BackendError
from .must_await import must_await

# The backend pinned by on_backend(), for this task only; None: the active one.
PINNED = ContextVar("py_engine_pinned_backend", default=None)


class BackendRegistry:
    def __init__(self):
        super().__init__()
        self._factories = {}  # backend name -> (factory, priority)
        self._backends = {}  # backend name -> started instance
        self.backend = None
        self.fallback_reason = None

    def register_backend(self, name, factory, priority=0):
        self._factories[name] = (factory, priority)

    def backend_names(self):
        """The registered backends' names, started or not (pe.register_kernel checks a kernel's backend here)."""
        return sorted(self._factories)

    async def _start(self, name):
        started = self._backends.get(name)
        if started is not None and started.lost:
            del self._backends[name]  # a backend whose device was lost starts afresh
        if name not in self._backends:
            backend = self._factories[name][0]()
            if inspect.isawaitable(backend):
                backend = await backend
            self._give_budget(backend)
            self._backends[name] = backend
        return self._backends[name]

    @must_await("set_backend")
    async def set_backend(self, name, **options):
        """Make `name` the active backend. Returns False, and falls back to numpy, if it cannot start.

        options go to the backend's configure() (wasm: threads=n), also when it runs already."""
        if name not in self._factories:
            raise BackendError(f"unknown backend {name!r}; registered backends: {', '.join(sorted(self._factories))}")
        configure = getattr(self._factories[name][0], "configure", None)
        if options and configure is None:
            raise BackendError(f"backend {name!r} takes no options; got {', '.join(sorted(options))}")
        previous = self.backend
        try:
            self.backend = await self._start(name)
            self.fallback_reason = None
        except Exception as e:  # a backend that cannot start must not leave the engine without one
            if name == "numpy":
                raise
            self.fallback_reason = f"backend {name!r} could not start: {type(e).__name__}: {e}"
            self.backend = await self._start("numpy")
            return False
        finally:
            if previous is not None:
                self._release_if_idle(previous)
        if configure is not None:
            await self.backend.configure(**options)
        return True

    def _release_if_idle(self, backend):
        """A GPU backend that is no longer active keeps no spare buffers: its pool goes back to the device
        (its tensors keep theirs until they move to the active backend or are disposed)."""
        if backend is not self.backend and not backend.lost:
            backend.release_pool(idle=True)

    @contextmanager
    def on_backend(self, name):
        """Run the block's ops on backend `name` (numpy, or one set_backend has started), for this task only.

        Its tensors stay there until an op on the active backend uses them, which moves them (one upload): to
        prepare weights on the host (fold, quantize, transform) and send each to the GPU once, already final.
        """
        if name not in self._factories:
            raise BackendError(f"unknown backend {name!r}; registered backends: {', '.join(sorted(self._factories))}")
        backend = self._backends.get(name)
        if backend is None or backend.lost:
            if name != "numpy":
                raise BackendError(
                    f"on_backend({name!r}): that backend is not running; "
                    f"start it first with await set_backend({name!r}), or use 'numpy'"
                )
            backend = self._backends["numpy"] = self._factories["numpy"][0]()
        token = PINNED.set(backend)
        try:
            yield backend
        finally:
            PINNED.reset(token)

    def active(self):
        pinned = PINNED.get()
        if pinned is not None:
            return pinned
        if self.backend is None:  # numpy starts synchronously, so first use needs no await
            self.backend = self._backends.get("numpy") or self._factories["numpy"][0]()
            self._backends["numpy"] = self.backend
        return self.backend

    def backend_info(self):
        backend = self.active()
        return {"name": backend.name, **backend.info(), "fallback_reason": self.fallback_reason}

    def device_lost(self, backend, error):
        """A call on `backend` raised DeviceLostError `error`: fall back to numpy if it was the active one; the reason
        shows in backend_info()."""
        if self.backend is backend:
            self.fallback_reason = f"backend {backend.name!r} lost its device ({error}); running on numpy"
            self.backend = None
            self.active()

    def forget_backend(self, name):
        """Drop a started backend instance (its tensors must have been moved or disposed)."""
        backend = self._backends.pop(name, None)
        if backend is self.backend:
            self.backend = None

    def stats(self):
        """The active backend's counters: dispatches, submits, pipeline compiles, uploads, readbacks, bytes."""
        backend = self.active()
        return {"backend": backend.name, **backend.stats()}
