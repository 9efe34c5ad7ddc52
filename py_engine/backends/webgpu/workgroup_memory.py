"""How many bytes of workgroup memory a WGSL shader declares, counted as a browser counts them.

wgpu-py (wgpu-native) does not check maxComputeWorkgroupStorageSize when it creates a pipeline, so a shader with
32 KiB of `var<workgroup>` runs in CPython and is refused by every browser (16 KiB by default). The CPython device
checks it with this count before compiling. As Dawn does, each variable counts its WGSL size rounded up to 16 bytes.
A size it cannot work out (an `override` constant, a type it does not know) gives None: nothing is checked then.
"""

import ast
import operator
import re

_VARIABLE = re.compile(r"\bvar\s*<\s*workgroup\s*>\s*[A-Za-z_]\w*\s*:\s*(?P<type>[^;]+);")
_CONST = re.compile(r"\bconst\s+(?P<name>[A-Za-z_]\w*)\s*(?::\s*[A-Za-z_]\w*\s*)?=\s*(?P<value>[^;]+);")
_STRUCT = re.compile(r"\bstruct\s+(?P<name>[A-Za-z_]\w*)\s*\{(?P<body>[^}]*)\}")
_SCALARS = {"f32": 4, "i32": 4, "u32": 4, "bool": 4, "f16": 2}
_SHORT_VECTORS = {"f": "f32", "i": "i32", "u": "u32", "h": "f16"}  # vec4f is vec4<f32>
_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}


class _Unknown(Exception):
    """A size this module cannot work out."""


def workgroup_bytes(source):
    """The workgroup memory `source` declares, in bytes as a browser counts it, or None when a size is unknown."""
    source = re.sub(r"//[^\n]*", "", source)
    consts = {m["name"]: m["value"] for m in _CONST.finditer(source)}
    structs = {m["name"]: m["body"] for m in _STRUCT.finditer(source)}
    try:
        sizes = [_layout(m["type"].strip(), consts, structs)[0] for m in _VARIABLE.finditer(source)]
    except _Unknown:
        return None
    return sum(-(-size // 16) * 16 for size in sizes)


def _layout(wgsl_type, consts, structs):
    """(size, alignment) of a WGSL type, by the WGSL spec's memory layout rules."""
    if wgsl_type in _SCALARS:
        return _SCALARS[wgsl_type], _SCALARS[wgsl_type]
    outer, args = _split(wgsl_type)
    if outer == "atomic":
        return 4, 4
    vector = re.fullmatch(r"vec([234])([fihu]?)", outer)
    if vector:
        element = _SHORT_VECTORS.get(vector[2]) or (args[0] if args else None)
        if element not in _SCALARS:
            raise _Unknown(wgsl_type)
        n, size = int(vector[1]), _SCALARS[element]
        return n * size, (4 if n == 3 else n) * size
    matrix = re.fullmatch(r"mat([234])x([234])([fh]?)", outer)
    if matrix:
        column_size, column_align = _layout(f"vec{matrix[2]}{matrix[3]}" + (f"<{args[0]}>" if args else ""), {}, {})
        return int(matrix[1]) * -(-column_size // column_align) * column_align, column_align
    if outer == "array" and len(args) == 2:
        size, align = _layout(args[0], consts, structs)
        return _count(args[1], consts) * -(-size // align) * align, align
    if outer in structs and not args:
        return _struct_layout(structs[outer], consts, structs)
    raise _Unknown(wgsl_type)


def _struct_layout(body, consts, structs):
    offset, align = 0, 1
    for member in filter(None, (m.strip() for m in _top_level_commas(body))):
        if "@size" in member or "@align" in member or ":" not in member:
            raise _Unknown(member)
        size, member_align = _layout(member.split(":", 1)[1].strip(), consts, structs)
        offset = -(-offset // member_align) * member_align + size
        align = max(align, member_align)
    return -(-offset // align) * align, align


def _split(wgsl_type):
    """'array<vec4<f32>, 8>' -> ('array', ['vec4<f32>', '8'])."""
    if "<" not in wgsl_type:
        return wgsl_type, []
    outer, _, rest = wgsl_type.partition("<")
    if not rest.endswith(">"):
        raise _Unknown(wgsl_type)
    return outer.strip(), [a.strip() for a in _top_level_commas(rest[:-1]) if a.strip()]


def _top_level_commas(text):
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += {"<": 1, "(": 1, ">": -1, ")": -1}.get(c, 0)
        if c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]


def _count(expression, consts, depth=0):
    """An array's element count: integer literals, `const` names and + - * / of them."""
    if depth > 8:
        raise _Unknown(expression)
    text = re.sub(r"\b(\d+)[iu]\b", r"\1", expression).replace("/", "//")
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        raise _Unknown(expression) from None

    def value(node):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name) and node.id in consts:
            return _count(consts[node.id], consts, depth + 1)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.left), value(node.right))
        raise _Unknown(expression)

    return value(tree)
