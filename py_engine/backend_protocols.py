"""The contracts below the engine: what the engine asks of a backend, what watches a backend's work instead of (or
while) it runs, and what the webgpu backend asks of a device. They sit below the engine, not in `backends/`,
because the engine uses them (warm-up's recorder) and the backends implement them without importing the engine.

`Backend` is what `py_engine.engine` and `pe.release_pool` call; `Device` is what the webgpu backend calls, on
wgpu-py (`backends.webgpu.wgpu_device.WgpuDevice`) or the browser's WebGPU (`backends.webgpu.bridge_device.BridgeDevice`, over
static/worker/bridge.js). `Recorder` is what a GPU backend reports its work to: pe.warmup collecting shaders
(engine/warmup.py), pe.capture recording a function (engine/capture.py, through the backend's `CaptureRecording`),
the webgpu backend logging a kernel's first run for its plan (backends/webgpu/dispatch_plans.py). Members only a
GPU backend needs have defaults here, so a backend that subclasses `Backend` (the numpy backend does) declares them
by inheriting; tests/test_protocols.py checks every implementation's names and parameter names against these classes.

A backend sees no tensor and no engine: it is given handles with their shapes and dtypes, its memory budget, and
its recorder, and hands back handles; the engine keeps the tensors, scopes and byte counts.
"""

from typing import Protocol


class Backend(Protocol):
    """Turns the engine's kernel calls into work on one kind of device.

    A handle is whatever the backend stores a buffer as (a read-only numpy array, a GPU buffer id with its
    shape); the engine only hands it back. Buffers are freed at a known moment (`free`), never by the garbage
    collector.
    """

    name: str  # registry key: kernels are registered per (kernel name, backend name)
    is_gpu: bool  # its bytes count as GPU memory in pe.memory() and it has the GPU-only members below
    lost: object = None  # None, or why its device was lost: the engine then starts it afresh on next use
    # the Recorder its work is reported to now, or None (GPU backends, and pe.capture's recording on wasm)
    recorder: object = None
    captures: bool = False  # pe.capture records programs here (`record`); elsewhere a captured function runs as it is
    host_arrays: bool = False  # handles are read-only numpy arrays in this process: such backends share tensors as is
    kernel_fallback: object = None  # a backend whose kernels run where this one has none (same handles), or None
    memory_budget: object = None  # given by the engine: None, or an engine.MemoryBudget (its `limit` in bytes, and
    # `held()`, the bytes this backend's live tensors hold) that a GPU backend checks before it allocates

    def upload(self, array):
        """(handle, nbytes) of a new buffer holding a copy of `array` (a numpy array of an engine dtype)."""
        ...

    def read(self, handle):
        """The buffer's values as a flat numpy array; waits for queued work (a synchronous readback)."""
        ...

    async def read_async(self, handle):
        """As `read`, without blocking the event loop."""
        ...

    def free(self, handle):
        """Release the buffer; the engine calls it once, when its last tensor is disposed."""
        ...

    def run(self, fn, inputs, attrs):
        """Run kernel `fn` (as registered for this backend) on `inputs`, a list of (handle, shape, dtype), one per
        input tensor (the shape is the tensor's: a view's differs from its handle's), with keyword `attrs`.

        Returns ([(handle, nbytes, shape, dtype)] of new buffers, multi): multi is True when the kernel
        returns a tuple of outputs.
        """
        ...

    def info(self):
        """A dict describing the device (shown, with the name, by pe.backend_info())."""
        ...

    def memory_caveats(self):
        """Reasons pe.memory() may be inexact on this backend (an empty list when it is exact)."""
        ...

    def stats(self):
        """Counters of work and traffic: uploads, readbacks and their bytes; GPU backends add dispatches,
        submits and pipeline compiles (pe.stats())."""
        ...

    def host_scalar(self, array):
        """(handle, nbytes) for a one-element array made for an op's Python-number operand, kept on the host until a
        kernel needs it in a buffer; None to have it uploaded (what a backend without such handles does)."""
        return None

    def flush(self):
        """Submit queued work (nothing to do on a backend that works synchronously)."""

    def allocated_bytes(self):
        """Bytes the backend's buffer pool holds, in use or free for reuse (memory().num_bytes_in_gpu_allocated)."""
        return 0

    def program_bytes(self):
        """Host bytes a CPU backend's captured programs own (memory().num_bytes_in_programs); a GPU backend's are in
        its pool (allocated_bytes)."""
        return 0

    def thread_bytes(self):
        """Bytes of tensors' data a CPU backend's threads keep a copy of while the tensors live (the wasm backend's
        weights in its shared memory: memory().num_bytes_in_threads)."""
        return 0

    def overwrite(self, handle, source):
        """Copy buffer `source`'s values into buffer `handle` (as many elements) in place: True, or False where this
        backend does not (a variable assigned then takes the new buffer instead)."""
        return False

    def native_buffer(self, handle):
        """The platform's GPU buffer object for `handle` (tensor.data_to_gpu())."""
        raise NotImplementedError(f"the {self.name} backend has no GPU buffers; data_to_gpu() needs a GPU backend")

    async def warmup(self, shaders):
        """Compile the pipelines of `shaders` (collected by pe.warmup's recorder) without running them; how many were
        new."""
        return 0

    def release_pool(self, idle=False):
        """Give unused pooled buffers back to the device. `idle`: the engine runs its work elsewhere now (another
        backend is active), so what serves only repeated work here (captured programs) goes too."""

    def record(self, name, inputs):
        """A CaptureRecording for pe.capture of function `name` on input handles `inputs`, or None where this backend
        cannot record one (the function then runs as it is). The engine sets it as the recorder while the function
        runs."""
        return None


class Recorder(Protocol):
    """What a GPU backend reports its work to while `backend.recorder` is set, one recorder at a time: pe.warmup's
    shader list, pe.capture's recording, a dispatch plan's log. Each method is one event, reported as it happens; the
    defaults ignore it, so a recorder defines only what it keeps (and subclasses this class to inherit the rest).
    Dispatch plans are neither logged nor replayed while a recorder is set: the kernels' own Python runs."""

    runs: bool = True  # False: the backend runs nothing while it records (warm-up): dispatches are only reported,
    # tensors on another backend stay there (their shapes suffice), and values read back are meaningless

    def took(self, bid, count, shape, dtype):
        """The pool handed out buffer `bid` for `count` elements (a kernel's output or temporary, or an upload's)."""

    def uploading(self):
        """An upload is about to take a buffer: the buffer ids it must not be given (a set), or None."""
        return None

    def uploaded(self, bid):
        """Host bytes were written into buffer `bid`."""

    def freeing(self, bid):
        """Buffer `bid` is let go of; True keeps it out of the pool (the recorder holds it)."""
        return False

    def dispatched(self, shader, buffer_ids, uniform_bytes, workgroups):
        """A dispatch of `shader` over buffer_ids (inputs, then outputs) with its packed uniforms; when `runs` is
        False it is not run, and buffer_ids and uniform_bytes are None."""

    def reading_back(self):
        """A buffer is about to be read back to the host (a recorder whose work cannot contain that raises)."""

    def made_per_replay(self, make_arrays, handles):
        """ENGINE.fresh_tensors uploaded values into `handles` that a replay makes anew: make_arrays() returns them
        (numpy arrays of the same shapes and dtypes, one per handle) each time it is called."""


class CaptureRecording(Recorder):
    """What Backend.record returns: the recorder of one pe.capture recording, which then becomes a ReplayProgram.
    The engine runs the function with it as the backend's recorder, then calls `keep_state` and `build`, or `drop`."""

    def drop(self):
        """Forget the recording: the function's run stands (its results are real) but it becomes no program."""
        ...

    def differentiating(self):
        """The engine runs the function's next op under a gradient tape (a training step): what the ops make now is
        read again by their gradients' kernels. Nothing to do by default."""

    def keep_state(self, moves):
        """Copy each (new handle, own handle) of `moves` now, and after every replay's dispatches: a variable
        assigned while recording keeps its own buffer, which every replay updates in place."""
        ...

    def build(self, inputs, outputs):
        """The ReplayProgram of the recording: inputs and outputs are [(handle, shape, dtype)] of the function's
        input tensors and returned tensors, whose buffers stay the caller's (a replay copies them in and out)."""
        ...


class ReplayProgram(Protocol):
    """A recorded function on one device, replayed whole (CaptureRecording.build)."""

    released: bool  # True once released: the engine records again
    # it keeps copies of values it reads from variables (packed, or in another memory): a variable rewritten in place
    # by another program, or by an assign outside that writes into the buffer, makes them stale (recorded again)
    keeps_copies: bool

    def binds(self, handle):
        """Whether the program's dispatches read or write the buffer of `handle` (a variable's)."""
        ...

    def replay(self, inputs):
        """Run the program on input handles `inputs` (of the recorded shapes and dtypes); its outputs as
        [(handle, nbytes, shape, dtype)], new buffers for the engine to wrap. On DeviceLostError it releases
        itself first."""
        ...

    def release(self):
        """Free the device program and every buffer it owns (bookkeeping only on a lost device)."""
        ...


class Device(Protocol):
    """The narrow interface between the webgpu backend and a WebGPU device.

    Everything above this line (shader choice, dispatch math, buffer reuse) is Python that does not know where
    it runs. Buffers, pipelines and programs are named by ints (ids) the device hands out.

    Bindings follow one convention for every shader: binding 0 is a 256-byte uniform block (device.UNIFORM_BLOCK)
    read with a dynamic offset from the uniform ring (device.UNIFORM_RING); bindings 1..n are the read-only
    inputs, then the outputs. A call after the device is lost raises DeviceLostError (bookkeeping calls such as
    destroy_buffer stay silent).
    """

    info: dict  # adapter facts: vendor, architecture, device, description, adapter_type, ...
    limits: dict  # the device's limits in snake_case (max_buffer_size, max_storage_buffer_binding_size, ...)
    lost: object  # None, or the reason the device was lost

    def create_buffer(self, nbytes):
        """The id of a new storage buffer of at least `nbytes` (copyable both ways)."""
        ...

    def destroy_buffer(self, bid):
        """Free the buffer now; its id is never handed out again."""
        ...

    def write_buffer(self, bid, data, offset=0):
        """Copy bytes-like `data` into the buffer at `offset`; the data is copied at call time."""
        ...

    def has_pipeline(self, key):
        """Whether the shader named `key` is compiled."""
        ...

    def compile(self, key, source, n_in, n_out):
        """Compile WGSL `source` as pipeline `key` with n_in read-only and n_out writable storage bindings
        (blocking); a shader the compiler rejects raises KernelCompileError naming its lines."""
        ...

    async def compile_async(self, key, source, n_in, n_out):
        """As `compile`, without blocking (warm-up compiles many at once)."""
        ...

    def dispatch(self, key, buffer_ids, uniform_offset, workgroups):
        """Record one dispatch of compiled pipeline `key` over `buffer_ids` (inputs then outputs), reading its
        uniforms at `uniform_offset` of the ring; recorded, not yet submitted."""
        ...

    def flush(self, uniform_bytes=b""):
        """Write `uniform_bytes` into the uniform ring, then submit every recorded dispatch."""
        ...

    def read_buffer(self, bid, nbytes):
        """The first `nbytes` of the buffer, after the work submitted so far (blocking)."""
        ...

    async def read_buffer_async(self, bid, nbytes):
        """As `read_buffer`, without blocking the event loop."""
        ...

    def native_buffer(self, bid):
        """The platform's buffer object (a wgpu GPUBuffer, or the browser's GPUBuffer) for data_to_gpu()."""
        ...

    def stats(self):
        """A dict of the counters in device.DeviceStats.FIELDS."""
        ...

    def create_program(self, dispatches, uniform_bytes):
        """The id of a captured program (webgpu/capture.py), built once and replayed whole.

        dispatches: [(key, buffer_ids, (x, y, z))] of compiled pipelines; uniform_bytes: one 256-byte block per
        dispatch, in order, written once into the program's own uniform buffer (dispatch i reads block i). The
        bind groups are made here, so a replay creates nothing.
        """
        ...

    def run_program(self, pid, copies_in, copies_out):
        """Replay program `pid`: copies are [(src id, dst id, nbytes)], nbytes a multiple of 4.

        In one command buffer and one submit: the copies in, every dispatch in one compute pass, the copies
        out. Work recorded by dispatch() must be flushed first (the submit does not include it). Counts its
        dispatches and one submit in stats().
        """
        ...

    def destroy_program(self, pid):
        """Free the program's uniform buffer and bind groups (the buffers it binds stay)."""
        ...

    def destroy(self):
        """Lose the device on purpose (tests of device loss)."""
        ...
