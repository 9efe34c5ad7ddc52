"""A device that runs nothing: the webgpu backend's Python on a machine without a GPU.

The server (app/pipeline_planner.py) runs the page's classifier on it, with warm-up's shader list as the backend's
recorder, to tell a page which shaders to compile while Pyodide boots; bench/op_overhead.py times the backend's
Python on it. Buffers are ids without memory, a read gives zeros, a compile, a dispatch or a program is counted and
dropped; the adapter it stands for decides the kernel variants (backend.on_cpu), as a real device's would.
"""

from .device import DeviceStats
from .limits import DEFAULT_LIMITS

# A CPU adapter as browsers report one (Chrome's SwiftShader), and a GPU: what WebGPUBackend picks variants from.
ADAPTERS = {
    "cpu": {"adapter_type": "CPU (fallback adapter)", "architecture": "swiftshader"},
    "gpu": {"adapter_type": "DiscreteGPU", "architecture": ""},
}


class NullDevice:
    def __init__(self, adapter):
        if adapter not in ADAPTERS:
            raise ValueError(f"NullDevice: adapter must be one of {sorted(ADAPTERS)}, got {adapter!r}")
        self.info = {"vendor": "", "device": "", "description": f"a plan for a {adapter} adapter", **ADAPTERS[adapter]}
        self.limits = dict(DEFAULT_LIMITS)
        self.lost = None
        self.compiled = set()  # shader keys
        self._stats = DeviceStats()
        self._next = 1

    def _new_id(self):
        self._next += 1
        return self._next - 1

    def create_buffer(self, nbytes):
        self._stats.buffers_created += 1
        return self._new_id()

    def destroy_buffer(self, bid):
        self._stats.buffers_destroyed += 1

    def write_buffer(self, bid, data, offset=0):
        self._stats.uploads += 1

    def has_pipeline(self, key):
        return key in self.compiled

    def compile(self, key, source, n_in, n_out):
        if key not in self.compiled:
            self.compiled.add(key)
            self._stats.pipeline_compiles += 1

    async def compile_async(self, key, source, n_in, n_out):
        self.compile(key, source, n_in, n_out)

    def dispatch(self, key, buffer_ids, uniform_offset, workgroups):
        self._stats.dispatches += 1

    def flush(self, uniform_bytes=b""):
        self._stats.submits += 1

    def read_buffer(self, bid, nbytes):
        self._stats.readbacks += 1
        return bytes(nbytes)

    async def read_buffer_async(self, bid, nbytes):
        return self.read_buffer(bid, nbytes)

    def native_buffer(self, bid):
        raise RuntimeError("a NullDevice's buffers have no memory: there is no native buffer to hand out")

    def stats(self):
        return self._stats.as_dict()

    def create_program(self, dispatches, uniform_bytes):
        return self._new_id()

    def run_program(self, pid, copies_in, copies_out):
        self._stats.submits += 1

    def destroy_program(self, pid):
        pass

    def destroy(self):
        self.lost = "destroyed"
