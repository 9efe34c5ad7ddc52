"""WGSL building blocks shared by every kernel: dtypes on the GPU, math helpers, bindings, thread indexing."""

import re

F32, I32, BOOL = "float32", "int32", "bool"
ELEMENT = {F32: "f32", I32: "i32", BOOL: "u32"}  # bool lives on the GPU as u32: storage has no 1-byte type
ITEMSIZE_ON_GPU = 4
MAX_RANK = 8
WORKGROUP = 64
MAX_GROUPS = 65535

BASICS = """
// NaN and infinities from bit patterns: through a parameter, because Chrome's compiler (Tint)
// rejects `bitcast<f32>(0x7fc00000u)` as a constant expression whose value is not a finite f32.
fn f32_from_bits(bits: u32) -> f32 { return bitcast<f32>(bits); }
// exp and log with numpy's NaN, infinity and domain results: SwiftShader's builtins give
// exp(NaN) = inf and log(0) = -88.
fn bits_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn exp_safe(x: f32) -> f32 { return select(exp(x), x, bits_nan(x)); }
fn log_safe(x: f32) -> f32 {
  if (bits_nan(x) || x < 0.0) { return f32_from_bits(0x7fc00000u); }
  if (x == 0.0) { return f32_from_bits(0xff800000u); }
  return log(x);
}
"""


class Shader:
    """A compute shader and the shape of its bindings; `key` names it in the pipeline cache; `uniforms`
    (program.Uniforms) packs its uniform values. `source` is its WGSL, or a function making it: made on first use,
    since a pipeline the device has already (the page compiles the classifier's while it boots) never needs it."""

    __slots__ = ("_source", "key", "n_in", "n_out", "uniforms")

    def __init__(self, key, source, n_in, n_out, uniforms):
        self.key, self._source, self.n_in, self.n_out, self.uniforms = key, source, n_in, n_out, uniforms

    @property
    def source(self):
        if callable(self._source):
            self._source = self._source()
        return self._source


def bindings(inputs, outputs):
    """`var` declarations: inputs [(name, dtype)] read-only at 1.., then outputs read-write."""
    lines = []
    for i, (name, dtype) in enumerate(inputs):
        lines.append(f"@group(0) @binding({i + 1}) var<storage, read> {name}: array<{ELEMENT[dtype]}>;")
    for j, (name, dtype) in enumerate(outputs):
        lines.append(
            f"@group(0) @binding({len(inputs) + j + 1}) var<storage, read_write> {name}: array<{ELEMENT[dtype]}>;"
        )
    return "\n".join(lines)


def linear_main(body, workgroup=WORKGROUP):
    """An entry point giving each thread one flat index `i` (grids wider than 65535 groups wrap into y)."""
    return f"""
@compute @workgroup_size({workgroup})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {{
  let i = gid.x + gid.y * nw.x * {workgroup}u;
{body}
}}"""


_FN = re.compile(r"^fn (\w+)\(", re.M)
_BRACE = re.compile(r"//[^\n]*|[{}]")  # a comment's braces are not counted
_CALL = re.compile(r"\b(\w+)\s*\(")


def _comments_above(source, line):
    """Where the run of comment lines right above the line starting at `line` starts (`line` if none)."""
    while line > 0:
        above = source.rfind("\n", 0, line - 1) + 1
        if not source[above:line].lstrip().startswith("//"):
            break
        line = above
    return line


def drop_unused_functions(source, entry="main"):
    """`source` without the top-level functions that `entry` never calls, directly or through others, nor the
    comment lines right above them. Every kernel carries the shared helpers (numpy's pow and divmod, NaN-safe exp
    and log...); parsing and checking the ones it never calls cost SwiftShader's compile 2.5-3 ms a shader, a
    quarter to a third of an elementwise one's (Tint drops them only after). Source without `entry` is returned
    as it is."""
    blocks, depth = [], 0  # (start, end) of each top-level { ... }
    for brace in _BRACE.finditer(source):
        if brace.group()[0] == "/":
            continue
        if brace.group() == "{":
            depth += 1
            if depth == 1:
                start = brace.start()
        else:
            depth -= 1
            if depth == 0:
                blocks.append((start, brace.end()))
    functions, b = {}, 0  # name -> (start of its `fn`, end of its body)
    for m in _FN.finditer(source):
        while b < len(blocks) and blocks[b][0] < m.end():
            b += 1
        if b == len(blocks):
            break
        functions[m.group(1)] = (m.start(), blocks[b][1])
    if entry not in functions:
        return source
    used, todo = set(), [entry]
    while todo:
        name = todo.pop()
        if name in functions and name not in used:
            used.add(name)
            todo += _CALL.findall(source, functions[name][0] + 3, functions[name][1])
    if len(used) == len(functions):
        return source
    kept, at = [], 0
    for name, (start, end) in sorted(functions.items(), key=lambda item: item[1]):
        if name not in used:
            start = _comments_above(source, start)
            kept.append(source[at:start])
            at = end + (source[end : end + 1] == "\n")
    kept.append(source[at:])
    return "".join(kept)


def linear_groups(n, workgroup=WORKGROUP):
    """Workgroups for n threads; none for n = 0 (the backend then records nothing)."""
    groups = -(-n // workgroup)
    if groups <= MAX_GROUPS:
        return (groups, 1, 1)
    return (MAX_GROUPS, -(-groups // MAX_GROUPS), 1)


def strides(shape):
    out, acc = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        out[d] = acc
        acc *= shape[d]
    return out


def broadcast_strides(shape, out_shape):
    """Strides of `shape` laid against `out_shape` (NumPy broadcasting): 0 where a dimension repeats."""
    lead = len(out_shape) - len(shape)
    own = strides(shape)
    return [0] * lead + [0 if shape[d] == 1 and out_shape[d + lead] != 1 else own[d] for d in range(len(shape))]
