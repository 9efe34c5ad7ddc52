"""Names a reader can trust: no two classes of the package share a name (an error or a traceback naming `RNN` means
one class), and every pooling layer lives in layers/pooling.py."""

import ast
from collections import defaultdict
from pathlib import Path

import py_engine.layers as L

PACKAGE = Path(__file__).resolve().parent.parent / "py_engine"


def test_each_class_name_is_defined_once_in_the_package():
    modules = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                modules[node.name].append(path.relative_to(PACKAGE).as_posix())
    repeated = {name: paths for name, paths in modules.items() if len(paths) > 1}
    assert not repeated, f"classes defined under one name in several modules (rename all but one): {repeated}"


def test_every_pooling_layer_is_in_the_pooling_module():
    pooling = {name: getattr(L, name).__module__ for name in L.__all__ if "Pooling" in name}
    assert len(pooling) == 10, sorted(pooling)
    assert set(pooling.values()) == {"py_engine.layers.pooling"}, pooling
