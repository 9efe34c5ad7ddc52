"""Data buffers and the memory counters: every byte a tensor holds is counted when made and when freed."""

import collections
from dataclasses import dataclass, field


class DataBuffer:
    """Backend memory shared by a tensor and its views; freed when the last holder lets go."""

    __slots__ = ("backend", "handle", "nbytes", "refs", "writes")

    def __init__(self, backend, handle, nbytes):
        self.backend, self.handle, self.nbytes, self.refs = backend, handle, nbytes, 0
        self.writes = 0  # times its values were rewritten in place (a variable a captured program updates)


@dataclass
class MemoryInfo:
    num_tensors: int
    num_data_buffers: int
    num_bytes: int
    num_bytes_in_gpu: int  # live tensor data on GPU backends
    num_bytes_in_gpu_allocated: int = 0  # what GPU buffer pools hold, in use or free for reuse
    unreliable: bool = False
    reasons: list = field(default_factory=list)
    num_bytes_in_threads: int = 0  # weights the wasm backend's threads keep a copy of in their shared memory
    num_bytes_in_programs: int = 0  # what captured programs own on a CPU backend (wasm); a GPU's are in its pool

    def to_dict(self):
        return dict(self.__dict__)


class MemoryBudget:
    """A backend's share of set_memory_budget: the cap (`limit` bytes) and the bytes its live tensors hold now, which
    the engine counts (`held()`); the backend adds what its running kernel took before it allocates more."""

    __slots__ = ("_by_backend", "_name", "limit")

    def __init__(self, limit, by_backend, name):
        self.limit, self._by_backend, self._name = limit, by_backend, name

    def held(self):
        return self._by_backend.get(self._name, 0)


class BufferAccounting:
    def __init__(self):
        super().__init__()
        self.live = {}  # tensor id -> tensor, every tensor not yet disposed (variables too)
        self.num_data_buffers = 0
        self.num_bytes = 0
        self.peak_bytes = 0
        self.bytes_by_backend = collections.defaultdict(int)  # backend name -> bytes its live tensors hold
        self.memory_budget = None  # GPU bytes allowed (set_memory_budget)

    # The buffer bookkeeping below is public: the engine's own capture (engine/capture.py) and the tensor paths use
    # it, and a backend never touches a DataBuffer or a tensor itself.

    def new_buffer(self, backend, handle, nbytes):
        """A DataBuffer for `handle` (`nbytes` bytes on `backend`), counted from now; a tensor takes the reference
        (make_tensor), and unref frees it."""
        self.num_data_buffers += 1
        self.num_bytes += nbytes
        self.bytes_by_backend[backend.name] += nbytes
        if self.num_bytes > self.peak_bytes:
            self.peak_bytes = self.num_bytes
        return DataBuffer(backend, handle, nbytes)

    def unref(self, buf):
        """Drop one reference to `buf`; the last one frees its handle on its backend and uncounts its bytes."""
        buf.refs -= 1
        if buf.refs == 0:
            backend, nbytes = buf.backend, buf.nbytes
            backend.free(buf.handle)
            buf.handle = None
            self.num_data_buffers -= 1
            self.num_bytes -= nbytes
            self.bytes_by_backend[backend.name] -= nbytes
            if backend is not self.backend:
                self._release_if_idle(backend)

    def move(self, buf, backend):
        """Copy a buffer to `backend` (the tensor was made before a backend switch)."""
        old = buf.backend
        # backends whose handles are numpy arrays (numpy, wasm) share the same array: nothing to copy
        if getattr(old, "host_arrays", False) and getattr(backend, "host_arrays", False):
            handle, nbytes = buf.handle, buf.nbytes
        else:
            handle, nbytes = backend.upload(old.read(buf.handle))
            old.free(buf.handle)
        self._release_if_idle(old)
        self.bytes_by_backend[old.name] -= buf.nbytes
        self.bytes_by_backend[backend.name] += nbytes
        self.num_bytes += nbytes - buf.nbytes
        buf.backend, buf.handle, buf.nbytes = backend, handle, nbytes

    def adopt(self, backend, handle, nbytes, shape, dtype):
        """A new tensor, in the current scope, of a buffer `backend` made outside a kernel (a captured program's
        output), counted as a kernel's output is."""
        return self.make_tensor(self.new_buffer(backend, handle, nbytes), shape, dtype)

    def memory(self):
        gpus = [b for b in self._backends.values() if b.is_gpu]
        gpu = sum(self.bytes_by_backend.get(b.name, 0) for b in gpus)
        allocated = sum(b.allocated_bytes() for b in gpus)
        reasons = []
        for backend in self._backends.values():
            reasons += backend.memory_caveats()
        threads = sum(b.thread_bytes() for b in self._backends.values())
        programs = sum(b.program_bytes() for b in self._backends.values())
        return MemoryInfo(
            len(self.live), self.num_data_buffers, self.num_bytes, gpu, allocated, bool(reasons), reasons, threads,
            programs,
        )  # fmt: skip

    def set_memory_budget(self, nbytes):
        """Cap the GPU memory that live tensors may hold at `nbytes` (None: no cap).

        An allocation that would take the GPU bytes in use (memory().num_bytes_in_gpu, plus what the
        running op already took) past the budget raises ResourceExhaustedError naming the op, the
        budget and the bytes, and allocates nothing, so a loop that leaks stops with a message
        instead of exhausting the device. The numpy backend ignores the budget: host memory is
        not the GPU's, and the operating system already stops a process that runs out of it.
        """
        if nbytes is not None and (type(nbytes) is not int or nbytes < 0):
            raise ValueError(f"set_memory_budget takes a number of bytes >= 0 or None, got {nbytes!r}")
        self.memory_budget = nbytes
        for backend in self._backends.values():
            self._give_budget(backend)

    def _give_budget(self, backend):
        """Hand `backend` its budget (a started backend, and one starting later, gets the one set now)."""
        budget = self.memory_budget
        backend.memory_budget = None if budget is None else MemoryBudget(budget, self.bytes_by_backend, backend.name)
