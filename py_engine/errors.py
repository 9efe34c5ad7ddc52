"""Errors the engine raises. Each message names the op, what it got, and what it expected."""


class EngineError(Exception):
    """Base class of the engine's own errors."""


class ShapeError(EngineError, ValueError):
    """An op got tensors whose shapes do not fit together."""


class DTypeError(EngineError, TypeError):
    """An op got a dtype it does not accept."""


class DisposedTensorError(EngineError, RuntimeError):
    """A tensor was used after its memory was released."""


class KernelNotFoundError(EngineError, LookupError):
    """No kernel of this name is registered for the active backend."""


class BackendError(EngineError, RuntimeError):
    """A backend is unknown or could not start."""


class DeviceLostError(EngineError, RuntimeError):
    """The GPU device is gone (driver reset, device.destroy()); tensors that lived on it are lost."""


class GradientError(EngineError, ValueError):
    """A gradient cannot be computed as asked."""


class LeakError(EngineError, RuntimeError):
    """Tensors or bytes grew between training steps (raised by callbacks.LeakMonitor, naming the sites)."""


class ResourceExhaustedError(EngineError, MemoryError):
    """An allocation is over a device limit or the memory budget; nothing was allocated."""


class TrainingError(EngineError, RuntimeError):
    """Training cannot go on: the loss became NaN or infinite (the message names the epoch and batch)."""


class KernelCompileError(EngineError, ValueError):
    """A kernel's WGSL shader does not compile; the message names the kernel and quotes the compiler."""

    def __init__(self, shader_key, compiler_message):
        self.shader_key, self.compiler_message = shader_key, compiler_message
        kernel = shader_key.split(":", 1)[0]
        super().__init__(
            f"kernel {kernel!r}: its WGSL shader {shader_key!r} does not compile; fix the source and run again. "
            f"The WGSL compiler said:\n{compiler_message}"
        )
