"""Kernels written by users: a WGSL compute shader as a webgpu kernel (pe.Program), next to a numpy one.

    program = pe.Program("Scale", WGSL, inputs=["x"], uniforms={"n": "u32", "factor": "f32"}, dispatch=plan)
    pe.register_kernel("Scale", "webgpu", program)       # a Program is a webgpu kernel
    pe.register_kernel("Scale", "numpy", lambda x, factor: x * factor)
    pe.register_gradient("Scale", lambda dy, ins, outs, attrs: dy * attrs["factor"])
    y = pe.run_kernel("Scale", [x], {"factor": 2.0})

`plan(*inputs, **attrs)` sees each input's shape, dtype and size and returns a `Dispatch`: the
outputs (name -> (shape, dtype)), the number of workgroups and the uniform values. The program
appends to the WGSL source the declarations it then needs: a uniform struct `params` with the
declared fields, and one storage array per input (read-only) and per output (read-write), named
as given, of f32, i32 or u32 (bool). Declarations come after the source, so the line numbers a
compiler error names are the source's own. The entry point is `fn main`.

Pipelines are cached by the backend like the built-in kernels', under a key made of the kernel
name and a hash of the whole shader source; a shader that does not compile raises
KernelCompileError naming the kernel and quoting the compiler (on wgpu-py and in the page).
docs/custom_kernels.md walks through a complete example.
"""

import operator
import re
from dataclasses import dataclass, field

from ... import dtypes
from .shader_layout import Uniforms
from .wgsl import Shader, bindings

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class Dispatch:
    """What one run of a Program makes and how it is dispatched.

    outputs: {binding name: (shape, dtype)}, in the order the kernel returns them.
    workgroups: an int or 1 to 3 ints (x, y, z); a 0 in it dispatches nothing (empty outputs).
    uniforms: {field name: value} for every field the Program declares (vectors and arrays: sequences of
    numbers; an array may be given fewer, the rest is 0).
    """

    outputs: dict
    workgroups: object
    uniforms: dict = field(default_factory=dict)


def _check_name(program, name, what, taken):
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise ValueError(f"Program {program!r}: {what} name {name!r} is not a WGSL identifier")
    if name in taken:
        raise ValueError(f"Program {program!r}: the name {name!r} is used twice (inputs, outputs and `params`)")
    taken.add(name)


class Program:
    """A user's WGSL compute shader as a webgpu kernel: register it with pe.register_kernel(name, "webgpu", it).

    name: the kernel's name (in errors and the pipeline cache key).
    wgsl: the shader source with `@compute @workgroup_size(...) fn main(...)`, using the declarations below.
    inputs: the binding names of the input tensors, in the order pe.run_kernel passes them.
    uniforms: {field: type} of the struct `params` (u32, i32, f32, vec2/3/4<T>, array<vec4<T>, N>, or T[n]: an
    array read with params_<field>(k)).
    dispatch: plan(*inputs, **attrs) -> Dispatch, given each input's shape, dtype and size and the attrs.
    """

    def __init__(self, name, wgsl, *, inputs, dispatch, uniforms=None):
        if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
            raise ValueError(f"Program: the name must be an identifier (letters, digits, _), got {name!r}")
        if not isinstance(wgsl, str):
            raise TypeError(f"Program {name!r}: wgsl must be the shader source as a str, got {type(wgsl).__name__}")
        if not callable(dispatch):
            raise TypeError(f"Program {name!r}: dispatch must be a function (*inputs, **attrs) -> pe.Dispatch")
        self.name, self.wgsl, self.plan = name, wgsl, dispatch
        self.inputs = tuple(inputs)
        taken = {"params"}
        for n in self.inputs:
            _check_name(name, n, "input", taken)
        uniforms = dict(uniforms or {})
        for n in uniforms:
            _check_name(name, n, "uniform", set())
        self.uniforms = Uniforms(f"Program {name!r}", uniforms)
        self._uniform_types = uniforms
        self._shaders = {}  # (input dtypes, outputs' names and dtypes) -> Shader

    def __repr__(self):
        return f"Program({self.name!r}, inputs={list(self.inputs)}, uniforms={self._uniform_types})"

    def __call__(self, backend, *arrays, **attrs):
        """The webgpu kernel: plan, allocate the outputs, record one dispatch."""
        if len(arrays) != len(self.inputs):
            raise ValueError(
                f"kernel {self.name!r} takes {len(self.inputs)} inputs ({', '.join(self.inputs)}), got {len(arrays)}"
            )
        plan = self.plan(*arrays, **attrs)
        if not isinstance(plan, Dispatch):
            raise TypeError(f"Program {self.name!r}: dispatch must return a pe.Dispatch, got {type(plan).__name__}")
        outputs = self._outputs(plan.outputs)
        workgroups = self._workgroups(plan.workgroups)
        outs = [backend.empty(shape, dtype) for _, shape, dtype in outputs]
        shader = self.shader(tuple(a.dtype for a in arrays), tuple((n, d) for n, _, d in outputs))
        backend.dispatch(shader, [*arrays, *outs], plan.uniforms, workgroups)
        return tuple(outs) if len(outs) > 1 else outs[0]

    def shader(self, input_dtypes, outputs):
        """The Shader for these input dtypes and (output name, dtype) pairs, made once."""
        key = (input_dtypes, outputs)
        shader = self._shaders.get(key)
        if shader is None:
            import hashlib  # here, not at `import py_engine`: 10-15 ms of the page's boot

            source = self.wgsl.rstrip() + "\n" + self._declarations(input_dtypes, outputs)
            digest = hashlib.sha256(source.encode()).hexdigest()[:16]
            shader = Shader(f"{self.name}:{digest}", source, len(input_dtypes), len(outputs), self.uniforms)
            self._shaders[key] = shader
        return shader

    def _declarations(self, input_dtypes, outputs):
        return (
            f"// ---- declared by pe.Program({self.name!r}) ----\n"
            + self.uniforms.declare("Params", "params")
            + bindings(list(zip(self.inputs, input_dtypes)), list(outputs))
            + "\n"
        )

    def _outputs(self, outputs):
        if not isinstance(outputs, dict) or not outputs:
            raise TypeError(f"Program {self.name!r}: Dispatch.outputs must be a non-empty dict name -> (shape, dtype)")
        taken, out = {"params", *self.inputs}, []
        for name, spec in outputs.items():
            _check_name(self.name, name, "output", taken)
            try:
                shape, dtype = spec
                shape = tuple(operator.index(d) for d in shape)
            except (TypeError, ValueError):
                raise TypeError(
                    f"Program {self.name!r}: output {name!r} must be (shape, dtype), e.g. ((2, 3), 'float32'); "
                    f"got {spec!r}"
                ) from None
            if any(d < 0 for d in shape):
                raise ValueError(f"Program {self.name!r}: output {name!r} has a negative dimension in {shape}")
            out.append((name, shape, dtypes.normalize(dtype, f"Program {self.name!r}")))
        return out

    def _workgroups(self, workgroups):
        try:
            groups = tuple(map(operator.index, workgroups if isinstance(workgroups, (tuple, list)) else [workgroups]))
        except TypeError:
            groups = ()
        if not 1 <= len(groups) <= 3 or min(groups) < 0:
            raise ValueError(
                f"Program {self.name!r}: Dispatch.workgroups must be an int >= 0 or 1 to 3 of them, got {workgroups!r}"
            )
        return groups + (1,) * (3 - len(groups))


__all__ = ["Dispatch", "Program"]
