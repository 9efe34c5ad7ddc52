"""The device interface on wgpu-py (CPython). On machines without a GPU it runs on Mesa llvmpipe."""

import asyncio
import atexit
import gc
import time
import weakref

from ...errors import DeviceLostError, EngineError, KernelCompileError
from .device import UNIFORM_BLOCK, UNIFORM_RING, DeviceStats
from .limits import required_limits
from .workgroup_memory import workgroup_bytes

try:
    import wgpu
except ImportError:  # the backend reports this as the reason it cannot start
    wgpu = None

# wgpu-py polls each device from a thread of its own, and on the OpenGL backend (Mesa llvmpipe)
# creating or releasing a device while another device's thread polls aborts the process (seen with
# wgpu 0.32). So one device serves the process, a new one is made only after a loss, and none is
# ever released.
_DEVICES = []
# Every WgpuDevice made, to release its wgpu objects before the interpreter tears down: left to the teardown,
# buffers and bind groups are released in arbitrary order after wgpu's own module state, and the process aborts
# with "double free or corruption" (wgpu 0.32 on Mesa llvmpipe) after the script has finished.
_LIVE = weakref.WeakSet()


@atexit.register
def _release_at_exit():
    for device in list(_LIVE):
        device.release_objects()
    gc.collect()


def _compiled(key, create):
    """create(), where a shader the compiler rejects raises KernelCompileError quoting it (naga names the line)."""
    try:
        return create()
    except wgpu.GPUValidationError as e:
        raise KernelCompileError(key, str(e).strip()) from None


class WgpuDevice:
    def __init__(self, adapter, device):
        self.adapter, self.device, self.queue = adapter, device, device.queue
        info = adapter.info
        self.info = {
            "vendor": info.get("vendor", ""),
            "architecture": info.get("architecture", ""),
            "device": info.get("device", ""),
            "description": info.get("description", ""),
            "adapter_type": info.get("adapter_type", ""),
            "backend_type": info.get("backend_type", ""),
            "runtime": "wgpu-py " + wgpu.__version__,
        }
        self.limits = {k.replace("-", "_"): v for k, v in device.limits.items()}
        self.lost = None
        self._stats = DeviceStats()
        self._buffers = {}
        self._next_id = 1
        self._pipelines = {}  # key -> (pipeline, layout key)
        self._layouts = {}  # (n_in, n_out) -> (bind group layout, pipeline layout)
        self._bind_groups = {}  # (key layout, buffer ids) -> bind group
        usage = wgpu.BufferUsage
        self._uniforms = device.create_buffer(size=UNIFORM_RING, usage=usage.UNIFORM | usage.COPY_DST)
        self._encoder = self._pass = self._pass_pipeline = None
        self._programs = {}  # program id -> (uniform buffer, [(pipeline, bind group, uniform offset, workgroups)])
        self._next_program = 1
        _LIVE.add(self)

    def release_objects(self):
        """Drop every wgpu object this device made (at exit: see _LIVE); the device is unusable afterwards."""
        self._mark_lost("the process is exiting")
        self._encoder = self._pass = self._pass_pipeline = self._uniforms = None
        self._buffers, self._pipelines, self._layouts, self._bind_groups, self._programs = {}, {}, {}, {}, {}

    @classmethod
    async def create(cls):
        if wgpu is None:
            raise RuntimeError("the webgpu backend needs the `wgpu` package in CPython (pip install wgpu)")
        if _DEVICES and not _DEVICES[-1][2]:
            adapter, device, _ = _DEVICES[-1]
            return cls(adapter, device)
        gc.collect()  # drops finished readback promises, so no other device's poll thread is busy
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
        if adapter is None:
            raise RuntimeError("no WebGPU adapter found")
        # the page's limits, not the adapter's: a kernel that runs here runs in a browser (limits.py)
        device = adapter.request_device_sync(required_limits=required_limits(adapter.limits))
        _DEVICES.append([adapter, device, False])
        return cls(adapter, device)

    def _guard(self, action, fn, *args):
        if self.lost:
            raise DeviceLostError(f"cannot {action}: the GPU device was lost ({self.lost})")
        try:
            return fn(*args)
        except EngineError:  # already says what went wrong (a shader that does not compile)
            raise
        except Exception as e:
            if "lost" in str(e).lower() or "destroyed" in str(e).lower():
                self._mark_lost(str(e).strip().splitlines()[0])
                raise DeviceLostError(f"cannot {action}: the GPU device was lost ({self.lost})") from e
            raise

    # ---- buffers ----------------------------------------------------------------------------

    def create_buffer(self, nbytes):
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        buf = self._guard("create a buffer", lambda: self.device.create_buffer(size=max(nbytes, 4), usage=usage))
        bid, self._next_id = self._next_id, self._next_id + 1
        self._buffers[bid] = buf
        self._stats.buffers_created += 1
        return bid

    def destroy_buffer(self, bid):
        buf = self._buffers.pop(bid)
        self._bind_groups = {k: v for k, v in self._bind_groups.items() if bid not in k[1]}
        self._stats.buffers_destroyed += 1
        if not self.lost:
            buf.destroy()

    def native_buffer(self, bid):
        return self._buffers[bid]

    def write_buffer(self, bid, data, offset=0):
        data = memoryview(data).cast("B")
        self._guard("upload", self.queue.write_buffer, self._buffers[bid], offset, data)
        self._stats.uploads += 1
        self._stats.upload_bytes += data.nbytes

    # ---- pipelines --------------------------------------------------------------------------

    def _layout(self, n_in, n_out):
        key = (n_in, n_out)
        if key not in self._layouts:
            kinds = wgpu.BufferBindingType
            entries = [
                {
                    "binding": 0,
                    "visibility": wgpu.ShaderStage.COMPUTE,
                    "buffer": {"type": kinds.uniform, "has_dynamic_offset": True},
                }
            ]
            for i in range(n_in + n_out):
                kind = kinds.read_only_storage if i < n_in else kinds.storage
                entries.append({"binding": i + 1, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": kind}})
            group = self.device.create_bind_group_layout(entries=entries)
            self._layouts[key] = (group, self.device.create_pipeline_layout(bind_group_layouts=[group]))
        return self._layouts[key]

    def has_pipeline(self, key):
        return key in self._pipelines

    def compile(self, key, source, n_in, n_out):
        if key in self._pipelines:
            return
        start = time.perf_counter()
        self._check_workgroup_memory(key, source)
        _, layout = self._layout(n_in, n_out)
        module = self._guard(
            "compile a shader", _compiled, key, lambda: self.device.create_shader_module(code=source, label=key)
        )
        pipeline = self._guard(
            "create a pipeline",
            _compiled,
            key,
            lambda: self.device.create_compute_pipeline(
                layout=layout, compute={"module": module, "entry_point": "main"}
            ),
        )
        self._pipelines[key] = (pipeline, (n_in, n_out))
        self._stats.pipeline_compiles += 1
        self._stats.compile_ms += (time.perf_counter() - start) * 1e3

    def _check_workgroup_memory(self, key, source):
        """Refuse what a browser refuses and wgpu-native lets through: more workgroup memory than the limit."""
        used, limit = workgroup_bytes(source), self.limits["max_compute_workgroup_storage_size"]
        if used is not None and used > limit:
            raise KernelCompileError(
                key,
                f"(checked by py_engine, as a browser checks it) its var<workgroup> variables take {used} bytes (each rounded up to 16), over the "
                f"{limit} bytes of maxComputeWorkgroupStorageSize that browsers give (WebGPU's default): "
                "use smaller tiles, or fewer or narrower workgroup arrays",
            )

    async def compile_async(self, key, source, n_in, n_out):
        """wgpu-py compiles synchronously anyway (and its async path needs the poller thread, see create)."""
        self.compile(key, source, n_in, n_out)
        await asyncio.sleep(0)

    # ---- dispatch and submit ----------------------------------------------------------------

    def dispatch(self, key, buffer_ids, uniform_offset, workgroups):
        pipeline, shape = self._pipelines[key]
        group_key = (shape, tuple(buffer_ids))
        group = self._bind_groups.get(group_key)
        if group is None:
            entries = [{"binding": 0, "resource": {"buffer": self._uniforms, "offset": 0, "size": UNIFORM_BLOCK}}]
            for i, bid in enumerate(buffer_ids):
                buf = self._buffers[bid]
                entries.append({"binding": i + 1, "resource": {"buffer": buf, "offset": 0, "size": buf.size}})
            group = self._guard(
                "bind buffers", lambda: self.device.create_bind_group(layout=self._layout(*shape)[0], entries=entries)
            )
            if len(self._bind_groups) > 4096:
                self._bind_groups.clear()
            self._bind_groups[group_key] = group
        if self._pass is None:
            self._encoder = self._guard("record commands", self.device.create_command_encoder)
            self._pass = self._encoder.begin_compute_pass()
            self._pass_pipeline = None
        p = self._pass
        if pipeline is not self._pass_pipeline:  # a loop of one op sets its pipeline once per pass
            p.set_pipeline(pipeline)
            self._pass_pipeline = pipeline
        p.set_bind_group(0, group, [uniform_offset], 0, 1)
        p.dispatch_workgroups(*workgroups)
        self._stats.dispatches += 1

    def flush(self, uniform_bytes=b""):
        if self._pass is None:
            return
        p, enc = self._pass, self._encoder
        self._pass = self._encoder = None
        p.end()
        if uniform_bytes:
            self._guard("upload uniforms", self.queue.write_buffer, self._uniforms, 0, memoryview(uniform_bytes))
        self._guard("submit", self.queue.submit, [enc.finish()])
        self._stats.submits += 1

    # ---- captured programs ------------------------------------------------------------------

    def create_program(self, dispatches, uniform_bytes):
        uniforms = self._guard(
            "create a program's uniforms",
            lambda: self.device.create_buffer(
                size=max(len(uniform_bytes), UNIFORM_BLOCK), usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
            ),
        )
        if uniform_bytes:
            self._guard("upload a program's uniforms", self.queue.write_buffer, uniforms, 0, memoryview(uniform_bytes))
        groups = {}  # (layout, buffer ids) -> bind group: dispatches on the same buffers share one
        steps = []
        for i, (key, buffer_ids, workgroups) in enumerate(dispatches):
            pipeline, shape = self._pipelines[key]
            group_key = (shape, tuple(buffer_ids))
            if group_key not in groups:
                groups[group_key] = self._guard(
                    "bind a program's buffers", self._program_group, uniforms, shape, buffer_ids
                )
            steps.append((pipeline, groups[group_key], i * UNIFORM_BLOCK, tuple(workgroups)))
        pid, self._next_program = self._next_program, self._next_program + 1
        self._programs[pid] = (uniforms, steps)
        return pid

    def _program_group(self, uniforms, shape, buffer_ids):
        entries = [{"binding": 0, "resource": {"buffer": uniforms, "offset": 0, "size": UNIFORM_BLOCK}}]
        for i, bid in enumerate(buffer_ids):
            buf = self._buffers[bid]
            entries.append({"binding": i + 1, "resource": {"buffer": buf, "offset": 0, "size": buf.size}})
        return self.device.create_bind_group(layout=self._layout(*shape)[0], entries=entries)

    def run_program(self, pid, copies_in, copies_out):
        _, steps = self._programs[pid]
        self._guard("run a program", self._submit_program, steps, copies_in, copies_out)
        self._stats.dispatches += len(steps)
        self._stats.submits += 1

    def _submit_program(self, steps, copies_in, copies_out):
        buffers = self._buffers
        encoder = self.device.create_command_encoder()
        for src, dst, nbytes in copies_in:
            encoder.copy_buffer_to_buffer(buffers[src], 0, buffers[dst], 0, nbytes)
        if steps:
            p = encoder.begin_compute_pass()
            current = None
            for pipeline, group, offset, workgroups in steps:
                if pipeline is not current:
                    p.set_pipeline(pipeline)
                    current = pipeline
                p.set_bind_group(0, group, [offset], 0, 1)
                p.dispatch_workgroups(*workgroups)
            p.end()
        for src, dst, nbytes in copies_out:
            encoder.copy_buffer_to_buffer(buffers[src], 0, buffers[dst], 0, nbytes)
        self.queue.submit([encoder.finish()])

    def destroy_program(self, pid):
        uniforms, _ = self._programs.pop(pid)
        if not self.lost:
            uniforms.destroy()

    def read_buffer(self, bid, nbytes):
        data = self._guard("read back", self.queue.read_buffer, self._buffers[bid], 0, max(nbytes, 4))
        self._stats.readbacks += 1
        self._stats.readback_bytes += nbytes
        return bytes(memoryview(data)[:nbytes])

    async def read_buffer_async(self, bid, nbytes):
        await asyncio.sleep(0)  # wgpu-py's own readback blocks; yield once so other tasks run first
        return self.read_buffer(bid, nbytes)

    def stats(self):
        return self._stats.as_dict()

    def destroy(self):
        """Lose the device on purpose (tests of device loss)."""
        self._mark_lost("the device was destroyed")
        poll_thread = getattr(self.device, "_poller", None)  # wgpu-py's thread that polls this device
        self.device.destroy()  # stops that thread, but waits at most 1 s for a poll it is in
        if poll_thread is not None:  # wait the poll out: one still running while the next device is made aborts
            poll_thread.join(timeout=30)  # the process on the OpenGL backend (see _DEVICES)

    def _mark_lost(self, reason):
        self.lost = self.lost or reason
        for entry in _DEVICES:
            entry[2] = entry[2] or entry[1] is self.device
