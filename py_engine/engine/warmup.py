"""pe.warmup(fn): compile the GPU pipelines fn needs before its first real run."""

from .must_await import must_await


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
        backend.dry_run = []
        try:
            with self.scope():
                self.dispose(fn(*args, **kwargs))
            shaders = backend.dry_run
        finally:
            backend.dry_run = None
        return await backend.warmup(shaders)
