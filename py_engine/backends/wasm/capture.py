"""The wasm backend's part of pe.capture (engine/capture.py): a recording of a function's kernels, and the program it
becomes, replayed without the engine's Python per op.

How a recording becomes a program:
- Every kernel the function runs is one step. While it runs, native.log is a StepLog: the wrapper reports every
  address it hands the module, every array it allocates (native.out, aligned, ints), every zeroing (native.zero),
  every table of addresses (native.table: the program fills its own with its own arrays' addresses) and every
  weight's packed panels (linalg.pack_kept); native.exports is a copy of the module's exports that logs
  each call with its arguments.
- A step is a native step where its log accounts for everything: it called the module, every pointer it passed
  lies in one of its inputs, its own allocations or a weight's panels, and it returned its own allocations. The
  replay calls its exports with the recorded numbers, on the recorded arrays, which the program keeps (their
  addresses stay valid: the module sees the memory, not the arrays). Any other step (numpy's kernel, a copy made
  with numpy inside the wrapper, a wrapper that writes with numpy after the module did) is a kernel step: the
  replay runs its kernel function on the step's arrays.
- A kernel split over the threads' pool is a native step too (a split step): while recording, the pool works in
  blocks of its shared memory that the program keeps (threads.Pool.record) and logs its calls (copies in and out,
  packing, zeroing, the split call); the replay makes them again. An output a later split step reads stays in its
  block (copied out only where the calling thread's steps or the caller read it); shape parameters and weights no
  replay writes are copied in once, when recorded, a weight into its kept block, which the program holds. The
  blocks are shared by lifetime: an op's copies in and scratch, and an output once the engine frees its value
  (`freeing`), serve later ops.
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
import weakref

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

    __slots__ = ("actions", "addresses", "allocations", "calls", "constants", "foreign", "split", "tables")

    def __init__(self):
        # in order: ("call", export, args), ("zero", array), ("pack", b, packed, (k, n, stride along k, along n))
        self.actions = []
        self.addresses = set()  # every address the wrapper took
        self.allocations = []  # the arrays it allocated
        self.constants = set()  # ids of those whose values it wrote with numpy (native.ints): constants of the step
        self.foreign = False  # it worked elsewhere than the module's exports (numpy's writes, the threads' pool)
        self.tables = []  # arrays of addresses it passed (native.table)
        self.calls = False  # it called the module's exports or the threads' pool
        self.split = False  # it called the threads' pool

    def addressed(self, at, array):
        self.addresses.add(at)

    def allocated(self, array, constant):
        self.allocations.append(array)
        if constant:
            self.constants.add(id(array))

    def tabled(self, pointers):
        self.tables.append(pointers)

    def zeroed(self, array):
        self.actions.append(("zero", array))

    def packed(self, b, packed, layout):
        self.actions.append(("pack", b, packed, layout))

    def called(self, export, args):
        self.actions.append(("call", export, args))
        self.calls = True

    def pooled(self, fn, args, host, of):
        """A call of the threads' pool (threads.Pool._do): its arguments are shared addresses and numbers, but for
        args[host] (an address in Pyodide's memory); `of`: the array it uploads, or None."""
        self.actions.append(("pool", fn, args, host, of))
        self.calls = self.split = True


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


class _Recorded:
    """An intermediate the recording saw, as the program's layout needs it: its shape, dtype and bytes, not its memory.
    Holding the arrays themselves kept every intermediate alive until the recording ended, so none of their memory
    served a later op as it does op by op: Pyodide's heap grew by all of them, each page written for the first time
    (centernet's warm-up: 52 -> 389 MB)."""

    __slots__ = ("dtype", "nbytes", "shape")

    def __init__(self, array):
        self.shape, self.dtype, self.nbytes = array.shape, array.dtype, array.nbytes


class _Step:
    __slots__ = ("actions", "attrs", "dims", "fn", "keys", "outputs", "split")

    def __init__(self, fn, keys, dims, attrs, outputs, actions, split):
        self.fn, self.keys, self.dims, self.attrs = fn, keys, dims, attrs
        self.outputs = outputs  # [(value key, owned array, the allocation it is (native steps))]
        # the native step's actions with _Pointer arguments (a call's 4th item: the _Pointer of the array it uploads
        # to the threads' pool, or None), or None: a kernel step
        self.actions = actions
        self.split = split  # it ran on the threads' pool when recorded


class KernelRecording(CaptureRecording):
    """What the wasm backend reports while a function is recorded (its recorder), and what becomes its program."""

    def __init__(self, name, backend, inputs):
        self.name, self.backend = name, backend
        self.n_inputs = len(inputs)
        self.keys = {id(h): ("in", i) for i, h in enumerate(inputs)}  # id(array) -> its value's key
        # a step's output is held as _Recorded: its array lives while the engine holds it (two tensors may share it), and
        # its id is its key's while it does
        self.alive = {}  # id(array) -> a weak reference to a step's output
        self.value_at = {_at(h) for h in inputs}  # addresses of its values' arrays (not bound ones)
        self.at = {("in", i): _at(h) for i, h in enumerate(inputs)}  # value key -> its array's address when recorded
        self.arrays = {("in", i): h for i, h in enumerate(inputs)}  # value key -> its array when recorded
        self.steps = []
        self.fresh = []  # (make_arrays, [value keys])
        self.moves = []  # (new value's key, the variable's own array)
        self.exports = _logging(native.exports)
        self.pool = threads.pool  # its ops' blocks of the shared memory are the program's (threads.Pool.record)
        if self.pool is not None:
            self.pool.record(lambda array: _at(array) in self.value_at)

    # ---- while the function runs ------------------------------------------------------------------------------

    def differentiating(self):
        """A training step: its activations stay in the pool for their gradients (threads.Pool.gradients)."""
        if self.pool is not None:
            self.pool.gradients = True

    def run(self, fn, inputs, attrs):
        """NumpyBackend.run, with the kernel's work logged as a step."""
        handles = [h for h, _, _ in inputs]
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
        keys = [self._key(h) for h in handles]
        starts = [_at(a) for a in log.allocations]
        outputs = []
        for k, (o, (handle, *_)) in enumerate(zip(raw, results)):
            key = ("slot", len(self.arrays) + k)
            self.keys[id(handle)], self.alive[id(handle)] = key, weakref.ref(handle)
            self.at[key] = at = _at(handle)
            self.value_at.add(at)
            outputs.append((key, handle, _allocation(log, starts, o)))
        of = _unheld(log, outputs)
        actions = self._native(log, starts, handles, keys, outputs, of)
        dims = [None if h.shape == d else d for h, d, _ in inputs]
        outputs = [(key, of(handle), of(allocation)) for key, handle, allocation in outputs]
        for key, recorded, _ in outputs:
            self.arrays[key] = recorded
        self.steps.append(_Step(fn, keys, dims, attrs, outputs, actions, log.split))
        return results, multi

    def _key(self, array):
        key = self.keys.get(id(array))
        if key is not None and key[0] == "slot" and self.alive[id(array)]() is not array:
            key = None  # a freed output's id, now another array's
        if key is None:  # read from outside the function: a weight, a constant, a variable
            key = ("bound", id(array))
            self.keys[id(array)], self.arrays[key], self.at[key] = key, array, _at(array)
        return key

    def _native(self, log, starts, handles, keys, outputs, of):
        """The step's actions with their pointers resolved, or None where it must stay a kernel step. The pointers
        into the step's own arrays point into their _Recorded (`of`, _unheld), the program's layout's: the step's log,
        and its arrays, are dropped when it returns."""
        if log.foreign or not log.calls:
            return None
        if any(allocation is None for _, _, allocation in outputs):
            return None
        sources = [
            (at, a.nbytes, ("const", a) if id(a) in log.constants else ("alloc", of(a)))
            for a, at in zip(log.allocations, starts)
        ]
        sources += [(self.at[key], h.nbytes, key) for h, key in zip(handles, keys)]
        sources += [(_at(a[2]), a[2].nbytes, ("packed", of(a[2]))) for a in log.actions if a[0] == "pack"]

        def pointer(at):
            for start, nbytes, source in sources:
                if start <= at < start + nbytes:
                    return _Pointer(source, at - start)
            return None

        # a table of addresses: the program's copy holds its own arrays' addresses (each entry resolved as a pointer)
        for table in log.tables:
            entries = [pointer(int(at)) for at in table]
            if any(entry is None for entry in entries):
                return None
            sources.insert(0, (_at(table), table.nbytes, ("table", table, entries)))

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
                actions.append(("call", action[1], args, None))
            elif action[0] == "pool":
                _, fn, args, host, of = action
                args = list(args)
                if host is not None:
                    args[host] = pointer(args[host])
                    if args[host] is None:
                        return None
                # the array uploaded, or True: a split call (not repeated only where it is a weight no replay writes)
                uploaded = pointer(_at(of)) if of is not None else True
                actions.append(("call", fn, args, uploaded or True))
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
                actions.append(("pack", source, of(packed), layout))
        return actions

    def made_per_replay(self, make_arrays, handles):
        keys = []
        for k, h in enumerate(handles):
            key = ("fresh", len(self.fresh), k)
            self.keys[id(h)], self.arrays[key], self.at[key] = key, h, _at(h)
            self.value_at.add(self.at[key])
            keys.append(key)
        self.fresh.append((make_arrays, keys))

    def freeing(self, handle):
        if self.pool is not None and self.pool is threads.pool:
            self.pool.freed(handle)  # its block in the pool's shared memory serves later split ops
        return False

    def ran_elsewhere(self, backend):
        raise CaptureError(
            f"capture({self.name}): a kernel ran on the {backend} backend (pe.on_backend) while the function was "
            "recorded on wasm; a replay runs only what ran on wasm. Run the function's ops on the active backend"
        )

    def reading_back(self):
        raise CaptureError(
            f"capture({self.name}): the function tried to read a tensor back (data, data_sync, numpy, item, tolist, "
            f"print) while being recorded; a replay cannot. Return the tensor and read it after the call. {_PURE}"
        )

    # ---- afterwards -------------------------------------------------------------------------------------------

    def drop(self):
        self.steps, self.arrays, self.keys, self.alive, self.at = [], {}, {}, {}, {}
        if self.pool is not None and self.pool is threads.pool:
            self.pool.let_go(*self.pool.hand_over())

    def keep_state(self, moves):
        for new, own_array in moves:
            _write(own_array, new, self.name)
            self.moves.append((self._key(new), own_array))

    def build(self, inputs, outputs):
        if any(step.split and step.actions is None for step in self.steps):
            # a split step that must stay a kernel step computes in the arena, not in the blocks the others read
            # its output from: every split step stays a kernel step then
            for step in self.steps:
                if step.split:
                    step.actions = None
        try:
            return KernelProgram(self, outputs)
        except BaseException:
            self.drop()  # the blocks its split steps took go back to the pool
            raise


def _unheld(log, outputs):
    """What stands for each of the step's arrays in its recording: a _Recorded for its allocations and outputs (but
    the constants the program keeps: shape parameters), the array itself for any other (a weight's panels are its
    own: kept). No closure here refers to itself: a cycle would keep the step's log, and its arrays, until Python's
    collector ran."""
    recorded = {}
    allocated = {id(a) for a in log.allocations} | {id(o) for _, o, _ in outputs}

    def of(array):
        if array is None or id(array) in log.constants or id(array) not in allocated:
            return array
        if id(array) not in recorded:
            recorded[id(array)] = _Recorded(array)
        return recorded[id(array)]

    return of


def _allocation(log, starts, array):
    """The allocation of the step that `array` (a kernel's output) is, whole, or None; `starts`: the allocations'
    addresses."""
    if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
        return None
    for a in log.allocations:
        if a is array:
            return a
    at = _at(array)
    for a, start in zip(log.allocations, starts):
        if start == at and a.nbytes == array.nbytes and a.dtype == array.dtype:
            return a
    return None


def _write(target, value, name):
    """write_in_place, which a variable assigned while recording needs."""
    if not write_in_place(target, value):
        raise CaptureError(
            f"capture({name}): a variable's array is a view of memory numpy may not write (made from bytes or a "
            "read-only buffer); assign it a computed value before capturing"
        )


def write_in_place(target, value):
    """Copy `value` into `target`, a variable's own array (read-only, as every tensor's), and drop what was kept of
    its old values (its packed panels, the threads' copies); False where numpy may not write `target`."""
    if target.shape != value.shape or target.dtype != value.dtype:
        value = value.reshape(target.shape)
    try:
        target.flags.writeable = True
    except ValueError:
        return False
    np.copyto(target, value)
    target.flags.writeable = False
    linalg.changed(target)
    threads.changed(target)
    return True


def run_kernel_step(step, values, backend):
    """A kernel step of a replay: its kernel function on its values, its outputs owned by `backend` and written where
    the program keeps them."""
    _, fn, keys, dims, attrs, outs, copies = step
    args = [values[i] if d is None else values[i].reshape(d) for i, d in zip(keys, dims)]
    out = fn(*args, **attrs) if attrs else fn(*args)
    for i, o in zip(outs, out if type(out) is tuple else (out,)):
        if any(o is a for a in args):  # an input returned as it is: it may be one of the program's arrays
            o = o.copy()
        values[i] = own(o, fn, backend)[0]
    for i, target in copies:
        np.copyto(target, values[i])


class KernelProgram:
    """A recording built for replays (a backend_protocols.ReplayProgram): its values, the arrays it owns, its steps."""

    keeps_copies = True  # a weight's panels packed once, the threads' kept block of it

    def __init__(self, recording, outputs):
        self.backend = backend = recording.backend
        self.name = name = recording.name
        self._released = False
        self.pool = pool = recording.pool  # the threads' pool it was recorded with: which kernels split
        steps, arrays = recording.steps, recording.arrays
        output_keys = [recording.keys.get(id(h)) for h, _, _ in outputs]
        for key, (handle, _, _) in zip(output_keys, outputs, strict=True):
            if key is None or key[0] == "bound":
                raise CaptureError(
                    f"capture({name}): the function returned a tensor it did not compute (shape {handle.shape}); "
                    "return computed tensors, or pass the value in as an input"
                )
        index = {key: i for i, key in enumerate(arrays)}  # each value's place in a replay's list of values
        state = {id(a) for _, a in recording.moves}
        produced, made_by = {}, {}  # a native step's output -> its allocation; a kernel step's output -> the step
        for i, step in enumerate(steps):
            for key, _, allocation in step.outputs:
                if step.actions is None:
                    made_by[key] = i
                else:
                    produced[key] = allocation
        # the values read in Pyodide's memory (by the caller, a kernel step, the module's calls, a copy into the
        # pool): a split step copies its output out only for them
        needed = set(output_keys) | {key for key, _ in recording.moves}
        for step in steps:
            needed.update(step.keys if step.actions is None else ())
            for action in step.actions or ():
                pointers = [a for a in action[2] if isinstance(a, _Pointer)] if action[0] == "call" else []
                pointers = [e for p in pointers for e in (p.source[2] if p.source[0] == "table" else (p,))]
                pointers += [action[1]] if action[0] == "pack" else []
                needed.update(p.source for p in pointers if p.source[0] not in ("alloc", "packed", "const"))
        # the outputs of split steps that only later split steps read: they live in the pool's blocks alone
        unread = {
            id(allocation)
            for step in steps
            if step.split and step.actions is not None
            for key, _, allocation in step.outputs
            if key not in needed
        }
        layout = _Layout()  # the arrays a replay writes, by the steps that use them
        homes = set()  # keys of the values a native step reads that a replay makes elsewhere (copied in)

        once = {
            id(action[2])
            for step in steps
            for action in step.actions or ()
            if action[0] == "pack" and _packed_once(action, arrays, state)
        }

        def read(source, i):
            if source[0] in ("const", "bound") or (source[0] == "packed" and id(source[1]) in once):
                return  # used as they are
            if source[0] in ("alloc", "packed"):
                layout.use(source[1], i)
            elif source in produced:
                layout.use(produced[source], i)
            elif source[0] in ("in", "fresh", "slot"):
                homes.add(source)
                layout.use(arrays[source], made_by.get(source, -1))
                layout.use(arrays[source], i)

        for i, step in enumerate(steps):
            if step.actions is None:
                for key in step.keys:
                    if key in produced:
                        layout.use(produced[key], i)
                continue
            for _, _, allocation in step.outputs:
                if id(allocation) not in unread:
                    layout.use(allocation, i)
            for action in step.actions:
                if pool is not None and _skipped_copy_out(action, pool, unread):
                    continue
                if action[0] == "call":
                    for arg in action[2]:
                        if isinstance(arg, _Pointer):
                            # a table is made when built: its entries are what the step reads
                            for pointer in arg.source[2] if arg.source[0] == "table" else (arg,):
                                read(pointer.source, i)
                elif action[0] == "zero":
                    layout.use(action[1], i)
                elif not _packed_once(action, arrays, state):
                    read(action[1].source, i)
                    layout.use(action[2], i)
        for key in output_keys + [key for key, _ in recording.moves]:
            if key in produced:
                layout.use(produced[key], len(steps))  # read after the steps
        placed, placed_at = layout.place()
        recorded_at = recording.at

        def address(pointer):
            source = pointer.source
            if source[0] in ("alloc", "packed", "const"):
                at = placed_at.get(id(source[1]))
                if at is None:  # a constant, a weight's panels: as they are
                    at = _at(source[1])
            elif source in produced:
                at = placed_at[id(produced[source])]
            else:  # a home, or a bound array as it is
                at = placed_at.get(id(arrays[source]))
                if at is None:
                    at = recorded_at[source]
            return at + pointer.offset

        self.values = [arrays[key] if key[0] == "bound" else None for key in arrays]
        for key, allocation in produced.items():
            if id(allocation) in placed:  # else a split step's output only later split steps read, in its block
                self.values[index[key]] = placed[id(allocation)].reshape(arrays[key].shape)
        self.held = []  # constants of the native steps (shape parameters, a weight's panels): they must outlive it
        # (True, [(callable, args)], None or a split step's kernel: (fn, value indexes, dims, attrs, its outputs' value
        # indexes and arrays (None: in the pool's block alone)))
        # or (False, fn, value indexes, dims, attrs, outputs, copies)
        self.steps = []
        self.native_steps = self.kernel_steps = 0
        self.split_steps = 0  # native steps that split a kernel over the threads' pool (of native_steps)
        for step in steps:
            if step.actions is None:
                self.kernel_steps += 1
                outs = [index[k] for k, _, _ in step.outputs]
                copies = [(index[k], placed[id(arrays[k])]) for k, _, _ in step.outputs if k in homes]
                self.steps.append((False, step.fn, [index[k] for k in step.keys], step.dims, step.attrs, outs, copies))
                continue
            self.native_steps += 1
            calls = []
            for action in step.actions:
                if pool is not None and action[0] == "call":  # (without a pool, no call is the pool's)
                    if _uploaded_once(action, arrays, state, pool):
                        continue  # done when recorded: the block holds it for the program
                    if _skipped_copy_out(action, pool, unread):
                        continue  # an output only later split steps read, in its block
                if action[0] == "call":
                    args = []
                    for arg in action[2]:
                        if isinstance(arg, _Pointer) and arg.source[0] == "const":
                            self.held.append(arg.source[1])
                        if isinstance(arg, _Pointer) and arg.source[0] == "table":  # the program's own table
                            table = np.array([address(entry) for entry in arg.source[2]], np.uint32)
                            self.held.append(table)  # its arrays' addresses, fixed for its life
                            arg = _at(table) + arg.offset
                        args.append(address(arg) if isinstance(arg, _Pointer) else arg)
                    # a call of the module, or of the threads' pool (Python: it counts and may raise PoolLost)
                    calls.append((action[1], tuple(args), action[3] is None))
                elif action[0] == "zero":
                    calls.append((placed[id(action[1])].fill, (0,), False))
                elif _packed_once(action, arrays, state):  # the weight's panels, packed when recorded
                    self.held.append(action[2])
                else:  # a value's panels: packed on every replay
                    _, b, packed, (k, n, sbk, sbj) = action
                    args = (address(b), k, n, sbk, sbj, _at(placed[id(packed)]))
                    calls.append((native.exports.pack_b, args, True))
            kernel = None
            if step.split:  # what a replay runs on one thread if the pool stops
                self.split_steps += 1
                outs = [(index[key], placed.get(id(allocation))) for key, _, allocation in step.outputs]
                kernel = (step.fn, [index[k] for k in step.keys], step.dims, step.attrs, outs)
            self.steps.append((True, calls, kernel))
        self.runs = _runs(self.steps)  # the steps as a replay runs them
        self.steps = [(True, [c[:2] for c in step[1]], step[2]) if step[0] else step for step in self.steps]
        # [address, bytes] of its blocks of the pool's shared memory, and the addresses of the weights' kept blocks
        # it holds (counted in the threads' kept bytes, not its own)
        self.blocks, self.holding = pool.hand_over() if pool is not None else ([], [])
        self.input_homes = [(i, placed[id(arrays[("in", i)])]) for i in range(recording.n_inputs) if ("in", i) in homes]
        # the inputs' arrays as recorded: a tensor of the same shape may hold an array of another (a reshape's view)
        self.input_shapes = [arrays[("in", i)].shape for i in range(recording.n_inputs)]
        self.fresh = [
            (make, [(index[key], placed[id(arrays[key])] if key in homes else None) for key in keys])
            for make, keys in recording.fresh
        ]  # fmt: skip
        # (value index, whether the program owns the array: copied out, the tensor's shape and dtype)
        self.outputs = [
            (index[key], key[0] != "slot" or key in produced, shape, dtype)
            for key, (_, shape, dtype) in zip(output_keys, outputs, strict=True)
        ]
        self.moves = [(index[key], array) for key, array in recording.moves]
        self.binds_ids = {id(a) for key, a in arrays.items() if key[0] == "bound"}
        self.buffers = layout.buffers  # what the placed arrays are views of
        self.nbytes = sum(b.nbytes for b in self.buffers) + sum(nbytes for _, nbytes in self.blocks)
        backend.programs.add(self)

    @property
    def released(self):
        """Released, or recorded with another pool of threads than the one running now (one started, stopped or
        resized since): the engine then records the function again, so the big kernels split over the new pool."""
        return self._released or threads.pool is not self.pool

    def binds(self, handle):
        return id(handle) in self.binds_ids

    def replay(self, inputs):
        values = list(self.values)
        for i, (h, shape) in enumerate(zip(inputs, self.input_shapes, strict=True)):
            values[i] = h if h.shape == shape else h.reshape(shape)
        homes = [(target, values[i]) for i, target in self.input_homes]
        for make, places in self.fresh:
            for (i, target), array in zip(places, make(), strict=True):
                array.flags.writeable = False
                values[i] = array
                if target is not None:
                    homes.append((target, array))
        for target, array in homes:
            np.copyto(target, array)
        try:
            self._steps(values, False)
        except threads.PoolLost:  # the pool stopped: the steps again, the split ones on one thread
            for target, array in homes:  # a home's buffer may have served a later value since
                np.copyto(target, array)
            self._steps(values, True)
        backend = self.backend
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

    def _steps(self, values, one_thread):
        """Run the steps; `one_thread`: the split steps' kernels on the calling thread (their outputs only in
        Pyodide's memory, none in the pool's). PoolLost if the pool stops."""
        backend = self.backend
        for step in self.runs:
            if step[0]:
                if one_thread and step[2] is not None:
                    _one_thread(step[2], values)
                    continue
                for call, args in step[1]:
                    call(*args)
                continue
            run_kernel_step(step, values, backend)

    def release(self):
        """Drop the program's arrays (numpy frees them when nothing else holds them)."""
        if self._released:
            return
        self._released = True
        self.backend.programs.discard(self)
        if self.pool is not None and self.pool is threads.pool:
            self.pool.let_go(self.blocks, self.holding)
        self.blocks, self.holding = [], []
        self.steps, self.runs, self.values, self.held, self.buffers, self.fresh = [], [], [], [], [], []
        self.moves = []
        self.input_homes, self.input_shapes, self.binds_ids = [], [], set()


def _one_thread(kernel, values):
    """A split step's kernel run on the calling thread (the pool stopped): its outputs into the program's arrays, or
    as they are where the program has none (only later split steps, on the calling thread now too, read them)."""
    fn, keys, dims, attrs, outs = kernel
    args = [values[i] if d is None else values[i].reshape(d) for i, d in zip(keys, dims)]
    out = fn(*args, **attrs) if attrs else fn(*args)
    for (i, target), o in zip(outs, out if type(out) is tuple else (out,), strict=True):
        if target is None:
            values[i] = o
        else:
            np.copyto(target, o.reshape(target.shape))


def _runs(steps, apart=False):
    """The steps (a native step's calls: (callable, args, whether it is the module's)) as a replay runs them: each run
    of consecutive native steps that split nothing made one step, and each run of consecutive calls into the module
    one call from Python (_run): a call from Python into the module costs about 1 us, one from JavaScript far less. A
    split step stays a step of its own (its kernel runs it if the pool stops), its pool's calls Python's. `apart`:
    every step its own (bench/harness.py's profiles time each)."""
    merged = []
    for step in steps:
        last = merged[-1] if merged else None
        if not apart and step[0] and step[2] is None and last is not None and last[0] and last[2] is None:
            merged[-1] = (True, last[1] + step[1], None)
        else:
            merged.append(step)
    return [(True, _batched(step[1]), step[2]) if step[0] else step for step in merged]


def _batched(calls):
    """[(callable, args)] of calls (callable, args, whether it is the module's), each run of the module's one call."""
    batched, run = [], []
    for fn, args, in_module in [*calls, (None, None, False)]:
        if in_module:
            run.append((fn, args))
            continue
        if len(run) == 1:
            batched.append(run[0])
        elif run:
            batched.append((_run(run), ()))
        run = []
        if fn is not None:
            batched.append((fn, args))
    return batched


def _run(calls):
    """One JavaScript function making the calls into the module in order, built of JavaScript's own functions (the
    page's Content-Security-Policy allows no eval): the calls as one array of [fn, undefined, args], made in one
    conversion, and Array.prototype.forEach over it applying Reflect.apply to each (a function bound per call took
    two crossings into JavaScript each: 2.5 ms of movenet-lightning's build in the page)."""
    import js
    from pyodide.ffi import to_js

    entries = to_js([[fn, None, list(args)] for fn, args in calls])  # None: undefined, the calls' `this`
    return js.Array.prototype.forEach.bind(entries, js.Function.prototype.apply.bind(js.Reflect.apply, None))


def _skipped_copy_out(action, pool, unread):
    """Whether an action copies a split step's output out of the pool where only later split steps read it."""
    split_out = action[0] == "call" and action[3] is True and action[1] == pool.copy_out
    return split_out and id(action[2][0].source[1]) in unread


def _uploaded_once(action, arrays, state, pool):
    """Whether a call of the threads' pool uploads a weight (a bound array no replay writes) or a constant (shape
    parameters) into a block the program keeps: done when recorded."""
    uploaded = action[3]
    if uploaded is True:  # no weight: a copy of shape parameters, which keep their block (threads.Pool.put)
        return action[1] == pool.copy_in and action[2][1].source[0] == "const"
    if not isinstance(uploaded, _Pointer):
        return False
    source = uploaded.source
    return source[0] == "bound" and id(arrays[source]) not in state


def _packed_once(action, arrays, state):
    """Whether a pack action is a weight's (a bound array no replay writes): its panels were packed when recorded."""
    source = action[1].source
    return source[0] == "bound" and id(arrays[source]) not in state


class _Layout:
    """Where the program's arrays go: each array a replay writes is used from one step to another (-1: before the
    first, len(steps): after the last); arrays whose uses do not overlap share memory, as a pool would hand out the
    buffers of intermediates freed on the way."""

    ALIGN = 64  # bytes: each array starts on a cache line (the GEMM's panels want it)

    def __init__(self):
        self.spans = {}  # id(recorded array) -> [array, first step, last step]
        self.buffers = []

    def use(self, array, step):
        span = self.spans.get(id(array))
        if span is None:
            self.spans[id(array)] = [array, step, step]
        else:
            span[1], span[2] = min(span[1], step), max(span[2], step)

    def place(self):
        """{id(recorded array): the program's array of its shape and dtype}, views of one buffer, and {id(recorded
        array): that array's address}. The arrays are placed in the order of their first use, each in the smallest
        free gap it fits (the gaps of arrays whose last use has passed, merged with their neighbours), else at the
        end (centernet's program: 21 MB where a buffer of its own per array, reused when free and large enough, made
        51 MB: fewer pages for the first replay to fault in)."""
        spans = sorted(self.spans.values(), key=lambda span: span[1])
        offsets, busy, gaps, end = [], [], [], 0  # busy: (last step, offset, size); gaps: [offset, size]
        for array, first, last in spans:
            for done in [b for b in busy if b[0] < first]:
                busy.remove(done)
                gaps = _freed(gaps, done[1], done[2])
            size = -(-array.nbytes // self.ALIGN) * self.ALIGN
            fits = [g for g in gaps if g[1] >= size]
            if fits:
                gap = min(fits, key=lambda g: g[1])
                at = gap[0]
                gap[0], gap[1] = at + size, gap[1] - size
            elif gaps and gaps[-1][0] + gaps[-1][1] == end:  # the last gap reaches the end: the array starts there
                at = gaps.pop()[0]
                end = at + size
            else:
                at, end = end, end + size
            gaps = [g for g in gaps if g[1]]
            busy.append((last, at, size))
            offsets.append(at)
        arena = native.aligned(end // 4).view(np.uint8)
        self.buffers.append(arena)
        base = _at(arena)
        views = {
            id(array): arena[at : at + array.nbytes].view(array.dtype).reshape(array.shape)
            for (array, _, _), at in zip(spans, offsets)
        }
        return views, {id(array): base + at for (array, _, _), at in zip(spans, offsets)}


def _freed(gaps, at, size):
    """The free gaps (by offset) with [at, at + size) added, merged with the gaps it touches."""
    gaps = sorted([*gaps, [at, size]])
    merged = [gaps[0]]
    for gap in gaps[1:]:
        if merged[-1][0] + merged[-1][1] == gap[0]:
            merged[-1][1] += gap[1]
        else:
            merged.append(gap)
    return merged
