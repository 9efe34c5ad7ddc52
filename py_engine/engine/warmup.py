"""pe.warmup(fn): compile the GPU pipelines fn needs before its first real run."""

from contextlib import contextmanager

from ..backend_protocols import Recorder
from .must_await import must_await


class ShaderList(Recorder):
    """Warm-up's recorder: the shaders dispatched, in order; `runs`: whether the backend runs them too."""

    def __init__(self, runs=False):
        self.runs, self.shaders = runs, []

    def dispatched(self, shader, buffer_ids, uniform_bytes, workgroups):
        self.shaders.append(shader)


@contextmanager
def dispatched_shaders(backend, run=False):
    """While the block runs, `backend` lists the shaders its kernels dispatch (yields that list), and runs nothing
    unless `run` (on a device that does nothing, to list what a real run dispatches: app/pipeline_planner.py)."""
    outer, backend.recorder = backend.recorder, ShaderList(run)
    try:
        yield backend.recorder.shaders
    finally:
        backend.recorder = outer


def dry_running(backend):
    """Whether `backend` runs nothing now, only lists shaders (pe.warmup): tensors are not moved to it, values are
    meaningless."""
    recorder = getattr(backend, "recorder", None)  # a user's backend may not declare one
    return recorder is not None and not recorder.runs


class Warmup:
    @must_await("warmup")
    async def warmup(self, fn, *args, **kwargs):
        """Compile the GPU pipelines that fn(*args) needs without running them; returns how many were new.

        fn runs once in a dry mode where kernels record shaders instead of dispatching (values read
        inside fn are meaningless); its tensors are released. Tensors on another backend (the host) stay
        there: a dry run needs only their shapes, so a zero-weight outline of a model warms up for it.
        """
        backend = self.active()
        if not backend.is_gpu:
            return 0
        with dispatched_shaders(backend) as shaders, self.scope():
            self.dispose(fn(*args, **kwargs))
        return await backend.warmup(shaders)
