"""Dispatch plans: the engine's own webgpu kernels, replayed without running their Python again.

A built-in kernel is a function of its inputs' shapes and dtypes and of its attributes: given the same, it takes
the same buffers, records the same dispatches with the same uniforms and frees the same temporaries. So the
backend logs a kernel's first run for a signature (a `PlanLog`, the backend's recorder while the kernel runs), and
later runs replay the log: take the buffers, copy each dispatch's packed uniforms into the ring, record the
dispatch, free the temporaries. The shape arithmetic, the shader lookup, the uniform packing and the validation
(the logged run validated the same dispatches) are skipped: that Python is most of what an op costs on this
backend. A plan's first replay writes it out as a Python function, so later ones run no loop over its events.

Not logged: users' kernels (a pe.Program's plan or a Python kernel may read state the signature does not show),
runs while another recorder is set (warm-up collecting shaders, pe.capture recording), runs that upload or read
back, and inputs that share a buffer (a log keeps buffer ids, so it could not tell them apart).
"""

from ...backend_protocols import Recorder
from .device import UNIFORM_BLOCK
from .gpu_array import GpuArray
from .wgsl import ITEMSIZE_ON_GPU

TAKE, DISPATCH, FREE, SPOIL = range(4)  # log events: (TAKE, id, count, shape, dtype), (DISPATCH, shader, ids,
# uniform bytes, workgroups), (FREE, id), (SPOIL,): the run did something a replay would not repeat
MAX_PLANS = 4096  # signatures kept per backend; past it the cache starts again (`x * lr` with a new lr each step
# logs a plan per value)
_FACTORIES = {}  # a plan's structure -> the compiled factory of its replay function (DispatchPlan._compiled)


def signature(fn, inputs, attrs):
    """The dict key of a kernel call on these inputs ((handle, shape, dtype) each): the kernel, its inputs' shapes and
    dtypes (and host scalars' values), its attributes."""
    key = [fn]
    for handle, shape, dtype in inputs:
        key += (shape, dtype)
        value = handle.value
        if value is not None:  # a HostScalar: its number is packed into the uniforms
            key.append(_frozen(value))
    if attrs:
        for name, value in attrs.items():
            key += (name, _frozen(value))
    return tuple(key)


def _frozen(value):
    """An attribute or a host scalar's value as part of a key. Lists become tuples, and numbers keep their type and sign: 1, 1.0 and True
    are equal in Python, and so are 0.0 and -0.0, but a kernel packs them differently."""
    kind = type(value)
    if kind is list or kind is tuple:
        return tuple(map(_frozen, value))
    if kind is float:
        return kind, repr(value)
    return kind, value


class PlanLog(Recorder):
    """The events of one kernel's run, as the backend reports them (backend_protocols.Recorder): what DispatchPlan.from_log
    reads. An upload or a readback spoils the log: a replay would not repeat it."""

    def __init__(self):
        self.events = []

    def took(self, bid, count, shape, dtype):
        self.events.append((TAKE, bid, count, shape, dtype))

    def uploading(self):
        self.events.append((SPOIL,))

    def freeing(self, bid):
        self.events.append((FREE, bid))
        return False

    def dispatched(self, shader, buffer_ids, uniform_bytes, workgroups):
        self.events.append((DISPATCH, shader, buffer_ids, uniform_bytes, workgroups))

    def reading_back(self):
        self.events.append((SPOIL,))


class DispatchPlan:
    """A logged run with its buffers as slots: the inputs first, then what the kernel took, in order."""

    __slots__ = (
        "buffered_scalars",
        "events",
        "multi",
        "n_inputs",
        "outputs",
        "replay",
        "take_bytes",
        "variants",
    )

    def __init__(self, events, n_inputs, outputs, multi, variants, buffered_scalars):
        self.events, self.n_inputs, self.outputs = events, n_inputs, outputs
        self.multi, self.variants, self.buffered_scalars = multi, variants, buffered_scalars
        self.replay = self._first_replay  # replay(backend, inputs): do what the logged run did, on these inputs;
        # returns the outputs as backend.run does. The first replay writes the plan out as a function (_compiled).
        self.take_bytes = sum(e[2] for e in events if e[0] == TAKE) * ITEMSIZE_ON_GPU  # what a replay may hold at once

    @classmethod
    def from_log(cls, log, args, out, variants):
        """The plan of a logged run (`out`: what the kernel returned), or None when it cannot be replayed."""
        slot_of = {a.buffer: k for k, a in enumerate(args)}
        n_inputs = n = len(args)
        events = []
        for event in log:
            kind = event[0]
            if kind == TAKE:
                slot_of[event[1]] = n
                events.append((TAKE, n, *event[2:]))
                n += 1
            elif kind == DISPATCH:
                bound = [slot_of.get(bid) for bid in event[2]]
                if None in bound:  # a buffer neither passed in nor taken by the kernel
                    return None
                events.append((DISPATCH, event[1], bound, event[3], event[4]))
            elif kind == FREE and slot_of.get(event[1], -1) >= n_inputs:
                events.append((FREE, slot_of.pop(event[1])))
            else:  # it uploaded, read back, or freed something not its own
                return None
        multi = type(out) is tuple
        outputs = []
        for o in out if multi else (out,):
            slot = slot_of.get(o.buffer, -1)
            if slot < n_inputs:  # an input handed back as an output would be freed twice
                return None
            outputs.append((slot, o.shape, o.dtype, o.size, o.size * ITEMSIZE_ON_GPU))
        bound = {k for event in events if event[0] == DISPATCH for k in event[2]}
        buffered_scalars = tuple(k for k, a in enumerate(args) if a.value is not None and k in bound)
        return cls(events, n_inputs, outputs, multi, variants, buffered_scalars)

    def _first_replay(self, backend, inputs):
        self.replay = self._compiled(backend.pool)
        return self.replay(backend, inputs)

    def _compiled(self, pool):
        """The plan as a Python function, one line per event: a replay then runs no loop over events and builds no
        list of slots, which was half of what it cost. Made on the first replay, so that a plan never replayed (`x *
        lr` with a new lr each step) costs nothing. The function is made by a factory that takes the plan's values
        (sizes, shaders, uniform bytes, shapes) as arguments, so plans of one structure (every elementwise binary op
        on plain tensors...) share one compiled factory: a new plan costs a closure, not a compile (~1 ms in the page).

        The logged run passed the device's limits with these sizes, and the caller checked the memory budget for
        `take_bytes`, so a take goes straight to the pool."""
        structure, values = [self.n_inputs], []
        for event in self.events:  # the values in the order _factory names them
            kind = event[0]
            if kind == TAKE:
                _, slot, count, shape, dtype = event
                nbytes = count * ITEMSIZE_ON_GPU
                structure.append((TAKE, slot))
                values += (pool.class_of(nbytes), nbytes, shape, dtype)
            elif kind == DISPATCH:
                _, shader, bound, uniforms, workgroups = event
                structure.append((DISPATCH, tuple(bound)))
                values += (shader.key, shader, shader.n_in, shader.n_out, len(uniforms), uniforms, workgroups)
            else:
                structure.append(event)
        if self.variants:
            structure.append("variants")
            values.append(self.variants)
        for slot, shape, dtype, size, nbytes in self.outputs:
            structure.append(slot)
            values += (shape, dtype, size, nbytes)
        structure = tuple(structure)
        factory = _FACTORIES.get(structure)
        if factory is None:
            if len(_FACTORIES) >= MAX_PLANS:
                _FACTORIES.clear()
            factory = _FACTORIES[structure] = _factory(structure, len(values))
        return factory(*values)


def _factory(structure, n_values):
    """Compile the factory of a plan structure (DispatchPlan._compiled): factory(*values) -> replay(backend, inputs)."""
    names = iter(f"c{k}" for k in range(n_values))
    n_inputs, *steps = structure
    lines = [f"        s{k} = inputs[{k}][0].buffer" for k in range(n_inputs)]
    outputs = []
    for step in steps:
        if step == "variants":
            lines.append(f"        backend.variants.update({next(names)})")
        elif type(step) is int:
            shape, dtype, size, nbytes = (next(names) for _ in range(4))
            outputs.append(f"(GpuArray(s{step}, {shape}, {dtype}, {size}), {nbytes}, {shape}, {dtype})")
        elif step[0] == TAKE:
            slot = step[1]
            size_class, nbytes, shape, dtype = (next(names) for _ in range(4))
            lines += [
                "        try:",
                f"            s{slot}, made = pool.acquire_class({size_class})",
                "        except MemoryError:",
                f"            s{slot}, made = backend.acquire_once_more({nbytes}, {shape}, {dtype})",
                f"        taken[s{slot}] = (made, {nbytes})",
            ]
        elif step[0] == DISPATCH:  # what backend.dispatch does after its checks, with the uniforms packed already
            key, shader, n_in, n_out, length, uniforms, workgroups = (next(names) for _ in range(7))
            lines += [
                f"        if not device.has_pipeline({key}):  # a shader the browser rejected is forgotten",
                f"            device.compile({key}, {shader}.source, {n_in}, {n_out})",
                "        recorded = backend.unsubmitted",
                "        offset = recorded * BLOCK",
                f"        backend.uniform_ring[offset : offset + {length}] = {uniforms}",
                f"        device.dispatch({key}, ({''.join(f's{k}, ' for k in step[1])}), offset, {workgroups})",
                "        backend.unsubmitted = recorded + 1",
                "        if recorded + 1 >= backend.batch_size:",
                "            backend.flush()",
            ]
        else:
            lines.append(f"        backend.free_buffer(s{step[1]})")
    source = "\n".join(
        [
            f"def factory({', '.join(f'c{k}' for k in range(n_values))}):",
            "    def replay(backend, inputs):",
            "        pool, taken, device = backend.pool, backend.taken, backend.device",
            *lines,
            f"        return [{', '.join(outputs)}]",
            "    return replay",
        ]
    )
    namespace = {"GpuArray": GpuArray, "BLOCK": UNIFORM_BLOCK}
    exec(source, namespace)  # the source holds names and slot numbers only
    return namespace["factory"]


__all__ = ["DispatchPlan", "PlanLog", "signature"]
