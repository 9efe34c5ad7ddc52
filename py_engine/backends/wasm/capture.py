"""The wasm backend's part of pe.capture (engine/capture.py): a recording of a function's kernels, and the program it
becomes, replayed without the engine's Python per op.

How a recording becomes a program:
- Every kernel the function runs is one step. While it runs, native.log is a StepLog: the wrapper reports every
  address it hands the module, every array it allocates (native.out, aligned, ints), every zeroing (native.zero)
  and every weight's packed panels (linalg.pack_kept); native.exports is a copy of the module's exports that logs
  each call with its arguments.
- A step is a native step where its log accounts for everything: it called the module, every pointer it passed
  lies in one of its inputs, its own allocations or a weight's panels, and it returned its own allocations. The
  replay calls its exports with the recorded numbers, on the recorded arrays, which the program keeps (their
  addresses stay valid: the module sees the memory, not the arrays). Any other step (numpy's kernel, a copy made
  with numpy inside the wrapper, a kernel split over the threads' pool, a wrapper that writes with numpy after the
  module did) is a kernel step: the replay runs its kernel function on the step's arrays.
- Arrays are values: the program's inputs, fresh_tensors values (made anew per replay), each step's outputs, and
  bound arrays (weights, constants, variables), used as they are. A native step reads each value at a fixed
  address: a value that changes per replay and is not a native step's own output (an input, a fresh value, a
  kernel step's output) has a home array of the program's, into which the replay copies it.
- A weight's panels are packed once, when recorded (they belong to the weight); where the weight is a variable the
  function assigns, or a value computed in it, the packing is a call of the step, repeated on every replay.
- The returned tensors' arrays stay the caller's: the native steps that computed them write into arrays of the
  program's instead, copied into fresh arrays per replay. A variable assigned while recording keeps its own array,
  which every replay updates in place (its panels and the threads' copies of it are dropped then).
- The program's arrays are writeable: a kernel step sees them as values that change (read-only arrays are tensors,
  which never change, and whose panels the kernels keep).
"""

import types

import numpy as np

from ...backend_protocols import CaptureRecording
from ...errors import CaptureError
from ..numpy.backend import own
from . import native, threads
from .kernels import linalg

_PURE = "capture is for functions of their inputs, their weights and variables, and fresh_tensors values"


def _at(array):
    return array.__array_interface__["data"][0]


class StepLog:
    """What one kernel reported while it was recorded (native.log)."""

    __slots__ = ("actions", "addresses", "allocations", "foreign")

    def __init__(self):
        # in order: ("call", export, args), ("zero", array), ("pack", b, packed, (k, n, stride along k, along n))
        self.actions = []
        self.addresses = set()  # every address the wrapper took
        self.allocations = []  # the arrays it allocated
        self.foreign = False  # it worked elsewhere than the module's exports (numpy's writes, the threads' pool)

    def addressed(self, at, array):
        self.addresses.add(at)

    def allocated(self, array):
        self.allocations.append(array)

    def zeroed(self, array):
        self.actions.append(("zero", array))

    def packed(self, b, packed, layout):
        self.actions.append(("pack", b, packed, layout))

    def called(self, export, args):
        self.actions.append(("call", export, args))


def _logging(exports):
    """The module's exports, each reporting its call to native.log first."""

    def logged(fn):
        def call(*args):
            if native.log is not None:
                native.log.called(fn, args)
            return fn(*args)

        return call

    return types.SimpleNamespace(**{name: logged(fn) for name, fn in vars(exports).items()})


class _Pointer:
    """An address a native step passes: `offset` bytes into `source` (("alloc", array), ("packed", array), or a
    value's key)."""

    __slots__ = ("offset", "source")

    def __init__(self, source, offset):
        self.source, self.offset = source, offset


class _Step:
    __slots__ = ("actions", "attrs", "dims", "fn", "keys", "outputs")

    def __init__(self, fn, keys, dims, attrs, outputs, actions):
        self.fn, self.keys, self.dims, self.attrs = fn, keys, dims, attrs
        self.outputs = outputs  # [(value key, owned array, the allocation it is (native steps))]
        self.actions = actions  # the native step's actions with _Pointer arguments, or None: a kernel step


class Recording(CaptureRecording):
    """What the wasm backend reports while a function is recorded (its recorder), and what becomes its program."""

    def __init__(self, name, backend, inputs):
        self.name, self.backend = name, backend
        self.n_inputs = len(inputs)
        self.keys = {id(h): ("in", i) for i, h in enumerate(inputs)}  # id(array) -> its value's key
        self.arrays = {("in", i): h for i, h in enumerate(inputs)}  # value key -> its array when recorded
        self.steps = []
        self.fresh = []  # (make_arrays, [value keys])
        self.freed = set()  # ids of the arrays whose tensors were disposed
        self.moves = []  # (new value's key, the variable's own array)
        self.exports = _logging(native.exports)

    # ---- while the function runs ------------------------------------------------------------------------------

    def run(self, fn, inputs, attrs):
        """NumpyBackend.run, with the kernel's work logged as a step."""
        arrays = [h if h.shape == dims else h.reshape(dims) for h, dims, _ in inputs]
        log, real = StepLog(), native.exports
        native.log, native.exports = log, self.exports
        try:
            out = fn(*arrays, **attrs) if attrs else fn(*arrays)
        finally:
            native.log, native.exports = None, real
        multi = type(out) is tuple
        raw = out if multi else (out,)
        results = [own(o, fn, self.backend) for o in raw]
        keys = [self._key(h) for h, _, _ in inputs]
        outputs = []
        for o, (handle, *_) in zip(raw, results):
            key = ("slot", len(self.arrays))
            self.keys[id(handle)], self.arrays[key] = key, handle
            outputs.append((key, handle, _allocation(log, o)))
        actions = self._native(log, [h for h, _, _ in inputs], keys, outputs)
        dims = [None if h.shape == d else d for h, d, _ in inputs]
        self.steps.append(_Step(fn, keys, dims, attrs, outputs, actions))
        return results, multi

    def _key(self, array):
        key = self.keys.get(id(array))
        if key is None:  # read from outside the function: a weight, a constant, a variable
            key = ("bound", id(array))
            self.keys[id(array)], self.arrays[key] = key, array
        return key

    def _native(self, log, handles, keys, outputs):
        """The step's actions with their pointers resolved, or None where it must stay a kernel step."""
        if log.foreign or not any(a[0] == "call" for a in log.actions):
            return None
        if any(allocation is None for _, _, allocation in outputs):
            return None
        sources = [(_at(a), a.nbytes, ("alloc", a)) for a in log.allocations]
        sources += [(_at(h), h.nbytes, key) for h, key in zip(handles, keys)]
        sources += [(_at(a[2]), a[2].nbytes, ("packed", a[2])) for a in log.actions if a[0] == "pack"]

        def pointer(at):
            for start, nbytes, source in sources:
                if start <= at < start + nbytes:
                    return _Pointer(source, at - start)
            return None

        actions = []
        for action in log.actions:
            if action[0] == "call":
                args = []
                for arg in action[2]:
                    if type(arg) is int and arg in log.addresses:
                        arg = pointer(arg)
                        if arg is None:  # an array the wrapper made with numpy (a copy, a padding)
                            return None
                    args.append(arg)
                actions.append(("call", action[1], args))
            elif action[0] == "zero":
                target = pointer(_at(action[1]))
                if target is None or target.source[0] != "alloc":
                    return None
                actions.append(("zero", target.source[1]))
            else:
                _, b, packed, layout = action
                source = pointer(_at(b))
                if source is None or source.source[0] == "packed":
                    return None
                actions.append(("pack", source, packed, layout))
        return actions

    def made_per_replay(self, make_arrays, handles):
        keys = []
        for k, h in enumerate(handles):
            key = ("fresh", len(self.fresh), k)
            self.keys[id(h)], self.arrays[key] = key, h
            keys.append(key)
        self.fresh.append((make_arrays, keys))

    def freeing(self, bid):
        self.freed.add(id(bid))
        return False

    def reading_back(self):
        raise CaptureError(
            f"capture({self.name}): the function tried to read a tensor back (data, data_sync, numpy, item, tolist, "
            f"print) while being recorded; a replay cannot. Return the tensor and read it after the call. {_PURE}"
        )

    # ---- afterwards -------------------------------------------------------------------------------------------

    def drop(self):
        self.steps, self.arrays, self.keys = [], {}, {}

    def keep_state(self, moves):
        for new, own_array in moves:
            _write(own_array, new, self.name)
            self.moves.append((self._key(new), own_array))

    def build(self, inputs, outputs):
        return CapturedProgram(self, outputs)


def _allocation(log, array):
    """The allocation of the step that `array` (a kernel's output) is, whole, or None."""
    if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
        return None
    at = _at(array)
    for a in log.allocations:
        if _at(a) == at and a.nbytes == array.nbytes and a.dtype == array.dtype:
            return a
    return None


def _write(target, value, name):
    """Copy `value` into `target`, a variable's own array (read-only, as every tensor's), and drop what was kept of
    its old values (its packed panels, the threads' copies)."""
    if target.shape != value.shape or target.dtype != value.dtype:
        value = value.reshape(target.shape)
    try:
        target.flags.writeable = True
    except ValueError:
        raise CaptureError(
            f"capture({name}): a variable's array is a view of memory numpy may not write (made from bytes or a "
            "read-only buffer); assign it a computed value before capturing"
        ) from None
    np.copyto(target, value)
    target.flags.writeable = False
    linalg.changed(target)
    threads.changed(target)


class CapturedProgram:
    """A recording built for replays (a backend_protocols.ReplayProgram): its values' slots, the arrays it owns, its
    steps."""

    def __init__(self, recording, outputs):
        self.backend = backend = recording.backend
        self.name = name = recording.name
        self.released = False
        steps, arrays = recording.steps, recording.arrays
        output_keys = [recording.keys.get(id(h)) for h, _, _ in outputs]
        state = {id(a) for _, a in recording.moves}
        produced = {}  # a native step's output key -> its allocation
        for step in steps:
            if step.actions is not None:
                for key, _, allocation in step.outputs:
                    produced[key] = allocation
        kept = [
            key
            for key, allocation in produced.items()
            if arrays[key] is allocation
            and id(allocation) not in recording.freed
            and key not in output_keys
            and key not in {k for k, _ in recording.moves}
        ]
        if kept:
            raise CaptureError(
                f"capture({name}): the function keeps tensors it computed without returning them (pe.keep, a scope "
                f"export, a cache, or state built on first use: run it once before capturing); a replay would "
                f"overwrite them. {_PURE}"
            )
        # the program's arrays: the native steps' allocations, except the returned ones (the caller's): new ones
        owned = {}  # id(recorded array) -> the program's array
        for key in output_keys:
            allocation = produced.get(key)
            if allocation is not None:
                owned[id(allocation)] = np.empty_like(allocation)
        for step in steps:
            for action in step.actions or ():
                for arg in action[2] if action[0] == "call" else ():
                    if isinstance(arg, _Pointer) and arg.source[0] == "alloc":
                        owned.setdefault(id(arg.source[1]), arg.source[1])
        # the values: one index each; a native step's output is its (program's) allocation, always
        index = {key: i for i, key in enumerate(arrays)}
        self.values = [arrays[key] if key[0] == "bound" else None for key in arrays]
        for key, allocation in produced.items():
            self.values[index[key]] = owned.get(id(allocation), allocation).reshape(arrays[key].shape)
        homes = {}  # value key -> the program's array a native step reads it at

        def home(key):
            if key[0] == "bound":
                return arrays[key]
            if key in produced:
                return owned.get(id(produced[key]), produced[key])
            if key not in homes:
                homes[key] = np.empty_like(arrays[key])
            return homes[key]

        def address(p):
            kind = p.source[0]
            if kind in ("alloc", "packed"):
                return _at(owned.get(id(p.source[1]), p.source[1])) + p.offset
            return _at(home(p.source)) + p.offset

        self.held = []  # bound arrays and constant panels: they must outlive the program
        self.steps = []  # ("native", [(callable, args)]) or ("kernel", fn, arg indexes, dims, attrs, outs, copies)
        self.native_steps = self.kernel_steps = 0
        for step in steps:
            if step.actions is None:
                self.kernel_steps += 1
                outs = [index[k] for k, _, _ in step.outputs]
                self.steps.append((False, step.fn, [index[k] for k in step.keys], step.dims, step.attrs, outs, []))
                continue
            self.native_steps += 1
            calls = []
            for action in step.actions:
                if action[0] == "call":
                    args = tuple(address(a) if isinstance(a, _Pointer) else a for a in action[2])
                    calls.append((action[1], args))
                elif action[0] == "zero":
                    calls.append((owned[id(action[1])].fill, (0,)))
                else:
                    _, b, packed, (k, n, sbk, sbj) = action
                    if b.source[0] == "bound" and id(arrays[b.source]) not in state:  # the weight's: packed once
                        self.held.append(packed)
                        continue
                    # packed anew on every replay, into panels of the program's (the kept ones are b's when recorded)
                    panels = owned.setdefault(id(packed), native.aligned(packed.size))
                    calls.append((native.exports.pack_b, (address(b), k, n, sbk, sbj, _at(panels))))
            self.steps.append((True, calls))
        # after a step whose output a native step reads at its home: copy it there
        copies_after = {}
        for key in homes:
            if key[0] == "slot":
                copies_after[key] = homes[key]
        for i, step in enumerate(steps):
            if step.actions is None:
                self.steps[i][6].extend(
                    (index[key], copies_after[key]) for key, _, _ in step.outputs if key in copies_after
                )
        self.input_homes = [(i, homes[("in", i)]) for i in range(recording.n_inputs) if ("in", i) in homes]
        self.fresh = [
            (make, [(index[key], homes.get(key)) for key in keys]) for make, keys in recording.fresh
        ]  # fmt: skip
        self.outputs = []  # (value index, whether the program owns the array: copied out, tensor's shape, dtype)
        for key, (handle, shape, dtype) in zip(output_keys, outputs, strict=True):
            if key is None or key[0] == "bound":
                raise CaptureError(
                    f"capture({name}): the function returned a tensor it did not compute (shape {handle.shape}); "
                    "return computed tensors, or pass the value in as an input"
                )
            self.outputs.append((index[key], key in produced or key[0] != "slot", shape, dtype))
        self.moves = [(index[key], array) for key, array in recording.moves]
        self.held += [a for a in self.values if a is not None]
        self.owned = list(owned.values()) + list(homes.values())
        for a in self.owned:  # values that change per replay: no kernel may keep panels or copies of them
            linalg.changed(a)
            threads.changed(a)
            a.flags.writeable = True
        self.binds_ids = {id(a) for a in recording.arrays.values()}
        self.nbytes = sum(a.nbytes for a in {id(a): a for a in self.owned}.values())
        backend.programs.add(self)

    def binds(self, handle):
        return id(handle) in self.binds_ids

    def replay(self, inputs):
        values = list(self.values)
        for i, h in enumerate(inputs):
            values[i] = h
        for i, target in self.input_homes:
            np.copyto(target, inputs[i])
        for make, places in self.fresh:
            for (i, target), array in zip(places, make(), strict=True):
                array.flags.writeable = False
                values[i] = array
                if target is not None:
                    np.copyto(target, array)
        backend = self.backend
        for step in self.steps:
            if step[0]:
                for call, args in step[1]:
                    call(*args)
                continue
            _, fn, keys, dims, attrs, outs, copies = step
            args = [values[i] if d is None else values[i].reshape(d) for i, d in zip(keys, dims)]
            out = fn(*args, **attrs) if attrs else fn(*args)
            for i, o in zip(outs, out if type(out) is tuple else (out,)):
                if any(o is a for a in args):  # an input returned as it is: it may be one of the program's arrays
                    o = o.copy()
                values[i] = own(o, fn, backend)[0]
            for i, target in copies:
                np.copyto(target, values[i])
        for i, target in self.moves:
            _write(target, values[i], self.name)
        backend.replays += 1
        results = []
        for i, copied, shape, dtype in self.outputs:
            array = values[i]
            if copied:
                array = array.copy()
                array.flags.writeable = False
            results.append((array, array.nbytes, shape, dtype))
        return results

    def release(self):
        """Drop the program's arrays (numpy frees them when nothing else holds them)."""
        if self.released:
            return
        self.released = True
        self.backend.programs.discard(self)
        self.steps, self.values, self.held, self.owned, self.fresh, self.moves = [], [], [], [], [], []
        self.input_homes, self.binds_ids = [], set()
