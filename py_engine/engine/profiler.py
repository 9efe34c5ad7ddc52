"""profile(fn): the kernels fn runs, with their shapes, the bytes each added and its time; new and peak bytes."""

import inspect
import time
from dataclasses import dataclass


@dataclass
class KernelRecord:
    name: str
    backend: str
    input_shapes: list
    output_shapes: list
    bytes_added: int
    time_ms: float


@dataclass
class ProfileInfo:
    new_tensors: int
    new_bytes: int
    peak_bytes: int
    kernels: list
    result: object = None


class Profiler:
    def __init__(self):
        super().__init__()
        self._profile = None  # list of KernelRecord while profile() runs (run_kernel tests it once per op)

    def _run_profiled(self, name, fn, backend, inputs, attrs):
        records, self._profile = self._profile, None
        try:
            bytes_before = self.num_bytes
            start = time.perf_counter()
            out = self.run_kernel(name, inputs, attrs)
            elapsed = (time.perf_counter() - start) * 1e3
            outs = out if isinstance(out, tuple) else (out,)
            records.append(
                KernelRecord(
                    name,
                    backend.name,
                    [t.shape for t in inputs],
                    [t.shape for t in outs],
                    self.num_bytes - bytes_before,
                    elapsed,
                )
            )
            return out
        finally:
            self._profile = records

    def profile(self, fn, *args, **kwargs):
        if inspect.iscoroutinefunction(fn):
            raise TypeError("profile() takes a synchronous function; profile the synchronous part of your code")
        if self._profile is not None:
            raise RuntimeError("profile() cannot be nested")
        tensors_before, bytes_before = len(self.live), self.num_bytes
        self.peak_bytes = self.num_bytes
        self._profile = records = []
        try:
            result = fn(*args, **kwargs)
        finally:
            self._profile = None
        return ProfileInfo(
            len(self.live) - tensors_before, self.num_bytes - bytes_before, self.peak_bytes, records, result
        )
