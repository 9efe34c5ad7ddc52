"""py_engine: a tensor engine with TensorFlow.js's memory model, for CPython and Pyodide.

import py_engine as pe
x = pe.tensor([[1, 2], [3, 4]])
y = pe.tidy(lambda: (x * 2).sum())   # intermediates are released, y survives
"""

from . import dtypes
from .autograd import custom_grad, grad, grads, register_gradient, value_and_grad, value_and_grads, variable_grads
from .backends.numpy import NumpyBackend
from .backends.webgpu import create_backend as create_webgpu_backend
from .backends.webgpu.user_program import Dispatch, Program
from .capture import CaptureError, capture
from .custom_kernels import run_kernel
from .engine import ENGINE, LeakSite, MemoryInfo, ProfileInfo
from .errors import (
    BackendError,
    DeviceLostError,
    DisposedTensorError,
    DTypeError,
    EngineError,
    GradientError,
    KernelCompileError,
    KernelNotFoundError,
    LeakError,
    ResourceExhaustedError,
    ShapeError,
    TrainingError,
)
from .inspection import TensorStats, inspect
from .kernels import register_kernel, unregister_kernel
from .ops import *  # noqa: F403
from .ops import __all__ as _ops_all
from .tensor import Tensor, Variable

float32, int32, bool_ = dtypes.float32, dtypes.int32, dtypes.bool_

ENGINE.register_backend("numpy", NumpyBackend, priority=1)
ENGINE.register_backend("webgpu", create_webgpu_backend, priority=2)

# The engine's methods, as module functions (pe.tidy, pe.memory, ...).
register_backend = ENGINE.register_backend
set_backend = ENGINE.set_backend
on_backend = ENGINE.on_backend
backend_info = ENGINE.backend_info
tidy = ENGINE.tidy
scope = ENGINE.scope
start_scope = ENGINE.start_scope
end_scope = ENGINE.end_scope
keep = ENGINE.keep
dispose = ENGINE.dispose
variable = ENGINE.variable
dispose_variables = ENGINE.dispose_variables
memory = ENGINE.memory
profile = ENGINE.profile
leaks = ENGINE.leaks
stats = ENGINE.stats
set_memory_budget = ENGINE.set_memory_budget
warmup = ENGINE.warmup


def release_pool():
    """Give the active GPU backend's unused pooled buffers back to the device."""
    ENGINE.active().release_pool()


def get_backend():
    """The active backend's name (numpy until set_backend chooses another)."""
    return ENGINE.active().name


async def ready():
    """Wait until the active backend is started."""
    ENGINE.active()


def set_debug(on=True):
    """Record where each tensor is created and disposed (for leaks() and errors). Off costs nothing."""
    ENGINE.debug = bool(on)


__all__ = [
    *_ops_all,
    "BackendError",
    "CaptureError",
    "DeviceLostError",
    "DisposedTensorError",
    "DTypeError",
    "EngineError",
    "GradientError",
    "KernelCompileError",
    "KernelNotFoundError",
    "LeakError",
    "LeakSite",
    "MemoryInfo",
    "ProfileInfo",
    "ResourceExhaustedError",
    "ShapeError",
    "Tensor",
    "TrainingError",
    "Variable",
    "backend_info",
    "bool_",
    "capture",
    "custom_grad",
    "Dispatch",
    "Program",
    "TensorStats",
    "inspect",
    "run_kernel",
    "dispose",
    "dispose_variables",
    "end_scope",
    "float32",
    "get_backend",
    "grad",
    "grads",
    "int32",
    "keep",
    "leaks",
    "memory",
    "on_backend",
    "profile",
    "ready",
    "release_pool",
    "register_backend",
    "register_gradient",
    "register_kernel",
    "scope",
    "set_backend",
    "set_debug",
    "set_memory_budget",
    "start_scope",
    "stats",
    "tidy",
    "unregister_kernel",
    "value_and_grad",
    "value_and_grads",
    "variable",
    "variable_grads",
    "warmup",
]

# Layers, models and the TF.js layers format (imported last: they are built on the ops above).
from . import browser, layers  # noqa: E402
from .io.errors import ModelLoadError  # noqa: E402
from .io.load import load_layers_model  # noqa: E402
from .io.save import save_layers_model  # noqa: E402
from .layers import Input, fused_conv2d, fused_depthwise_conv2d  # noqa: E402
from .models import Model, Sequential, model_from_config  # noqa: E402
from .train import callbacks, losses, metrics, optimizers  # noqa: E402

__all__ += [
    "Input",
    "Model",
    "ModelLoadError",
    "Sequential",
    "browser",
    "callbacks",
    "fused_conv2d",
    "fused_depthwise_conv2d",
    "layers",
    "load_layers_model",
    "losses",
    "metrics",
    "model_from_config",
    "optimizers",
    "save_layers_model",
]
