"""pe.capture(fn): record a function's GPU dispatches once, then replay them whole in one device call.

    forward = pe.capture(lambda x: model.predict(x).softmax())
    y = forward(x)        # first call for x's shapes and dtypes: runs fn normally and records its dispatches
    y = forward(x2)       # later calls: one device call (copy x2 in, every dispatch, copy the outputs out)
    forward.dispose()     # frees the programs and every buffer they hold

Python costs ~25 us per op on webgpu (more in the page), so a model of a hundred ops spends milliseconds in
Python; a replay spends one device call. How a recording becomes a program:
- The webgpu backend reports to a `Recording` (its recorder, protocols.Recorder) every buffer the pool hands out,
  every upload, and every dispatch with its 256-byte uniform block.
- fn runs in a scope of its own, so every intermediate is freed when it returns. The buffers the recorded
  dispatches use that are then free in the pool are taken out of it: the program owns them (reuse among them
  within the recording is fine, the replay keeps the order). Uploads made during fn (constants; a Python-number
  operand is not one, it is a uniform of its dispatch) are pinned: never reused while recording, never given to a
  buffer the recording used before, and kept by the program, so their bytes stay valid for every replay.
- The caller's input buffers and the returned tensors' buffers stay the caller's: in the program they are
  replaced by buffers of its own, which each replay fills by copying the new inputs in and empties by copying
  the outputs into fresh pool buffers (tensors the caller owns, in the current scope like any op's result).
Weights and other tensors fn reads from outside are bound as they are: they must outlive the capture.
- A training step assigns variables (weights, optimizer slots); see _VariableStates for how each keeps one
  buffer that every replay updates in place. Values that change per call (the learning rate of a schedule,
  Adam's bias corrections, dropout's random draws) are fresh_tensors values (replay_values.py), written anew
  before each replay.
"""

import functools

from ...backend_protocols import Recorder
from ...engine import ENGINE, TAPE
from ...errors import DeviceLostError, EngineError
from ...tensor import Tensor
from .device import UNIFORM_BLOCK
from .gpu_array import GpuArray
from .replay_values import check_arrays
from .wgsl import ITEMSIZE_ON_GPU

_PURE = "capture is for functions of their inputs, their weights and variables, and fresh_tensors values"


class CaptureError(EngineError, RuntimeError):
    """A captured function did something a replay cannot repeat (a readback, keeping an intermediate)."""


def capture(fn, max_programs=1):
    """A callable `captured(*tensors)` that runs `fn` (tensors -> a tensor, or a list/tuple of tensors) on a GPU
    backend as a recorded program.

    The first call for an input signature (shapes and dtypes) runs fn normally (its results are real) while
    recording every dispatch; later calls with that signature replay the recording: the new inputs are copied
    into the program's input buffers, every dispatch runs in one pass, the outputs are copied into fresh tensors,
    all in one device call and one submit, with no Python per op. A call with another signature runs fn
    normally, unless fewer than `max_programs` signatures were recorded: then it is recorded too.

    fn may read its inputs and any tensors that outlive the capture (weights), and assign variables: a training
    step (forward, gradients, optimizer update) can be captured, and each replay updates the variables in place.
    Reading a tensor back inside fn raises CaptureError. Python values fn uses are frozen at recording (a Python
    scalar operand becomes a constant of the program), except fresh_tensors values, which the optimizers and
    random ops use for what changes per call. A call that creates variables (optimizer slots and weights made
    on first use) runs normally and is not kept: the next call records.

    fn runs normally (nothing is recorded) on the numpy backend, during pe.warmup, under a gradient tape, inside
    the recording of another captured function (which records fn's dispatches), and when two inputs share one
    buffer. A backend switch or a lost device drops the programs (re-recorded on the
    next call on a GPU); a replay on a device that is lost raises DeviceLostError and the engine falls back to
    numpy, where later calls run fn. `captured.dispose()` frees every program and buffer (a later call records
    again). The bytes the programs hold count in `pe.memory().num_bytes_in_gpu_allocated`; `pe.stats()` shows
    capture_programs, capture_bytes and capture_replays.
    """
    if not callable(fn):
        raise TypeError(f"capture takes a function of tensors, got {type(fn).__name__}")
    if type(max_programs) is not int or max_programs < 0:
        raise ValueError(f"capture: max_programs must be an int >= 0, got {max_programs!r}")
    return CapturedFunction(fn, max_programs)


class CapturedFunction:
    def __init__(self, fn, max_programs):
        functools.update_wrapper(self, fn, updated=())  # its name and doc, not its attributes
        self.fn, self.max_programs = fn, max_programs
        self.name = getattr(fn, "__qualname__", None) or repr(fn)
        self._programs = {}  # input signature -> CapturedProgram

    def __call__(self, *inputs):
        backend = ENGINE.active()
        if not backend.is_gpu or backend.recorder is not None or TAPE.get() is not None:
            return self.fn(*inputs)  # numpy, warm-up, inside another recording, gradients: fn as it is
        signature = []
        for i, t in enumerate(inputs):
            if not isinstance(t, Tensor):
                raise TypeError(f"capture({self.name}): input {i} is a {type(t).__name__}; pass tensors")
            signature.append((t.shape, t.dtype))
        signature = tuple(signature)
        program = self._programs.get(signature)
        if program is not None and program.backend is backend and not program.released and program.current():
            return program.replay(inputs)
        self._forget_unusable(backend)
        if len(self._programs) >= self.max_programs:
            return self.fn(*inputs)
        return self._record(backend, signature, inputs)

    def _forget_unusable(self, backend):
        """Drop the programs of another device (a lost one, or a backend started afresh), and those binding a
        variable that was assigned or disposed since (outside the function: loading weights, restoring the best)."""
        for signature, program in list(self._programs.items()):
            if program.backend is not backend or program.released or not program.current():
                program.release()
                del self._programs[signature]

    def dispose(self):
        """Free every program and the buffers it holds (a later call records again)."""
        for program in self._programs.values():
            program.release()
        self._programs.clear()

    def _record(self, backend, signature, inputs):
        for t in inputs:
            buf = t._live_buffer()
            if buf.backend is not backend:
                ENGINE._move(buf, backend)
        input_ids = [t._buf.handle.buffer for t in inputs]
        if len(set(input_ids)) < len(input_ids):  # the recorded dispatches could not tell the inputs apart
            return self.fn(*inputs)
        recording = Recording(self.name)
        variables = _VariableStates(backend)
        backend.recorder = recording
        try:
            with ENGINE.scope() as scope:  # every intermediate is freed before the recording ends
                result = self.fn(*inputs)
                outputs = self._outputs(result)
                scope.export(result)
        except BaseException:
            backend.recorder = None
            self._drop(backend, recording, variables)
            raise
        backend.recorder = None
        if variables.created():  # state made on first use (optimizer slots, a model's weights): record next call
            self._drop(backend, recording, variables)
            return result
        try:
            state = variables.restore()
            kind = Tensor if isinstance(result, Tensor) else list if isinstance(result, list) else tuple
            program = CapturedProgram(backend, self.name, recording, inputs, input_ids, outputs, kind, state)
        except BaseException:
            ENGINE.dispose(result)
            raise
        self._programs[signature] = program
        return result

    @staticmethod
    def _drop(backend, recording, variables):
        """Forget a recording whose run stands (its results are real) but which becomes no program."""
        for bid in recording.released_uploads:
            backend.pool.release(bid)
        variables.release()

    def _outputs(self, result):
        outputs = [result] if isinstance(result, Tensor) else result
        if not isinstance(result, (Tensor, list, tuple)) or not all(isinstance(t, Tensor) for t in outputs):
            raise TypeError(
                f"capture({self.name}): the function must return a tensor or a list/tuple of tensors, "
                f"got {type(result).__name__}"
            )
        return outputs


class _VariableStates:
    """The variables' buffers while a function is recorded. Assigning a variable points it at a new buffer; a
    program cannot follow that, so each variable keeps its buffer: it is held here while fn runs (no op may reuse
    it), and afterwards the new value is copied into it and the variable points at it again. The program repeats
    that copy after its dispatches, so every replay reads and updates the variables in place."""

    def __init__(self, backend):
        self.backend = backend
        self.held = {name: v._buf for name, v in ENGINE.variables.items() if not v.is_disposed}
        for buf in self.held.values():
            buf.refs += 1

    def created(self):
        return any(name not in self.held for name in ENGINE.variables)

    def restore(self):
        """Copy each assigned variable's new value into its own buffer; the [(new buffer, own buffer, nbytes)]."""
        moves = []
        for name, own in self.held.items():
            v = ENGINE.variables.get(name)
            if v is None or v._buf is own:
                continue
            if v._buf.backend is not self.backend:
                raise CaptureError(f"capture: variable {name!r} moved to another backend while being recorded")
            moves.append((v, v._buf, own))
        copies = [(new.handle.buffer, own.handle.buffer, new.handle.size * ITEMSIZE_ON_GPU) for _, new, own in moves]
        try:
            self.backend.flush()
            _copy_now(self.backend.device, [c for c in copies if c[2]])
        finally:
            for v, new, own in moves:
                v._buf = own  # the hold becomes the variable's own reference again
                del self.held[v.var_name]
                ENGINE._unref(new)
            self.release()
        return copies

    def release(self):
        for buf in self.held.values():
            ENGINE._unref(buf)
        self.held = {}


def _copy_now(device, copies):
    """Buffer-to-buffer copies in one submit: a program without dispatches."""
    if not copies:
        return
    pid = device.create_program([], b"")
    try:
        device.run_program(pid, copies, [])
    finally:
        device.destroy_program(pid)


class Recording(Recorder):
    """What the webgpu backend reports while a function is recorded: the backend's recorder (backend_protocols.Recorder)."""

    __slots__ = ("acquired", "dispatches", "fresh", "name", "released_uploads", "uniforms", "uploads")

    def __init__(self, name):
        self.name = name
        self.acquired = set()  # every buffer the pool handed out
        self.uploads = set()  # buffers written from the host (constants): pinned
        self.released_uploads = set()  # of those, the ones their tensors let go of: the pool does not get them
        self.dispatches = []  # (shader key, number of inputs, buffer ids, workgroups (x, y, z))
        self.uniforms = bytearray()  # one block per dispatch
        self.fresh = []  # (make_arrays, buffer ids, the arrays made): fresh_tensors' values, made anew per replay

    def took(self, bid, count, shape, dtype):
        self.acquired.add(bid)

    def uploading(self):
        return self.acquired

    def uploaded(self, bid):  # a constant of the recorded function: its bytes must stay
        self.uploads.add(bid)

    def freeing(self, bid):
        if bid in self.uploads:  # pinned: the program reads it later
            self.released_uploads.add(bid)
            return True
        return False

    def dispatched(self, shader, buffer_ids, uniform_bytes, workgroups):
        self.dispatches.append((shader.key, shader.n_in, buffer_ids, (*workgroups, 1, 1)[:3]))
        self.uniforms += uniform_bytes
        self.uniforms += bytes(UNIFORM_BLOCK - len(uniform_bytes))

    def made_per_replay(self, make_arrays, buffer_ids, arrays):
        self.fresh.append((make_arrays, buffer_ids, arrays))

    def reading_back(self):
        raise CaptureError(
            f"capture({self.name}): the function tried to read a tensor back to the CPU (data, data_sync, numpy, "
            "item, tolist, print) while being recorded; a replay cannot. Return the tensor and read it after the "
            f"call. {_PURE}"
        )


class CapturedProgram:
    """A recording built on one device: the buffers it owns, its device program, how inputs and outputs move."""

    def __init__(self, backend, name, recording, inputs, input_ids, outputs, result_kind, state_copies=()):
        self.backend, self.name, self.result_kind = backend, name, result_kind  # Tensor, list or tuple
        self.released = False
        pool = backend.pool
        written, used = set(), set()
        for _, n_in, ids, _ in recording.dispatches:
            used.update(ids)
            written.update(ids[n_in:])
        used.update(src for src, _, _ in state_copies)  # a variable's new value may be a constant
        intermediates = (used & recording.acquired) - recording.uploads - {t._buf.handle.buffer for t in outputs}
        self.owned = pool.take_back(intermediates)  # the ones free in the pool: nothing else may reuse them now
        constants = recording.released_uploads & used
        for bid in recording.released_uploads - constants:  # pinned for nothing: back to the pool
            pool.release(bid)
        self.owned |= constants
        try:
            kept = (intermediates - self.owned) & written
            if kept:
                raise CaptureError(
                    f"capture({name}): the function keeps tensors it computed without returning them (pe.keep, a "
                    "scope export, a cache, or state built on first use such as a model's inference plan: call "
                    f"predict once before capturing); a replay would overwrite them. {_PURE}"
                )
            remap = {}  # the caller's buffers -> the program's own
            self.inputs = []  # (program buffer, nbytes)
            for t, bid in zip(inputs, input_ids):
                remap[bid] = self._own(t.size, t.shape, t.dtype)
                self.inputs.append((remap[bid], t.size * ITEMSIZE_ON_GPU))
            self.outputs = []  # (program buffer, shape, dtype, elements)
            for t in outputs:
                handle = t._buf.handle
                if handle.buffer in recording.uploads:
                    raise CaptureError(
                        f"capture({name}): the function returned a tensor it uploaded (shape {t.shape}) instead of "
                        "one it computed; return computed tensors, or pass the value in as an input"
                    )
                if handle.buffer in written and handle.buffer not in remap:
                    remap[handle.buffer] = self._own(handle.size, handle.shape, handle.dtype)
                self.outputs.append((remap.get(handle.buffer, handle.buffer), t.shape, t.dtype, t.size))
            # each assigned variable's new value, copied into the variable's own buffer after the dispatches
            self.state_copies = [(remap.get(src, src), dst, nbytes) for src, dst, nbytes in state_copies if nbytes]
            self.fresh = [(make, self._fresh_buffers(name, ids, used), arrays) for make, ids, arrays in recording.fresh]
            dispatches = [(key, [remap.get(b, b) for b in ids], wg) for key, _, ids, wg in recording.dispatches]
            self.n_dispatches = len(dispatches)
            self.device_id = backend.device.create_program(dispatches, bytes(recording.uniforms))
        except BaseException:
            self._free_buffers()
            raise
        self.nbytes = sum(pool.size_of[bid] for bid in self.owned)
        # the variables the dispatches bind, and their buffers: an assign outside fn gives a variable another one
        self.bound = [
            (v, v._buf) for v in ENGINE.variables.values() if v._buf.backend is backend and v._buf.handle.buffer in used
        ]
        backend.programs.add(self)

    def current(self):
        """Whether every variable the program binds still holds the buffer it was recorded with."""
        return all(v._buf is buf for v, buf in self.bound)

    def _fresh_buffers(self, name, ids, used):
        """Where a replay writes a fresh value: its constant buffer, or None when no dispatch reads it."""
        for bid in ids:
            if bid in used and bid not in self.owned:
                raise CaptureError(
                    f"capture({name}): the function keeps a fresh_tensors value; a replay would change it under "
                    "its owner. Use fresh values inside the function only"
                )
        return [bid if bid in self.owned else None for bid in ids]

    def _own(self, count, shape, dtype):
        bid = self.backend.take(count, shape, dtype, op=f"capture({self.name})")[0]
        self.owned.add(bid)
        return bid

    def replay(self, inputs):
        backend = self.backend
        copies_in = []
        for t, (dst, nbytes) in zip(inputs, self.inputs):
            buf = t._live_buffer()
            if buf.backend is not backend:
                ENGINE._move(buf, backend)
            if nbytes:
                copies_in.append((buf.handle.buffer, dst, nbytes))
        taken, copies_out = {}, list(self.state_copies)
        try:
            backend.flush()  # work recorded before (what made the inputs) goes first
            for make, ids, recorded in self.fresh:  # written before the program's submit, so it reads them
                for bid, array in zip(ids, check_arrays(make(), recorded)):
                    if bid is not None and array.nbytes:
                        backend.device.write_buffer(bid, array)
            for src, shape, dtype, count in self.outputs:
                bid, created = backend.take(count, shape, dtype, op=f"capture({self.name})")
                taken[bid] = (created, count * ITEMSIZE_ON_GPU)
                if count:
                    copies_out.append((src, bid, count * ITEMSIZE_ON_GPU))
            backend.device.run_program(self.device_id, copies_in, copies_out)
        except DeviceLostError as e:
            backend.give_back(taken)
            self.release()
            ENGINE._device_lost(backend, e)
            raise
        except BaseException:
            backend.give_back(taken)
            raise
        backend.pool.submitted()
        backend.replays += 1
        make, new_buffer = ENGINE.make_tensor, ENGINE._new_buffer
        results = [
            make(new_buffer(backend, GpuArray(bid, shape, dtype), nbytes), shape, dtype)
            for (bid, (_, nbytes)), (_, shape, dtype, _) in zip(taken.items(), self.outputs)
        ]
        if self.result_kind is Tensor:
            return results[0]
        return results if self.result_kind is list else tuple(results)

    def release(self):
        """Free the device program and every buffer it owns (bookkeeping only on a lost device)."""
        if self.released:
            return
        self.released = True
        self.backend.programs.discard(self)
        self.backend.device.destroy_program(self.device_id)
        self._free_buffers()

    def _free_buffers(self):
        self.backend.discard(self.owned)
