"""Every backend has one layout (backends/<name>/backend.py holds its class and whatever starts it, kernels/ its kernels
by family, __init__.py only re-exports them), and a backend reuses another's kernels only through their public names."""

import ast
from pathlib import Path

import pytest

BACKENDS = Path(__file__).resolve().parent.parent / "py_engine" / "backends"
NAMES = sorted(p.name for p in BACKENDS.iterdir() if (p / "__init__.py").is_file())


def test_the_backends_are_found():
    assert NAMES == ["numpy", "wasm", "webgpu"]


@pytest.mark.parametrize("name", NAMES)
def test_a_backend_is_its_class_in_backend_py_and_its_kernels_by_family(name):
    folder = BACKENDS / name
    assert (folder / "backend.py").is_file(), f"backends/{name}/backend.py holds the backend's class"
    assert (folder / "kernels" / "__init__.py").is_file(), f"backends/{name}/kernels/ holds its kernels"
    init = ast.parse((folder / "__init__.py").read_text()).body
    defined = [node.name for node in init if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)]
    assert not defined, f"backends/{name}/__init__.py only re-exports; it defines {defined}"
    imported = {(node.level, node.module) for node in init if isinstance(node, ast.ImportFrom)}
    assert imported == {(1, None), (1, "backend")}, (
        f"backends/{name}/__init__.py imports its kernels (from . import kernels) and re-exports backend.py's names "
        f"(from .backend import ...), nothing else: {imported}"
    )


def _other_backend(module, name, level, package):
    """The backend `from <level dots><module> import ...` in `package` (dotted) reaches, when it is not `name`."""
    base = package.split(".")[: len(package.split(".")) - level + 1] if level else []
    target = base + (module.split(".") if module else [])
    if target[:2] == ["py_engine", "backends"] and len(target) > 2 and target[2] != name:
        return target[2]
    return None


@pytest.mark.parametrize("name", NAMES)
def test_a_backend_imports_no_private_name_of_another(name):
    private = []
    for path in sorted((BACKENDS / name).rglob("*.py")):
        package = ".".join(path.relative_to(BACKENDS.parent.parent).with_suffix("").parts[:-1])
        tree = ast.parse(path.read_text())
        aliases = set()  # local names of another backend's modules
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            other = _other_backend(node.module, name, node.level, package)
            if other is None:
                continue
            for alias in node.names:
                if alias.name.startswith("_"):
                    private.append(f"{path.name}: from {node.module} import {alias.name}")
                aliases.add(alias.asname or alias.name)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
            ):
                private.append(f"{path.name}: {node.value.id}.{node.attr}")
    assert not private, f"backends/{name} uses another backend's private names: {private}"
