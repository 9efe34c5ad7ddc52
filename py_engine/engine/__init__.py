"""The engine: backend registry, data buffers, tensor tracking, scopes, variables, memory counters, profiling, capture.

One module per responsibility (registry, accounting, scopes, variables, profiler, leaks, warmup, capture, fresh
values), composed by core.Engine; ENGINE is the one instance every op runs through.
"""

from ..tensor import Tensor
from .accounting import DataBuffer, MemoryBudget, MemoryInfo
from .core import Engine, GpuData
from .leaks import LeakSite, user_site
from .profiler import KernelRecord, ProfileInfo
from .scopes import Scope, iter_tensors
from .tape import TAPE

ENGINE = Engine()
Tensor._engine = ENGINE  # tensor.py cannot import the engine (the engine makes tensors): it gets it here

__all__ = [
    "ENGINE",
    "TAPE",
    "DataBuffer",
    "Engine",
    "GpuData",
    "KernelRecord",
    "LeakSite",
    "MemoryBudget",
    "MemoryInfo",
    "ProfileInfo",
    "Scope",
    "iter_tensors",
    "user_site",
]
