"""A kernel's shader laid out: uniforms declared by name and type, bindings by name and dtype, composed into a Shader.

    shader = compose_shader("Scale:f32", "  out[i] = x[i] * u.factor;",
                            inputs=[("x", "float32")], outputs=[("out", "float32")],
                            uniforms={"count": "u32", "factor": "f32", "shape": "u32[8]"})
    backend.dispatch(shader, [x, out], {"count": n, "factor": 2.0, "shape": x.shape}, groups)

The uniforms become a WGSL struct `u` in the dispatch's 256-byte block (binding 0, WGSL's uniform-buffer
layout): a scalar field reads as `u.count`, an array "T[n]" as `u_shape(k)` (arrays of vec4 underneath, as
uniform arrays need a 16-byte stride). `Uniforms.pack_into` writes a dict of values into the block; a field
missing or not declared, or a value that does not fit its type, is an error naming the shader and the field.
Bindings follow device.py's convention: 0 the uniforms, 1.. the inputs, then the outputs.
"""

import operator
import re
import struct
from dataclasses import dataclass

from .device import UNIFORM_BLOCK
from .wgsl import BASICS, Shader, bindings, drop_unused_functions, linear_main

# a scalar, an array of n scalars ("u32[8]"), or (pe.Program's forms) vecN<T> and array<vec4<T>, N>
_TYPE = re.compile(
    r"(?P<scalar>u32|i32|f32)(\[(?P<count>\d+)\])?|vec(?P<n>[234])<(?P<vec>u32|i32|f32)>"
    r"|array<vec4<(?P<arr>u32|i32|f32)>,(?P<len>\d+)>"
)
_CODE = {"u32": "I", "i32": "i", "f32": "f"}
_RANGE = {"u32": (0, 2**32), "i32": (-(2**31), 2**31)}
WORDS = UNIFORM_BLOCK // 4


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # "u32", "i32" or "f32"
    wgsl: str  # its type in the struct
    offset: int  # in 32-bit words
    count: int  # values it holds; 0 for a scalar
    fill: bool  # fewer values may be given (the rest are 0): arrays
    accessor: bool  # "T[n]": read through u_<name>(k)


def _field(owner, name, wgsl_type, offset):
    form = _TYPE.fullmatch(str(wgsl_type).replace(" ", ""))
    if form is None:
        raise ValueError(
            f"{owner}: uniform {name!r} has type {wgsl_type!r}; use u32, i32, f32, T[n], vec2/3/4<T> or "
            "array<vec4<T>, N> with T one of u32, i32, f32"
        )
    if form["scalar"] and form["count"] is None:
        kind, wgsl, count, align, fill, accessor = form["scalar"], form["scalar"], 0, 1, False, False
    elif form["scalar"]:
        kind, count = form["scalar"], int(form["count"])
        wgsl, align, fill, accessor = f"array<vec4<{kind}>, {-(-count // 4)}>", 4, True, True
    elif form["vec"]:
        kind, count = form["vec"], int(form["n"])
        wgsl, align, fill, accessor = f"vec{count}<{kind}>", 2 if count == 2 else 4, False, False
    else:
        kind, count = form["arr"], 4 * int(form["len"])
        wgsl, align, fill, accessor = f"array<vec4<{kind}>, {form['len']}>", 4, True, False
    offset = -(-offset // align) * align
    return Field(name, kind, wgsl, offset, count, fill, accessor), align


class Uniforms:
    """A uniform block laid out from {name: type}; `owner` names it in errors (a shader key, "Program 'X'")."""

    def __init__(self, owner, fields):
        self.owner, self.fields = owner, []
        offset, struct_align, fmt = 0, 1, "<"
        for name, wgsl_type in fields.items():
            f, align = _field(owner, name, wgsl_type, offset)
            fmt += "4x" * (f.offset - offset) + _CODE[f.kind] * max(f.count, 1)
            offset = f.offset + max(f.count, 1)
            if f.accessor:  # the array's last vec4 is whole
                fmt += "4x" * (-f.count % 4)
                offset += -f.count % 4
            self.fields.append(f)
            struct_align = max(struct_align, align)
        self.words = -(-offset // struct_align) * struct_align
        if self.words > WORDS:
            raise ValueError(
                f"{owner}: the uniforms take {self.words * 4} bytes laid out as WGSL requires; a dispatch has "
                f"{WORDS * 4}. Pass large data as an input tensor instead"
            )
        self.names = frozenset(f.name for f in self.fields)
        self._struct = struct.Struct(fmt + "4x" * (self.words - offset))

    def declare(self, struct_name="Uniforms", var="u"):
        """WGSL: the struct, its binding, and u_<name>(k) for each "T[n]" field."""
        if not self.fields:
            return ""
        members = ", ".join(f"{f.name}: {f.wgsl}" for f in self.fields)
        lines = [f"struct {struct_name} {{ {members} }}", f"@group(0) @binding(0) var<uniform> {var}: {struct_name};"]
        lines += [
            f"fn {var}_{f.name}(k: u32) -> {f.kind} {{ return {var}.{f.name}[k >> 2u][k & 3u]; }}"
            for f in self.fields
            if f.accessor
        ]
        return "\n".join(lines) + "\n"

    def pack_into(self, buffer, offset, values):
        """Write `values` ({field: value}) into buffer at offset; returns the bytes written."""
        if not isinstance(values, dict) or values.keys() != self.names:
            raise self._mismatch(values)
        flat = []
        for f in self.fields:
            value = values[f.name]
            if not f.count:
                flat.append(value)
                continue
            try:
                items = list(value)
            except TypeError:
                raise TypeError(f"{self.owner}: uniform {f.name!r} holds {f.count} values, got {value!r}") from None
            if len(items) > f.count or (len(items) < f.count and not f.fill):
                raise ValueError(
                    f"{self.owner}: uniform {f.name!r} holds {f.count} values, got {len(items)}: {value!r}"
                )
            flat += items
            flat += [0] * (f.count - len(items))
        try:
            self._struct.pack_into(buffer, offset, *flat)
        except struct.error:
            for f in self.fields:  # find the value that does not fit, for the error
                for item in [values[f.name]] if not f.count else values[f.name]:
                    self._check(f, item)
            raise ValueError(f"{self.owner}: uniforms {values} do not fit their 32-bit types") from None
        return self._struct.size

    def _mismatch(self, values):
        if not isinstance(values, dict):
            return TypeError(f"{self.owner}: uniforms must be a dict {{field: value}}, got {type(values).__name__}")
        missing, extra = sorted(self.names - values.keys()), sorted(values.keys() - self.names)
        what = "; ".join(
            [f"missing uniform {n!r}" for n in missing] + [f"uniform {n!r} is not declared" for n in extra]
        )
        return ValueError(f"{self.owner}: {what} (declared: {', '.join(f.name for f in self.fields) or 'none'})")

    def _check(self, f, value):
        try:
            struct.pack(_CODE[f.kind], value)
            return
        except struct.error:
            pass
        if f.kind == "f32":
            raise TypeError(f"{self.owner}: uniform {f.name!r} is f32, got {value!r}")
        try:
            v = operator.index(value)
        except TypeError:
            raise TypeError(f"{self.owner}: uniform {f.name!r} is {f.kind}, got {value!r} (an integer)") from None
        low, high = _RANGE[f.kind]
        raise ValueError(f"{self.owner}: uniform {f.name!r} = {v} is out of the {f.kind} range [{low}, {high - 1}]")


@dataclass(frozen=True)
class Epilogue:
    """A store hook for the templates that take one (the GEMM, the depthwise convolution): WGSL defining
    `fn epilogue_start(channel: u32) -> f32`, the value an output channel's sum starts from (a bias), and
    `fn epilogue(v: f32) -> f32`, applied to each finished sum as it is stored (an activation). A template calls
    epilogue_start once per channel it computes, not once per output (on CPU adapters every storage load is a
    per-lane gather). `inputs`: the bindings it reads ((name, dtype), ...), bound after the template's inputs;
    `uniforms`: the uniforms it reads ((name, type), ...), declared after the template's, whose values each
    dispatch passes with the template's (so a choice made by a uniform, such as the activation, costs no pipeline
    of its own); `name` goes into the shader key."""

    name: str
    wgsl: str
    inputs: tuple = ()
    uniforms: tuple = ()


def compose_shader(key, code, inputs=(), outputs=(), uniforms=None, helpers=""):
    """A Shader named `key`: wgsl.BASICS, the uniforms ({name: type}), the bindings ([(name, dtype)], inputs
    read-only at 1.., outputs read-write after them), `helpers` (WGSL functions), then `code`; the functions of
    BASICS and `helpers` that its `fn main` never calls are left out. The source is put together when first asked for
    (Shader.source): in the page 0.3 ms for an elementwise shader, 1.3 ms for the 14x16 GEMM, which a pipeline
    compiled ahead never needs."""
    layout = Uniforms(key, uniforms or {})

    def source():
        return drop_unused_functions(BASICS + layout.declare() + bindings(inputs, outputs) + "\n" + helpers + code)

    return Shader(key, source, len(inputs), len(outputs), layout)


def compose_linear_shader(key, body, inputs=(), outputs=(), uniforms=None, helpers=""):
    """compose_shader() whose entry point gives each thread one flat index `i` (wgsl.linear_main) running `body`;
    it returns early past `u.count`, which is therefore a declared uniform."""
    uniforms = {"count": "u32", **(uniforms or {})}
    code = linear_main("  if (i >= u.count) { return; }\n" + body)
    return compose_shader(key, code, inputs, outputs, uniforms, helpers)


__all__ = ["Epilogue", "Field", "Uniforms", "compose_linear_shader", "compose_shader"]
