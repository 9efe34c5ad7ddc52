"""py_engine/tensor.pyi, which shows editors the Tensor methods py_engine.ops attaches (t.relu()), is what
scripts/tensor_stub.py generates from the package as it is now, with every op's return type."""

import ast
import importlib.util
import inspect
from pathlib import Path

import py_engine as pe

REPO = Path(__file__).resolve().parent.parent


def load_generator():
    spec = importlib.util.spec_from_file_location("tensor_stub", REPO / "scripts" / "tensor_stub.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_stub_is_current():
    generator = load_generator()
    assert generator.STUB.read_text() == generator.render(), (
        "py_engine/tensor.pyi is stale: run .venv/bin/python scripts/tensor_stub.py and commit it"
    )


def test_the_stub_declares_every_method_and_operator_a_tensor_has():
    tree = ast.parse((REPO / "py_engine" / "tensor.pyi").read_text())
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    declared = {
        getattr(item, "name", None) or item.target.id
        for item in classes["Tensor"].body
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.AnnAssign))
    }
    not_members = {"__module__", "__qualname__", "__doc__", "__slots__", "__firstlineno__", "__static_attributes__"}
    assert set(vars(pe.Tensor)) - not_members - declared == set()
    assert {"relu", "conv2d", "sum", "__add__", "__getitem__", "T"} <= declared


def test_every_op_says_what_it_returns():
    """The stub's return types come from the ops' annotations (x.relu(). completes a Tensor's methods)."""
    unannotated = [
        name
        for name in pe.ops.__all__
        if inspect.signature(getattr(pe.ops, name)).return_annotation is inspect.Signature.empty
    ]
    assert not unannotated, f"ops without a return annotation (-> Tensor, ...): {unannotated}"
