"""Errors the engine raises (each message names the op, what it got, and what it expected), and its warnings."""

import os
import sys
import warnings

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_frame():
    """The innermost frame outside py_engine: the user's line that led here (None if there is none)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    return frame


def call_site(frame):
    """(file, line, module) of a frame, to attribute a warning to it later without keeping the frame alive."""
    return frame.f_code.co_filename, frame.f_lineno, frame.f_globals.get("__name__", "<unknown>")


def warn_at_user_line(message, category=UserWarning, site=None):
    """warnings.warn attributed to the user's line (`site`, else the innermost frame outside py_engine), however
    deep in the engine the cause was found; shown each time unless warnings filters say otherwise."""
    if site is None:
        frame = user_frame()
        if frame is None:
            warnings.warn(message, category, stacklevel=2)
            return
        site = call_site(frame)
    filename, lineno, module = site
    warnings.warn_explicit(message, category, filename, lineno, module=module)


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


class CaptureError(EngineError, RuntimeError):
    """A captured function did something a replay cannot repeat (a readback, keeping an intermediate)."""


class KernelCompileError(EngineError, ValueError):
    """A kernel's WGSL shader does not compile; the message names the kernel and quotes the compiler."""

    def __init__(self, shader_key, compiler_message):
        self.shader_key, self.compiler_message = shader_key, compiler_message
        kernel = shader_key.split(":", 1)[0]
        super().__init__(
            f"kernel {kernel!r}: its WGSL shader {shader_key!r} does not compile; fix the source and run again. "
            f"The WGSL compiler said:\n{compiler_message}"
        )
