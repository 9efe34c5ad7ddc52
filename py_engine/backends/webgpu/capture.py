"""The webgpu backend's part of pe.capture (engine/capture.py): a recording of a function's dispatches, and the
device program it becomes, replayed whole in one device call.

How a recording becomes a program:
- The backend reports to a `Recording` (its recorder, backend_protocols.CaptureRecording) every buffer the pool hands
  out, every upload, and every dispatch with its 256-byte uniform block.
- The engine runs the function in a scope of its own, so every intermediate is freed when it returns. The buffers
  the recorded dispatches use that are then free in the pool are taken out of it: the program owns them (reuse
  among them within the recording is fine, the replay keeps the order). Uploads made during the function
  (constants; a Python-number operand is not one, it is a uniform of its dispatch) are pinned: never reused while
  recording, never given to a buffer the recording used before, and kept by the program, so their bytes stay valid
  for every replay.
- The caller's input buffers and the returned tensors' buffers stay the caller's: in the program they are
  replaced by buffers of its own, which each replay fills by copying the new inputs in and empties by copying
  the outputs into fresh pool buffers (which the engine wraps as tensors the caller owns).
- A variable assigned while recording keeps its own buffer: its new value is copied into it now and after every
  replay's dispatches (`keep_state`). A fresh_tensors value is written anew before every replay.
"""

from ...backend_protocols import CaptureRecording
from ...errors import CaptureError, DeviceLostError
from .device import UNIFORM_BLOCK
from .gpu_array import GpuArray
from .wgsl import ITEMSIZE_ON_GPU

_PURE = "capture is for functions of their inputs, their weights and variables, and fresh_tensors values"


def _copy_now(device, copies):
    """Buffer-to-buffer copies in one submit: a program without dispatches."""
    if not copies:
        return
    pid = device.create_program([], b"")
    try:
        device.run_program(pid, copies, [])
    finally:
        device.destroy_program(pid)


class Recording(CaptureRecording):
    """What the webgpu backend reports while a function is recorded (its recorder), and what becomes its program."""

    __slots__ = (
        "acquired",
        "backend",
        "dispatches",
        "fresh",
        "input_ids",
        "name",
        "released_uploads",
        "state_copies",
        "uniforms",
        "uploads",
    )

    def __init__(self, name, backend, input_ids):
        self.name, self.backend, self.input_ids = name, backend, input_ids
        self.acquired = set()  # every buffer the pool handed out
        self.uploads = set()  # buffers written from the host (constants): pinned
        self.released_uploads = set()  # of those, the ones their tensors let go of: the pool does not get them
        self.dispatches = []  # (shader key, number of inputs, buffer ids, workgroups (x, y, z))
        self.uniforms = bytearray()  # one block per dispatch
        self.fresh = []  # (make_arrays, buffer ids): fresh_tensors' values, made anew per replay
        self.state_copies = []  # (variable's new value, variable's own buffer, nbytes), after the dispatches

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

    def made_per_replay(self, make_arrays, handles):
        self.fresh.append((make_arrays, [h.buffer for h in handles]))

    def reading_back(self):
        raise CaptureError(
            f"capture({self.name}): the function tried to read a tensor back to the CPU (data, data_sync, numpy, "
            "item, tolist, print) while being recorded; a replay cannot. Return the tensor and read it after the "
            f"call. {_PURE}"
        )

    def drop(self):
        for bid in self.released_uploads:
            self.backend.pool.release(bid)

    def keep_state(self, moves):
        copies = [(new.buffer, own.buffer, new.size * ITEMSIZE_ON_GPU) for new, own in moves]
        self.backend.flush()
        _copy_now(self.backend.device, [c for c in copies if c[2]])
        self.state_copies = copies

    def build(self, inputs, outputs):
        return CapturedProgram(self, inputs, outputs)


class CapturedProgram:
    """A recording built on one device (a backend_protocols.ReplayProgram): the buffers it owns, its device program,
    how inputs and outputs move."""

    keeps_copies = False  # its dispatches bind the variables' buffers themselves

    def __init__(self, recording, inputs, outputs):
        self.backend = backend = recording.backend
        self.name = name = recording.name
        self.released = False
        pool = backend.pool
        written, used = set(), set()
        for _, n_in, ids, _ in recording.dispatches:
            used.update(ids)
            written.update(ids[n_in:])
        used.update(src for src, _, _ in recording.state_copies)  # a variable's new value may be a constant
        self.used = used
        intermediates = (used & recording.acquired) - recording.uploads - {h.buffer for h, _, _ in outputs}
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
            for (_, shape, dtype), bid in zip(inputs, recording.input_ids):
                count = _count(shape)
                remap[bid] = self._own(count, shape, dtype)
                self.inputs.append((remap[bid], count * ITEMSIZE_ON_GPU))
            self.outputs = []  # (program buffer, shape, dtype, elements)
            for handle, shape, dtype in outputs:
                if handle.buffer in recording.uploads:
                    raise CaptureError(
                        f"capture({name}): the function returned a tensor it uploaded (shape {shape}) instead of "
                        "one it computed; return computed tensors, or pass the value in as an input"
                    )
                if handle.buffer in written and handle.buffer not in remap:
                    remap[handle.buffer] = self._own(handle.size, handle.shape, handle.dtype)
                self.outputs.append((remap.get(handle.buffer, handle.buffer), shape, dtype, _count(shape)))
            # each assigned variable's new value, copied into the variable's own buffer after the dispatches
            self.state_copies = [
                (remap.get(src, src), dst, nbytes) for src, dst, nbytes in recording.state_copies if nbytes
            ]
            self.fresh = [(make, self._fresh_buffers(name, ids, used)) for make, ids in recording.fresh]
            dispatches = [(key, [remap.get(b, b) for b in ids], wg) for key, _, ids, wg in recording.dispatches]
            self.n_dispatches = len(dispatches)
            self.device_id = backend.device.create_program(dispatches, bytes(recording.uniforms))
        except BaseException:
            self._free_buffers()
            raise
        self.nbytes = sum(pool.size_of[bid] for bid in self.owned)
        backend.programs.add(self)

    def binds(self, handle):
        return handle.buffer in self.used

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
        copies_in = [(h.buffer, dst, nbytes) for h, (dst, nbytes) in zip(inputs, self.inputs) if nbytes]
        taken, copies_out = {}, list(self.state_copies)
        try:
            backend.flush()  # work recorded before (what made the inputs) goes first
            for make, ids in self.fresh:  # written before the program's submit, so it reads them
                for bid, array in zip(ids, make()):
                    if bid is not None and array.nbytes:
                        backend.device.write_buffer(bid, array)
            for src, shape, dtype, count in self.outputs:
                bid, created = backend.take(count, shape, dtype, op=f"capture({self.name})")
                taken[bid] = (created, count * ITEMSIZE_ON_GPU)
                if count:
                    copies_out.append((src, bid, count * ITEMSIZE_ON_GPU))
            backend.device.run_program(self.device_id, copies_in, copies_out)
        except DeviceLostError:
            backend.give_back(taken)
            self.release()
            raise
        except BaseException:
            backend.give_back(taken)
            raise
        backend.pool.submitted()
        backend.replays += 1
        return [
            (GpuArray(bid, shape, dtype), nbytes, shape, dtype)
            for (bid, (_, nbytes)), (_, shape, dtype, _) in zip(taken.items(), self.outputs)
        ]

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


def _count(shape):
    count = 1
    for d in shape:
        count *= d
    return count
