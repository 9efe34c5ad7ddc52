"""The device interface on the browser's WebGPU, through static/worker/bridge.js (Pyodide only).

Same semantics as `wgpu_device.WgpuDevice`. Each method is one call of a cached JS function with
ints only: buffer ids, offsets, byte counts, and addresses in wasm memory that bridge.js reads or
writes through HEAPU8 (zero-copy). Looking a JS attribute up costs ~1.7 us and converting a list
2-10 us, a call through a cached reference ~0.4 us (docs/platform_facts.md). Only readback awaits.
"""

import re

import js
import numpy as np
from pyodide.ffi import JsException, can_run_sync, create_proxy, run_sync, to_js

from ...errors import DeviceLostError, EngineError, KernelCompileError
from .device import BRIDGE_CONSTANTS


class SyncReadbackError(EngineError, RuntimeError):
    """A synchronous readback (data_sync, numpy, item, print) where the browser cannot wait."""


SYNC_READBACK_HELP = (
    "cannot read a webgpu tensor synchronously here: Python was entered through a synchronous call "
    "(pyodide.runPython or a plain JS->Python call), which cannot wait for the GPU. Use `await t.data()`, "
    "or run the code with pyodide.runPythonAsync (as the playground's runPython does) so that "
    "t.data_sync()/t.numpy() can suspend."
)


LOST_PREFIX = "the GPU device was lost"  # how bridge.js starts the message of a call that failed for that reason
# how bridge.js names a shader the compiler rejects: compileAsync's error, then "line:column error: text" lines;
# compile's, in the next readback's error, with Tint's own message (which quotes the line)
COMPILE_FAILED = re.compile(r"(?:cannot compile|compiling) shader (\S+?):\s")
COMPILER_LINE = re.compile(r"^(\d+):(\d+) ")


def _address(data):
    """The wasm-memory address and byte count of a contiguous bytes-like object, plus the array to keep alive."""
    arr = data if type(data) is np.ndarray else np.frombuffer(data, np.uint8)
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    return arr.__array_interface__["data"][0], arr.nbytes, arr  # cheaper than arr.ctypes.data


def _quoted(messages, source):
    """The compiler's messages, each "line:column ..." one followed by that line of `source`."""
    lines = source.splitlines() if source else []
    out = []
    for message in messages.strip().splitlines():
        out.append(message)
        at = COMPILER_LINE.match(message)
        if at and 0 < int(at.group(1)) <= len(lines):
            out.append(f"    {at.group(1)} | {lines[int(at.group(1)) - 1]}")
    return "\n".join(out)


class BridgeDevice:
    def __init__(self, js_device):
        self._js = js_device
        self.info = js_device.info.to_py()
        # snake_case, as wgpu_device names them: maxBufferSize -> max_buffer_size
        self.limits = {re.sub(r"(?<!^)(?=[A-Z])", "_", k).lower(): v for k, v in js_device.limits.to_py().items()}
        self.lost = None
        self._pipelines = {}  # shader key -> pipeline id in bridge.js
        d = js_device
        self._create, self._destroy, self._write = d.createBuffer, d.destroyBuffer, d.writeBuffer
        self._compile, self._compile_async, self._dispatch = d.compile, d.compileAsync, d.dispatch
        self._compiled_id = d.compiledId
        self._flush, self._read, self._stats = d.flush, d.read, d.stats
        self._run_program = d.runProgram  # once per replay of a captured program
        self._lost_callback = create_proxy(self._on_lost)  # lives as long as the device
        d.onLost(self._lost_callback)

    @classmethod
    async def create(cls):
        bridge = getattr(js, "peBridge", None)
        if bridge is None:
            raise RuntimeError("bridge.js is not loaded: the webgpu backend runs in the playground's worker")
        try:
            return cls(await bridge.open(to_js(BRIDGE_CONSTANTS, dict_converter=js.Object.fromEntries)))
        except JsException as e:
            raise RuntimeError(e.message) from None

    def _on_lost(self, reason):
        self.lost = self.lost or str(reason)

    def _lost_error(self, action):
        return DeviceLostError(f"cannot {action}: the GPU device was lost ({self.lost})")

    def _js_error(self, action, error, source=None):
        """The Python error for a JS exception: DeviceLostError once the device is gone, KernelCompileError for a
        shader the compiler rejects (quoting each line it names when `source` is given)."""
        if self.lost or error.message.startswith(LOST_PREFIX):
            self.lost = self.lost or error.message
            return self._lost_error(action)
        rejected = COMPILE_FAILED.search(error.message)
        if rejected:
            self._pipelines.pop(rejected.group(1), None)  # bridge.js forgot it too: its next use compiles it again
            return KernelCompileError(rejected.group(1), _quoted(error.message[rejected.end() :], source))
        return RuntimeError(f"webgpu bridge: cannot {action}: {error.message}")

    def _call(self, action, fn, *args):
        if self.lost:
            raise self._lost_error(action)
        try:
            return fn(*args)
        except JsException as e:
            raise self._js_error(action, e) from e

    # ---- buffers ----------------------------------------------------------------------------

    def create_buffer(self, nbytes):
        return self._call("create a buffer", self._create, nbytes)

    def destroy_buffer(self, bid):
        self._destroy(bid)  # bookkeeping only once the device is lost, like wgpu_device

    def native_buffer(self, bid):
        return self._js.nativeBuffer(bid)

    def write_buffer(self, bid, data, offset=0):
        address, nbytes, keep = _address(data)
        self._call("upload", self._write, bid, offset, address, nbytes)
        del keep  # the bridge copied it at call time

    # ---- pipelines --------------------------------------------------------------------------

    def has_pipeline(self, key):
        if key in self._pipelines:
            return True
        compiled = self._compiled_id(key)  # compiled ahead of the engine (static/worker/precompile.js): adopt it
        if compiled < 0:
            return False
        self._pipelines[key] = compiled
        return True

    def compile(self, key, source, n_in, n_out):
        if key in self._pipelines:
            return
        if not can_run_sync():  # a shader the compiler rejects then shows at the next readback
            self._pipelines[key] = self._call("compile a shader", self._compile, key, source, n_in, n_out)
            return
        # wait for the compiler, so that a shader it rejects raises here, naming its lines
        promise = self._call("compile a shader", self._compile_async, key, source, n_in, n_out)
        try:
            self._pipelines[key] = run_sync(promise)
        except JsException as e:
            raise self._js_error("compile a shader", e, source) from None

    async def compile_async(self, key, source, n_in, n_out):
        if key not in self._pipelines:
            promise = self._call("compile a shader", self._compile_async, key, source, n_in, n_out)
            try:
                self._pipelines[key] = await promise
            except JsException as e:
                raise self._js_error("compile a shader", e, source) from None

    # ---- dispatch and submit ----------------------------------------------------------------

    def dispatch(self, key, buffer_ids, uniform_offset, workgroups):  # `_call` written out: this is the per-op call
        if self.lost:
            raise self._lost_error("record commands")
        try:
            self._dispatch(self._pipelines[key], uniform_offset, *workgroups, *buffer_ids)
        except JsException as e:
            raise self._js_error("record commands", e) from e

    def flush(self, uniform_bytes=b""):
        address, nbytes, keep = _address(uniform_bytes)
        self._call("submit", self._flush, address, nbytes)
        del keep

    # ---- captured programs ------------------------------------------------------------------

    def create_program(self, dispatches, uniform_bytes):
        words = []
        for key, buffer_ids, (x, y, z) in dispatches:
            words += (self._pipelines[key], x, y, z, len(buffer_ids), *buffer_ids)
        address, _, keep = _address(np.array(words, np.int32))
        uniform_address, nbytes, keep_uniforms = _address(uniform_bytes)
        pid = self._call("create a program", self._js.createProgram, address, len(words), uniform_address, nbytes)
        del keep, keep_uniforms  # the bridge copied both at call time
        return pid

    def run_program(self, pid, copies_in, copies_out):
        """One bridge call: the copies as flat ints, in then out."""
        flat = [n for copy in copies_in for n in copy]
        for copy in copies_out:
            flat += copy
        self._call("run a program", self._run_program, pid, len(copies_in), *flat)

    def destroy_program(self, pid):
        self._js.destroyProgram(pid)  # bookkeeping only once the device is lost, like destroy_buffer

    async def _await(self, action, promise):
        try:
            return await promise
        except JsException as e:
            raise self._js_error(action, e) from e

    def _start_read(self, bid, nbytes):
        out = bytearray(nbytes)
        address, _, _ = _address(out)
        return out, self._call("read back", self._read, bid, nbytes, address)

    def read_buffer(self, bid, nbytes):
        if self.lost:
            raise self._lost_error("read back")
        if not can_run_sync():
            raise SyncReadbackError(SYNC_READBACK_HELP)
        out, promise = self._start_read(bid, nbytes)
        try:
            run_sync(promise)
        except JsException as e:
            raise self._js_error("read back", e) from e
        return out

    async def read_buffer_async(self, bid, nbytes):
        out, promise = self._start_read(bid, nbytes)
        await self._await("read back", promise)
        return out

    def stats(self):
        return self._stats().to_py()

    def destroy(self):
        """Lose the device on purpose (tests of device loss)."""
        self.lost = "the device was destroyed"
        self._js.destroy()
