"""The webgpu backend: buffer reuse, batched submits, the pipeline cache, uniforms, readback, loss.

Kernels are Python functions `fn(backend, *inputs, **attrs)` whose inputs are `GpuArray`s; they
allocate outputs with `backend.empty` and record work with `backend.dispatch`. Nothing here waits
for the GPU except `read`: dispatches are recorded into one command encoder and submitted in
batches (on readback, every `batch_size` dispatches, before a dispatch whose shader must compile, or on
`flush`; a batch's uniforms fit the ring).

Memory cannot be poisoned: every allocation is checked against the device's limits and the memory
budget before the pool gives anything (limits.py), a kernel that raises gives back every buffer it
took, and a dispatch is validated before it is recorded, so an error is raised by the op that
caused it and never by the submit of some later op (wgpu-py has no error scopes; it raises a
device call's own errors at the call, and everything recorded in a pass is checked here first).

While `recorder` is set (a protocols.Recorder: pe.warmup's shader list, pe.capture's recording in capture.py, a
dispatch plan's log), every buffer the pool hands out, every upload, free, dispatch and readback is reported to it; it
may keep a freed buffer from the pool (capture pins uploads), refuse a readback, or have nothing run (warm-up).

A built-in kernel's first run for a signature is logged, and later runs replay the log (dispatch_plans.py).

An op's Python-number operand (`x * 2.0`) stays on the host as a `HostScalar`: the elementwise kernels read its value
as a uniform, and it is uploaded only if another kernel needs it in a buffer (as TF.js's WebGL backend passes
one-element tensors as uniforms). An upload costs a device call and a pooled buffer; a uniform costs nothing.
"""

import asyncio
import sys

import numpy as np

from ... import dtypes, kernel_registry
from ...errors import EngineError
from . import limits
from .buffer_pool import BufferPool
from .capture import Recording
from .device import UNIFORM_BLOCK, UNIFORM_RING
from .dispatch_plans import MAX_PLANS, DispatchPlan, PlanLog, signature
from .gpu_array import GpuArray, HostScalar
from .kernels import BUILT_IN, TAKES_HOST_SCALARS
from .wgsl import ITEMSIZE_ON_GPU, MAX_RANK

# Freed buffers are reused only after the work that may read them is submitted; scopes do not submit, so a
# submit is forced once this much freed memory waits (a loop of scopes over big tensors stays within it).
PENDING_LIMIT = 32 << 20


def on_cpu_adapter(info):
    """Whether a device's adapter (its info: adapter_type, architecture) is WebGPU on the CPU (SwiftShader,
    llvmpipe). Those run register-blocked kernels ~2x faster than shared-memory tiles; real GPUs want the tiles
    (docs/platform_facts.md). static/worker/backend_choice.js's onCpuAdapter applies the same rule to pick the list of pipelines
    it compiles at boot; e2e/test_precompile.py checks that the two agree."""
    kind = f"{info.get('adapter_type', '')} {info.get('architecture', '')}".lower()
    return "cpu" in kind or "swiftshader" in kind


class WebGPUBackend:
    name = "webgpu"
    is_gpu = True
    captures = True  # pe.capture records device programs (capture.py)
    host_arrays = False
    kernel_fallback = None  # every kernel is its own (a missing one is an error that says where it exists)
    memory_budget = None  # the engine's MemoryBudget for this backend, or None

    def __init__(self, device, batch_size=64):
        self.device = device
        self.limits = limits.AllocationLimits(device.limits)
        self.max_workgroups = limits.device_limit(device.limits, "max_compute_workgroups_per_dimension")
        self.pool = BufferPool(device, self.limits.max_bytes)
        self._kernel = None  # the kernel function running now (its name goes into errors)
        self.taken = None  # while a kernel runs: buffer id -> (created for it, bytes) of what it took and kept
        self._taken_bytes = 0
        if not 1 <= batch_size <= UNIFORM_RING // UNIFORM_BLOCK:  # so a batch's uniforms always fit the ring
            raise ValueError(f"batch_size must be in [1, {UNIFORM_RING // UNIFORM_BLOCK}], got {batch_size}")
        self.batch_size = batch_size
        self.uniform_ring = bytearray(UNIFORM_RING)
        self.unsubmitted = 0  # dispatches recorded since the last submit; each has the next block of the ring
        self.plans = {}  # kernel signature -> DispatchPlan, or None when its run cannot be replayed
        self.plan_replays = 0
        self.on_cpu = on_cpu_adapter(device.info)
        self.variants = {}  # kernel family -> the variant chosen for this adapter
        self.recorder = None  # the protocols.Recorder the work is reported to now, or None
        self.programs = set()  # the captured programs built on this device (capture.py)
        self.replays = 0

    @property
    def on_cpu(self):
        return self._on_cpu

    @on_cpu.setter
    def on_cpu(self, value):  # kernels pick their variants by it: plans logged under the other value are stale
        self._on_cpu = value
        self.plans.clear()

    # ---- the engine's backend interface -----------------------------------------------------

    def info(self):
        return {**self.device.info, "variants": dict(self.variants), "on_cpu_adapter": self.on_cpu}

    def memory_caveats(self):
        return []

    def allocated_bytes(self):
        return self.pool.bytes_allocated

    def upload(self, array):
        recorder = self.recorder
        dtype = dtypes.of_numpy(array.dtype)
        # checked before any host conversion; a recorded function's constant gets a buffer its dispatches never used
        avoid = recorder.uploading() if recorder is not None else None
        buf, created = self.take(array.size, array.shape, dtype, avoid=avoid, upload=True)
        nbytes = array.size * ITEMSIZE_ON_GPU
        if nbytes:
            host = array.astype(np.uint32) if dtype == dtypes.bool_ else array
            try:
                self.device.write_buffer(buf, np.ascontiguousarray(host))
            except BaseException:
                self.give_back({buf: (created, nbytes)})
                raise
        if recorder is not None:
            recorder.uploaded(buf)
        return GpuArray(buf, array.shape, dtype), nbytes

    def host_scalar(self, array):
        """A handle for a one-element array that stays on the host (module docstring). While pe.capture
        records, its value goes into the recorded uniforms: a Python number in the function is a constant of every
        replay, as an uploaded one would be (what changes per replay is an ENGINE.fresh_tensors value, a
        buffer)."""
        value = array.item()
        return HostScalar(int(value) if type(value) is bool else value, array.shape, dtypes.of_numpy(array.dtype)), (
            ITEMSIZE_ON_GPU
        )

    def _uploaded(self, handle):
        """The handle, with a buffer: a HostScalar gets one uploaded on first need, shared by the tensors sharing it."""
        if handle.buffer is None:
            array = np.full(handle.shape, handle.value, dtypes.NUMPY[handle.dtype])
            handle.buffer = self.upload(array)[0].buffer
        return handle

    def read(self, handle):
        if (host := self._before_read(handle)) is not None:
            return host
        raw = self.device.read_buffer(handle.buffer, handle.size * ITEMSIZE_ON_GPU)
        return self._decode(raw, handle)

    async def read_async(self, handle):
        if (host := self._before_read(handle)) is not None:
            return host
        raw = await self.device.read_buffer_async(handle.buffer, handle.size * ITEMSIZE_ON_GPU)
        return self._decode(raw, handle)

    def _before_read(self, handle):
        """A readback's bookkeeping: the values when they are on the host (a HostScalar's), else None, and the
        recorded work submitted so that the buffer holds them."""
        if self.recorder is not None:
            self.recorder.reading_back()
        if handle.value is not None:
            return np.full(1, handle.value, dtypes.NUMPY[handle.dtype])
        self.flush()
        return None

    @staticmethod
    def _decode(raw, handle):
        if handle.dtype == dtypes.bool_:
            return np.frombuffer(raw, np.uint32).astype(bool)
        return np.frombuffer(raw, dtypes.NUMPY[handle.dtype]).copy()

    def free(self, handle):
        if handle.buffer is not None:  # None: a HostScalar never uploaded
            self.free_buffer(handle.buffer)

    def free_buffer(self, bid):
        if self.recorder is not None and self.recorder.freeing(bid):  # the recorder keeps it
            return
        taken = self.taken
        if taken is not None and bid in taken:  # a kernel's own temporary
            self._taken_bytes -= taken.pop(bid)[1]
        self.pool.release(bid)
        if self.pool.pending_bytes > PENDING_LIMIT:  # freed memory waits for a submit: keep what waits bounded
            self.flush()

    def run(self, fn, inputs, attrs):
        key = plan = None
        if fn in BUILT_IN and self.recorder is None:
            try:
                key = signature(fn, inputs, attrs)
            except TypeError:  # an attribute that cannot be a key (a numpy array): no plan
                pass
            else:
                plan = self.plans.get(key, False)
            budget = self.memory_budget
            if plan and budget is not None and self._in_use() + plan.take_bytes > budget.limit:
                plan = None  # the kernel itself runs, and names what does not fit
        if plan:  # replayed on the handles: no shapes checked, no arrays made (the logged run had the same)
            for k in plan.buffered_scalars:  # host scalars the kernel binds as buffers: this call's need theirs
                self._uploaded(inputs[k][0])
        else:
            args = []
            for h, shape, dtype in inputs:
                if type(h) is not GpuArray:
                    h = self._operand(fn, h, shape, dtype)
                if len(shape) > MAX_RANK:
                    raise ValueError(f"webgpu kernels support rank <= {MAX_RANK}; got shape {shape}")
                args.append(h if h.shape == shape else h.view(shape))
        self._kernel, self.taken = fn, {}
        try:
            if plan:
                self.plan_replays += 1
                return plan.replay(self, inputs), plan.multi
            out = self._logged(key, fn, args, attrs) if plan is False else fn(self, *args, **(attrs or {}))
        except BaseException as e:
            self._failed(fn, e)
            raise
        finally:
            self._kernel = self.taken = None
            self._taken_bytes = 0
        if type(out) is tuple:
            return [(o, o.size * ITEMSIZE_ON_GPU, o.shape, o.dtype) for o in out], True
        return [(out, out.size * ITEMSIZE_ON_GPU, out.shape, out.dtype)], False

    def _failed(self, fn, error):
        """A kernel raised: give back what it took, and name it in the error."""
        self.give_back(self.taken)
        if not isinstance(error, EngineError):  # the engine's own errors name the op already
            error.add_note(f"(raised by the webgpu kernel {self.kernel_name(fn)!r})")

    def _operand(self, fn, handle, shape, dtype):
        """What kernel `fn` gets for a handle that is not a plain GpuArray."""
        if type(handle) is HostScalar:
            if fn not in TAKES_HOST_SCALARS and (self.recorder is None or self.recorder.runs):
                self._uploaded(handle)
            return handle
        return GpuArray(None, shape, dtype)  # warm-up: a tensor still on the host; kernels read only its shape

    def _logged(self, key, fn, args, attrs):
        """Run a built-in kernel for a signature not seen yet, and keep its plan (None if it has none)."""
        if len({a.buffer for a in args}) < len(args):  # inputs sharing a buffer: log no plan, ask again next time
            return fn(self, *args, **(attrs or {}))
        outer_variants, self.variants = self.variants, {}  # what this kernel records, to repeat on replays
        self.recorder = log = PlanLog()
        try:
            out = fn(self, *args, **(attrs or {}))
        finally:
            self.recorder = None
            written, self.variants = self.variants, outer_variants
            outer_variants.update(written)
        if len(self.plans) >= MAX_PLANS:
            self.plans.clear()
        self.plans[key] = DispatchPlan.from_log(log.events, args, out, written)
        return out

    # ---- what kernels use -------------------------------------------------------------------

    def empty(self, shape, dtype):
        shape = tuple(shape)
        n = 1
        for d in shape:
            n *= d
        bid = self.take(n, shape, dtype)[0]
        return GpuArray(bid, shape, dtype)

    def acquire_once_more(self, nbytes, shape, dtype, op=None, avoid=None, upload=False):
        """After the device ran out of memory: give the pool's unused buffers back and ask the pool once more."""
        self.release_pool()
        try:
            return self.pool.acquire(nbytes, avoid, upload)
        except MemoryError as e:
            raise limits.out_of_memory(op or self._op_name(), shape, dtype, nbytes, e) from e

    def take(self, count, shape, dtype, op=None, avoid=None, upload=False):
        """A pooled buffer for `count` elements, after the device's limits and the memory budget allow it.

        `op` names what asks in errors (default: the running kernel, or an upload); `avoid`: buffer ids not to reuse;
        `upload`: for a queue write (buffer_pool.py)."""
        if not self.limits.fits(count):
            raise self.limits.too_large(op or self._op_name(), shape, dtype, count)
        nbytes = count * ITEMSIZE_ON_GPU
        budget = self.memory_budget
        if budget is not None:
            in_use = self._in_use()
            if in_use + nbytes > budget.limit:
                raise limits.over_budget(op or self._op_name(), shape, dtype, nbytes, budget.limit, in_use)
        try:
            bid, created = self.pool.acquire(nbytes, avoid, upload)
        except MemoryError:
            bid, created = self.acquire_once_more(nbytes, shape, dtype, op, avoid, upload)
        if self.recorder is not None:
            self.recorder.took(bid, count, shape, dtype)
        if self.taken is not None:
            self.taken[bid] = (created, nbytes)
            self._taken_bytes += nbytes
        return bid, created

    def _in_use(self):
        """GPU bytes held now (while a budget is set): by tensors, and by the running kernel."""
        return self.memory_budget.held() + self._taken_bytes

    def give_back(self, taken):
        """Return buffers an op took before it failed ({id: (created, bytes)}, as `take` handed them out): the pool's
        own to the pool, new ones to the device."""
        for bid, (created, _) in taken.items():
            if created:
                self.pool.discard(bid)
            else:
                self.pool.release(bid)
        self._settle_if_idle()

    def discard(self, bids):
        """Destroy buffers taken for good (a captured program's own) rather than return them to the pool."""
        for bid in bids:
            self.pool.discard(bid)
        self._settle_if_idle()

    def _settle_if_idle(self):
        if not self.unsubmitted:  # no recorded work can read what was let go: settle it now, not at the next submit
            self.pool.submitted()

    def _op_name(self):
        return "upload to the GPU" if self._kernel is None else self.kernel_name(self._kernel)

    def kernel_name(self, fn):
        """The name `fn` is registered under on this backend (for error messages: it scans the registry)."""
        name = kernel_registry.registered_name(fn, self.name)
        return getattr(fn, "__name__", repr(fn)) if name is None else name

    def dispatch(self, shader, arrays, uniforms, workgroups):
        """Record one dispatch. `uniforms`: {field: value} for the fields shader.uniforms declares.

        A dispatch of no workgroups records nothing: that is the one place empty outputs are skipped.
        Everything the device would only report when the batch is submitted is checked here first.
        """
        if not all(workgroups):
            return
        recorder = self.recorder
        if recorder is not None and not recorder.runs:
            recorder.dispatched(shader, None, None, workgroups)
            return
        self._validate(shader, arrays, workgroups)
        if not self.device.has_pipeline(shader.key):
            # the GPU runs what is recorded while the compiler works (in a page, while a compile started
            # ahead finishes): a first call then streams through its layers as their shaders come
            self.flush()
            self.device.compile(shader.key, shader.source, shader.n_in, shader.n_out)
        offset = self.unsubmitted * UNIFORM_BLOCK
        nbytes = shader.uniforms.pack_into(self.uniform_ring, offset, uniforms)
        buffer_ids = [a.buffer for a in arrays]
        self.device.dispatch(shader.key, buffer_ids, offset, workgroups)
        if recorder is not None:
            recorder.dispatched(shader, buffer_ids, bytes(self.uniform_ring[offset : offset + nbytes]), workgroups)
        self.unsubmitted += 1
        if self.unsubmitted >= self.batch_size:
            self.flush()

    def _validate(self, shader, arrays, workgroups):
        if len(arrays) != shader.n_in + shader.n_out:
            raise ValueError(f"{shader.key}: {len(arrays)} buffers for {shader.n_in} inputs and {shader.n_out} outputs")
        if max(workgroups) > self.max_workgroups or min(workgroups) < 0:
            raise ValueError(
                f"{shader.key}: workgroups {tuple(workgroups)}, each must be in [0, {self.max_workgroups}] "
                "(maxComputeWorkgroupsPerDimension)"
            )
        inputs = {a.buffer for a in arrays[: shader.n_in]}
        for a in arrays[shader.n_in :]:
            if a.buffer in inputs:  # WebGPU refuses a buffer bound read-only and writable in one dispatch
                raise ValueError(f"{shader.key}: an output is also bound as an input (buffer {a.buffer})")

    def flush(self):
        """Submit every recorded dispatch in one command buffer."""
        if self.unsubmitted:
            self.device.flush(memoryview(self.uniform_ring)[: self.unsubmitted * UNIFORM_BLOCK])
            self.unsubmitted = 0
        self.pool.submitted()

    def record(self, name, inputs):
        """A Recording for pe.capture (capture.py); None when two inputs share a buffer: the recorded dispatches
        could not tell them apart."""
        input_ids = [h.buffer for h in inputs]
        if len(set(input_ids)) < len(input_ids):
            return None
        return Recording(name, self, input_ids)

    async def warmup(self, shaders):
        """Compile pipelines without running them, all at once (a browser compiles them in parallel);
        returns how many were new."""
        new = {s.key: s for s in shaders if not self.device.has_pipeline(s.key)}.values()
        await asyncio.gather(*(self.device.compile_async(s.key, s.source, s.n_in, s.n_out) for s in new))
        return len(new)

    def native_buffer(self, handle):
        return self.device.native_buffer(self._uploaded(handle).buffer)

    def stats(self):
        return {
            **self.device.stats(),
            "pool_bytes_allocated": self.pool.bytes_allocated,
            "pool_bytes_in_use": self.pool.bytes_in_use,
            "pool_reuses": self.pool.reused,
            "recorded_unsubmitted": self.unsubmitted,
            "capture_programs": len(self.programs),
            "capture_bytes": sum(p.nbytes for p in self.programs),
            "capture_replays": self.replays,
            "kernel_plans": len(self.plans),
            "kernel_plan_replays": self.plan_replays,
            "variants": dict(self.variants),
        }

    def thread_bytes(self):
        return 0  # a GPU backend keeps no copies in CPU threads' memory

    def overwrite(self, handle, source):
        return False  # a copy would be a submit of its own: the variable takes the new buffer

    def program_bytes(self):
        return 0  # its captured programs' buffers are in its pool (allocated_bytes)

    def release_pool(self, idle=False):
        if idle:  # the engine moved on: captured programs go too, re-recorded on use
            for program in list(self.programs):
                program.release()
        self.flush()
        self.pool.release_free()

    @property
    def lost(self):
        return self.device.lost


async def create_backend():
    """Start the backend on this platform's device: the JS bridge in Pyodide, wgpu-py in CPython."""
    if sys.platform == "emscripten":
        from .bridge_device import BridgeDevice

        return WebGPUBackend(await BridgeDevice.create())
    from .wgpu_device import WgpuDevice

    return WebGPUBackend(await WgpuDevice.create())


__all__ = ["GpuArray", "HostScalar", "WebGPUBackend", "create_backend"]
