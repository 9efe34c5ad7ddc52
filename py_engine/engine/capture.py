"""pe.capture(fn): record a function's work once, then replay it whole: on webgpu its dispatches in one device call,
on wasm its kernel calls without the engine's Python per op.

    forward = pe.capture(lambda x: model.predict(x).softmax())
    y = forward(x)        # first call for x's shapes and dtypes: runs fn normally and records its dispatches
    y = forward(x2)       # later calls: a replay (copy x2 in, every dispatch or kernel call, copy the outputs out)
    forward.dispose()     # frees the programs and every buffer they hold

Python costs ~25 us per op on webgpu (more in the page), so a model of a hundred ops spends milliseconds in
Python; a replay spends one device call. On wasm a replay calls the recorded kernels without that Python (about 7
of movenet-lightning's 24 ms op by op). The engine's part is here: when to record, which signature a program
serves, running fn in a scope of its own (every intermediate is freed when it returns), holding the variables'
buffers, and wrapping a replay's outputs as tensors. The backend's part is behind the backend protocol
(`Backend.record` -> `CaptureRecording` -> `ReplayProgram`, backend_protocols.py): the webgpu backend's is
backends/webgpu/capture.py, which says how a recording becomes a device program; the wasm backend's is
backends/wasm/capture.py (its kernels' calls into the SIMD module, replayed with the recorded addresses).

Weights and other tensors fn reads from outside are bound as they are: they must outlive the capture. A training
step assigns variables (weights, optimizer slots); see _VariableStates for how each keeps one buffer that every
replay updates in place. Values that change per call (the learning rate of a schedule, Adam's bias corrections,
dropout's random draws) are fresh_tensors values (fresh_values.py), made anew before each replay.
"""

import functools
import weakref

from ..errors import CaptureError, DeviceLostError
from ..tensor import Tensor
from .tape import TAPE


class Capture:
    def capture(self, fn, max_programs=1):
        """A callable `captured(*tensors)` that runs `fn` (tensors -> a tensor, or a list/tuple of tensors) on the
        webgpu or wasm backend as a recorded program.

        The first call for an input signature (shapes and dtypes) runs fn normally (its results are real) while
        recording every dispatch; later calls with that signature replay the recording: the new inputs are copied
        into the program's input buffers, every dispatch runs in one pass, the outputs are copied into fresh
        tensors, all in one device call and one submit, with no Python per op. On wasm the recording is of fn's
        kernels: a replay calls the SIMD module's exports with the recorded addresses where a kernel is the
        module's (a kernel split over the threads: the pool's recorded calls), and the kernel function on the
        recorded arrays where it is not (numpy's kernels), without the engine's work per op; results are the
        uncaptured ones bit for bit. A call with another signature runs fn normally, unless fewer than
        `max_programs` signatures were recorded: then it is recorded too.

        fn may read its inputs and any tensors that outlive the capture (weights), and assign variables: a training
        step (forward, gradients, optimizer update) can be captured, and each replay updates the variables in place.
        Reading a tensor back inside fn raises CaptureError. Python values fn uses are frozen at recording (a Python
        scalar operand becomes a constant of the program), except fresh_tensors values, which the optimizers and
        random ops use for what changes per call. A call that creates variables (optimizer slots and weights made
        on first use) runs normally and is not kept: the next call records. So does a call that assigns a variable
        whose buffer another tensor shares (pe.variable(t) keeps t's), as a replay would rewrite t too: the assign
        gave the variable a buffer of its own, and the next call records with it.

        A variable assigned outside fn takes a new buffer and the programs binding it record again, but where a
        program rewrites the variable on every replay (a training step), the wasm backend writes the value into
        the variable's buffer and the program replays on; a program that keeps copies of a variable it reads
        (wasm's packed panels) records again once the variable was rewritten in place.

        fn runs normally (nothing is recorded) on the numpy backend, during pe.warmup, under a gradient tape, inside
        the recording of another captured function (which records fn's dispatches), and when two inputs share one
        buffer. A backend switch or a lost device drops the programs (re-recorded on the next call on webgpu or
        wasm), as does a new pool of threads on wasm; a replay on a device that is lost raises DeviceLostError and
        the engine falls back to numpy, where later calls run fn. `captured.dispose()` frees every program and
        buffer (a later call records again). The bytes the programs hold count in
        `pe.memory().num_bytes_in_gpu_allocated` on webgpu and `pe.memory().num_bytes_in_programs` on wasm (host
        memory); `pe.stats()` shows capture_programs, capture_bytes and capture_replays (on wasm also
        capture_native_steps, capture_kernel_steps and capture_split_steps).
        """
        if not callable(fn):
            raise TypeError(f"capture takes a function of tensors, got {type(fn).__name__}")
        if type(max_programs) is not int or max_programs < 0:
            raise ValueError(f"capture: max_programs must be an int >= 0, got {max_programs!r}")
        captured = CapturedFunction(self, fn, max_programs)
        if "_captured" not in vars(self):
            self._captured = weakref.WeakSet()  # the live captured functions
        self._captured.add(captured)
        return captured

    def rewritten_by_a_program(self, buf):
        """Whether a captured program rewrites `buf` (a variable's) in place on every replay: an assign outside it
        then writes into that buffer too, so the program goes on (a fit after a loop of steps run op by op)."""
        return any(
            recorded.backend is buf.backend and recorded.assigns(buf)
            for captured in vars(self).get("_captured", ())
            for recorded in captured._programs.values()
        )

    def variable_disposed(self):
        """A variable was disposed: the programs binding it can never replay again, so they go now rather than at
        their function's next call (a model kept for predictions after its optimizer's slots were freed)."""
        for captured in list(vars(self).get("_captured", ())):
            captured._forget_unusable()


class CapturedFunction:
    def __init__(self, engine, fn, max_programs):
        functools.update_wrapper(self, fn, updated=())  # its name and doc, not its attributes
        self.engine, self.fn, self.max_programs = engine, fn, max_programs
        self.name = getattr(fn, "__qualname__", None) or repr(fn)
        self._programs = {}  # input signature -> Recorded

    def __call__(self, *inputs):
        backend = self.engine.active()
        if not getattr(backend, "captures", False) or backend.recorder is not None or TAPE.get() is not None:
            return self.fn(*inputs)  # numpy, warm-up, inside another recording, gradients: fn as it is
        signature = []
        for i, t in enumerate(inputs):
            if not isinstance(t, Tensor):
                raise TypeError(f"capture({self.name}): input {i} is a {type(t).__name__}; pass tensors")
            signature.append((t.shape, t.dtype))
        signature = tuple(signature)
        recorded = self._programs.get(signature)
        if recorded is not None and recorded.backend is backend and recorded.usable():
            return recorded.replay(inputs)
        self._forget_unusable(backend)
        if len(self._programs) >= self.max_programs:
            return self.fn(*inputs)
        return self._record(backend, signature, inputs)

    def _forget_unusable(self, backend=None):
        """Drop the programs binding a variable that was assigned or disposed since (outside the function: loading
        weights, restoring the best), and with `backend` those of another device (a lost one, or a backend started
        afresh)."""
        for signature, recorded in list(self._programs.items()):
            if (backend is not None and recorded.backend is not backend) or not recorded.usable():
                recorded.program.release()
                del self._programs[signature]

    def dispose(self):
        """Free every program and the buffers it holds (a later call records again)."""
        for recorded in self._programs.values():
            recorded.program.release()
        self._programs.clear()

    def _record(self, backend, signature, inputs):
        engine = self.engine
        for t in inputs:
            buf = t._live_buffer()
            if buf.backend is not backend:
                engine.move(buf, backend)
        recording = backend.record(self.name, [t._buf.handle for t in inputs])
        if recording is None:  # e.g. two inputs share a buffer: the recorded dispatches could not tell them apart
            return self.fn(*inputs)
        variables = _VariableStates(engine, backend)
        backend.recorder = recording
        try:
            with engine.scope() as scope:  # every intermediate is freed before the recording ends
                result = self.fn(*inputs)
                outputs = self._outputs(result)
                scope.export(result)
        except BaseException:
            backend.recorder = None
            recording.drop()
            variables.release()
            raise
        backend.recorder = None
        # state made on first use (optimizer slots, a model's weights), or a variable assigned whose buffer another
        # tensor shares (the assign gave it one of its own): record next call
        if variables.created() or variables.assigned_a_shared_buffer():
            recording.drop()
            variables.release()
            return result
        try:
            assigned = variables.restore(recording)
            program = recording.build(
                [(t._buf.handle, t.shape, t.dtype) for t in inputs],
                [(t._buf.handle, t.shape, t.dtype) for t in outputs],
            )
        except BaseException:
            engine.dispose(result)
            raise
        kind = Tensor if isinstance(result, Tensor) else list if isinstance(result, list) else tuple
        self._programs[signature] = Recorded(engine, backend, program, kind, assigned)
        return result

    def _outputs(self, result):
        outputs = [result] if isinstance(result, Tensor) else result
        if not isinstance(result, (Tensor, list, tuple)) or not all(isinstance(t, Tensor) for t in outputs):
            raise TypeError(
                f"capture({self.name}): the function must return a tensor or a list/tuple of tensors, "
                f"got {type(result).__name__}"
            )
        return outputs


class Recorded:
    """A backend's ReplayProgram for one signature, with what the engine checks before a replay and the kind of
    result (Tensor, list or tuple) it returns."""

    def __init__(self, engine, backend, program, result_kind, assigned):
        self.engine, self.backend, self.program, self.result_kind = engine, backend, program, result_kind
        self.assigned = assigned  # the variables' own buffers that every replay rewrites in place
        self._assigned_ids = {id(buf) for buf in assigned}  # (the list keeps them alive: their ids stay theirs)
        # the variables the dispatches bind, their buffers (an assign outside fn may give a variable another one) and,
        # where the program keeps copies of a value it only reads, how often that buffer had been rewritten in place
        # (another program's update of the variable makes the copies stale)
        self.bound = []
        for v in engine.variables.values():
            buf = v._buf
            if buf.backend is backend and program.binds(buf.handle):
                reads_a_copy = program.keeps_copies and id(buf) not in self._assigned_ids
                self.bound.append((v, buf, buf.writes if reads_a_copy else None))

    def usable(self):
        """Not released, every variable the program binds still holds the buffer it was recorded with, and none it
        keeps a copy of was rewritten in place since."""
        return not self.program.released and all(
            v._buf is buf and (writes is None or buf.writes == writes) for v, buf, writes in self.bound
        )

    def assigns(self, buf):
        """Whether every replay rewrites `buf` (a variable's) in place, reading nothing it kept of it."""
        return id(buf) in self._assigned_ids

    def replay(self, inputs):
        engine, backend = self.engine, self.backend
        handles = []
        for t in inputs:
            buf = t._live_buffer()
            if buf.backend is not backend:
                engine.move(buf, backend)
            handles.append(buf.handle)
        try:
            outputs = self.program.replay(handles)
        except DeviceLostError as e:
            engine.device_lost(backend, e)
            raise
        for buf in self.assigned:
            buf.writes += 1
        results = [engine.adopt(backend, *output) for output in outputs]
        if self.result_kind is Tensor:
            return results[0]
        return results if self.result_kind is list else tuple(results)


class _VariableStates:
    """The variables' buffers while a function is recorded. Assigning a variable points it at a new buffer; a
    program cannot follow that, so each variable keeps its buffer: it is held here while fn runs (no op may reuse
    it), and afterwards the new value is copied into it and the variable points at it again. The program repeats
    that copy after its dispatches, so every replay reads and updates the variables in place."""

    def __init__(self, engine, backend):
        self.engine, self.backend = engine, backend
        self.held = {name: v._buf for name, v in engine.variables.items() if not v.is_disposed}
        for buf in self.held.values():
            buf.refs += 1

    def created(self):
        return any(name not in self.held for name in self.engine.variables)

    def assigned_a_shared_buffer(self):
        """Whether fn assigned a variable whose buffer another tensor also holds (pe.variable(t) shares t's): every
        replay would rewrite that buffer in place, and the other tensor with it."""
        return any(
            own.refs > 1  # more than the hold
            for name, own in self.held.items()
            if (v := self.engine.variables.get(name)) is not None and v._buf is not own
        )

    def restore(self, recording):
        """Have the recording copy each assigned variable's new value into the variable's own buffer (now, and
        after every replay), and point the variable at its own buffer again; those buffers."""
        moves = []
        for name, own in self.held.items():
            v = self.engine.variables.get(name)
            if v is None or v._buf is own:
                continue
            if v._buf.backend is not self.backend:
                raise CaptureError(f"capture: variable {name!r} moved to another backend while being recorded")
            moves.append((v, v._buf, own))
        try:
            recording.keep_state([(new.handle, own.handle) for _, new, own in moves])
        finally:
            for v, new, own in moves:
                v._buf = own  # the hold becomes the variable's own reference again
                own.writes += 1
                del self.held[v.var_name]
                self.engine.unref(new)
            self.release()
        return [own for _, _, own in moves]

    def release(self):
        for buf in self.held.values():
            self.engine.unref(buf)
        self.held = {}
