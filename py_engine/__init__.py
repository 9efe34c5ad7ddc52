"""py_engine: a tensor engine with TensorFlow.js's memory model, for CPython and Pyodide.

import py_engine as pe
x = pe.tensor([[1, 2], [3, 4]])
y = pe.tidy(lambda: (x * 2).sum())   # intermediates are released, y survives
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING

from . import dtypes
from .autograd import custom_grad, grad, grads, register_gradient, value_and_grad, value_and_grads, variable_grads
from .backends.numpy import NumpyBackend
from .backends.wasm import WasmBackend
from .backends.webgpu import create_backend as create_webgpu_backend
from .backends.webgpu.user_program import Dispatch, Program
from .engine import ENGINE, LeakSite, MemoryInfo, ProfileInfo
from .errors import (
    BackendError,
    CaptureError,
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
from .kernel_registry import unregister_kernel
from .ops import *  # noqa: F403
from .ops import __all__ as _ops_all
from .tensor import Tensor, Variable
from .user_kernels import register_kernel, run_kernel

float32, int32, bool_ = dtypes.float32, dtypes.int32, dtypes.bool_

ENGINE.register_backend("numpy", NumpyBackend, priority=1)
ENGINE.register_backend("webgpu", create_webgpu_backend, priority=2)
ENGINE.register_backend("wasm", WasmBackend, priority=1)

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
capture = ENGINE.capture


def release_pool():
    """Give the active GPU backend's unused pooled buffers back to the device."""
    backend = ENGINE.active()
    backend.release_pool(idle=backend is not ENGINE.backend)


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

# Layers, models, the TF.js layers format and training are imported on first use (PEP 562): built on the ops
# above, they are most of the package's modules, and the page's boot needs none of them (docs/startup.md).
_LAZY_MODULES = {
    "browser": "browser",
    "layers": "layers",
    "activations": "layers.activations",
    "callbacks": "train.callbacks",
    "constraints": "train.constraints",
    "initializers": "layers.initializers",
    "losses": "train.losses",
    "metrics": "train.metrics",
    "optimizers": "train.optimizers",
    "regularizers": "train.regularizers",
    "io": "io",
    "models": "models",
    "train": "train",
    "vision": "vision",
}
_LAZY_NAMES = {
    "ModelLoadError": "io.errors",
    "load_layers_model": "models.loading",
    "load_graph_model": "models.graph_model",
    "GraphModel": "models.graph_model",
    "save_layers_model": "io.save",
    "Input": "layers",
    "Model": "models",
    "Sequential": "models",
    "model_from_config": "models",
}
_SUBPACKAGES = ("io", "models", "train")  # attributes, as any imported submodule is, but not exported (like ops)

# What a reader of this file cannot see otherwise, for editors and type checkers (tests/test_editor_names.py keeps it
# equal to what runs): the lazy names above, and pe.tensor, the op (not the submodule py_engine.tensor).
if TYPE_CHECKING:
    from . import browser, io, layers, models, train, vision  # noqa: F401
    from .io.errors import ModelLoadError  # noqa: F401
    from .io.save import save_layers_model  # noqa: F401
    from .layers import Input, activations, initializers  # noqa: F401
    from .models import Model, Sequential, model_from_config  # noqa: F401
    from .models.graph_model import GraphModel, load_graph_model  # noqa: F401
    from .models.loading import load_layers_model  # noqa: F401
    from .ops import tensor  # noqa: F401
    from .train import callbacks, constraints, losses, metrics, optimizers, regularizers  # noqa: F401

__all__ += [name for name in (*_LAZY_MODULES, *_LAZY_NAMES) if name not in _SUBPACKAGES]


def __getattr__(name):
    if name in _LAZY_MODULES:
        value = _import_module(f"{__name__}.{_LAZY_MODULES[name]}")
    elif name in _LAZY_NAMES:
        value = getattr(_import_module(f"{__name__}.{_LAZY_NAMES[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # the next lookup finds it without this function
    return value


def __dir__():
    return sorted({*globals(), *_LAZY_MODULES, *_LAZY_NAMES})
