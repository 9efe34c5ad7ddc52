"""Editors see the engine as it runs. jedi, the very build the page's completion loads (Pyodide's jedi and parso wheels
from the verified assets, static/playground_completion.py), completes the lazy names (pe.layers., pe.Sequential,
pe.optimizers.: py_engine/__init__.py's TYPE_CHECKING imports) and, through the ops' return types in
py_engine/tensor.pyi, what an op returns (x.relu(). offers a Tensor's methods), both on a file (jedi.Script, as an
editor reads it) and as the page asks (jedi.Interpreter with the run namespace, no code of the user's run)."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from app.assets import ensure_pyodide
from app.settings import Settings

REPO = Path(__file__).resolve().parent.parent
TENSOR_METHODS = {"relu", "sum", "reshape", "numpy", "dispose"}
# Completes `code` at its end, once as a file of the checkout and once as the page does, and prints the names.
PROBE = """
import json, sys
import jedi
import py_engine

jedi.settings.allow_unsafe_interpreter_executions = False  # as static/playground_completion.py sets it
code = sys.argv[1]
line, column = code.count("\\n") + 1, len(code.rsplit("\\n", 1)[-1])
script = jedi.Script("import py_engine as pe\\n" + code, path=sys.argv[2], project=jedi.Project(sys.argv[3]))
page = jedi.Interpreter(code, [{"pe": py_engine}])
print(json.dumps({
    "script": [c.name for c in script.complete(line + 1, column)],
    "page": [c.name for c in page.complete(line, column)],
}))
"""


@pytest.fixture(scope="module")
def jedi_path(tmp_path_factory):
    """A folder holding the page's jedi and parso, unpacked from the Pyodide distribution the server serves."""
    pyodide = ensure_pyodide(Settings().assets_dir)
    folder = tmp_path_factory.mktemp("jedi")
    for package in ("jedi", "parso"):
        (wheel,) = pyodide.glob(f"{package}-*-none-any.whl")
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(folder)
    return folder


def complete(jedi_path, code):
    """{"script": names, "page": names} that jedi offers at the end of `code` (which may use `pe`)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(jedi_path), str(REPO)])}
    args = [sys.executable, "-c", PROBE, code, str(REPO / "completion_probe.py"), str(REPO)]
    done = subprocess.run(args, capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    return {where: set(names) for where, names in json.loads(done.stdout).items()}


def test_an_ops_result_completes_a_tensors_methods(jedi_path):
    got = complete(jedi_path, "x = pe.tensor([1.0])\nx.relu().")
    assert got["script"] >= TENSOR_METHODS and got["page"] >= TENSOR_METHODS, got
    pair = complete(jedi_path, "x = pe.tensor([3.0, 1.0])\nvalues, indices = x.top_k(1)\nindices.")
    assert pair["script"] >= TENSOR_METHODS and pair["page"] >= TENSOR_METHODS, pair
    pieces = complete(jedi_path, "x = pe.tensor([1.0, 2.0])\nx.split(2)[0].")
    assert pieces["script"] >= TENSOR_METHODS, pieces


def test_the_lazy_names_complete(jedi_path):
    assert {"Dense", "LSTM", "RNN", "MaxPooling2D"} <= complete(jedi_path, "pe.layers.")["script"]
    assert {"Adam", "SGD"} <= complete(jedi_path, "pe.optimizers.")["script"]
    assert {"fit", "compile", "predict"} <= complete(jedi_path, "model = pe.Sequential()\nmodel.")["script"]
    names = complete(jedi_path, "pe.Seq")
    assert "Sequential" in names["script"] and "Sequential" in names["page"], names
