"""The engine's backends: registered factories, started instances, the active one, and the fallback to numpy."""

import inspect

from ..errors import BackendError


class BackendRegistry:
    def __init__(self):
        super().__init__()
        self._factories = {}  # backend name -> (factory, priority)
        self._backends = {}  # backend name -> started instance
        self.backend = None
        self.fallback_reason = None

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

    def stats(self):
        """The active backend's counters: dispatches, submits, pipeline compiles, uploads, readbacks, bytes."""
        backend = self.active()
        return {"backend": backend.name, **backend.stats()}
