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
