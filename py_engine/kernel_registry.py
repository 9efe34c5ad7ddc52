"""The kernel registry: one implementation per (kernel name, backend name), and one gradient per kernel name,
written with public ops so that it serves every backend."""

from .errors import KernelNotFoundError

_KERNELS = {}
_GRADIENTS = {}
_BY_USERS = set()  # (name, backend) of the kernels registered through pe.register_kernel


def register_kernel(name, backend, fn, *, override=False, by_user=False):
    """Register `fn` as kernel `name` on `backend`. Pass override=True to replace an existing one.

    by_user: registered through pe.register_kernel (user_kernels.py, which checks the backend's name first), so
    the numpy backend says when it converts what the kernel returned (the engine's own kernels rely on that)."""
    if not callable(fn):
        raise TypeError(f"register_kernel({name!r}, {backend!r}): fn must be callable, got {type(fn).__name__}")
    key = (name, backend)
    if key in _KERNELS and not override:
        raise ValueError(
            f"kernel {name!r} is already registered for backend {backend!r}; "
            "call pe.unregister_kernel(name, backend) first or pass override=True"
        )
    _KERNELS[key] = fn
    if by_user:
        _BY_USERS.add(key)
    else:
        _BY_USERS.discard(key)
    return fn


def unregister_kernel(name, backend):
    _BY_USERS.discard((name, backend))
    if _KERNELS.pop((name, backend), None) is None:
        raise KernelNotFoundError(f"cannot unregister kernel {name!r}: it is not registered for backend {backend!r}")


def registered_on(backend):
    """The kernel functions registered for `backend` now."""
    return [fn for (_, b), fn in _KERNELS.items() if b == backend]


def names_on(backend):
    """The kernel names registered for `backend` now."""
    return {k for (k, b) in _KERNELS if b == backend}


def registered_by_user(fn, backends):
    """The name under which a user registered `fn` for one of `backends` (pe.register_kernel), or None for the
    engine's own kernels."""
    return next((name for name, b in _BY_USERS if b in backends and _KERNELS[name, b] is fn), None)


def registered_name(fn, backend):
    """The name `fn` is registered under on `backend`, or None (for error messages: it scans the registry)."""
    return next((name for (name, b), registered in _KERNELS.items() if registered is fn and b == backend), None)


def backends_with(name):
    return sorted(b for (k, b) in _KERNELS if k == name)


def get_kernel(name, backend, fallback=None):
    """The kernel `name` of `backend`, else of `fallback` (a backend that runs another's kernels on its buffers)."""
    fn = _KERNELS.get((name, backend)) or (fallback and _KERNELS.get((name, fallback)))
    if fn is None:
        others = backends_with(name)
        where = f"it is registered for: {', '.join(others)}" if others else "no backend has it"
        raise KernelNotFoundError(
            f"kernel {name!r} is not registered for the active backend {backend!r} ({where}). "
            f"Register it with pe.register_kernel({name!r}, {backend!r}, fn)"
            + (f" or switch with `await pe.set_backend({others[0]!r})`." if others else ".")
        )
    return fn


def kernel(name, backend):
    """Decorator form of register_kernel, for backends' own kernel modules."""
    return lambda fn: register_kernel(name, backend, fn)


def register_gradient(kernel_name, fn=None):
    """Register fn(dy, inputs, outputs, attrs) -> one gradient per input: a tensor, None, or a function of no
    arguments that computes it (called only for an input whose gradient is needed: a matmul with a data operand
    skips that operand's product). Usable as a decorator."""
    if fn is None:
        return lambda f: register_gradient(kernel_name, f)
    _GRADIENTS[kernel_name] = fn
    return fn


def get_gradient(kernel_name):
    """The gradient registered for `kernel_name`, or None."""
    return _GRADIENTS.get(kernel_name)
