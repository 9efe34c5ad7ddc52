"""What editors and type checkers read of the package is what runs: py_engine/__init__.py's TYPE_CHECKING imports
name every lazy name (pe.layers, pe.Sequential, ...) as the object pe gives. (The wheel carrying py.typed and the
tensor stub: tests/test_server.py; jedi completing them: tests/test_editor_completion.py.)"""

import ast
import importlib
from pathlib import Path

import py_engine as pe

REPO = Path(__file__).resolve().parent.parent


def type_checking_imports():
    """{name: (module, attribute or None)} of the `if TYPE_CHECKING:` block: `from .m import a` and `from . import m`."""
    tree = ast.parse((REPO / "py_engine" / "__init__.py").read_text())
    (block,) = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    names = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.level == 1, ast.unparse(node)
        for alias in node.names:
            assert alias.asname is None, ast.unparse(node)
            module = f"py_engine.{node.module}" if node.module else "py_engine"
            names[alias.name] = (module, alias.name)
    return names


def test_the_type_checking_imports_are_the_lazy_names_as_they_run():
    names = type_checking_imports()
    assert set(names) == {*pe._LAZY_MODULES, *pe._LAZY_NAMES, "tensor"}
    for name, (module, attribute) in names.items():
        seen = getattr(importlib.import_module(module), attribute, None)
        if seen is None:  # `from .train import optimizers`: a submodule
            seen = importlib.import_module(f"{module}.{attribute}")
        assert seen is getattr(pe, name), f"{name}: editors see {module}.{attribute}, pe.{name} is another object"
