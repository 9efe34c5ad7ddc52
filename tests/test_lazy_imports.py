"""`import py_engine` imports the engine and the ops, not the layers, models, TF.js format or training: those are
imported when one of their names is first used (PEP 562 in py_engine/__init__.py), which keeps the page's boot short
(docs/startup.md). Each check runs in a fresh interpreter, since the other tests' imports would hide an eager one."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LAZY_PACKAGES = (
    "py_engine.browser",
    "py_engine.io",
    "py_engine.layers",
    "py_engine.models",
    "py_engine.train",
    "py_engine.vision",
)
# each lazy name of py_engine -> the module that defines it (or the module itself, for a module's name)
LAZY_NAMES = {
    "browser": "py_engine.browser",
    "io": "py_engine.io",
    "layers": "py_engine.layers",
    "models": "py_engine.models",
    "train": "py_engine.train",
    "vision": "py_engine.vision",
    "activations": "py_engine.layers.activations",
    "callbacks": "py_engine.train.callbacks",
    "constraints": "py_engine.train.constraints",
    "initializers": "py_engine.layers.initializers",
    "losses": "py_engine.train.losses",
    "metrics": "py_engine.train.metrics",
    "optimizers": "py_engine.train.optimizers",
    "regularizers": "py_engine.train.regularizers",
    "ModelLoadError": "py_engine.io.errors",
    "load_layers_model": "py_engine.models.loading",
    "load_graph_model": "py_engine.models.graph_model",
    "GraphModel": "py_engine.models.graph_model",
    "save_layers_model": "py_engine.io.save",
    "Input": "py_engine.layers",
    "Model": "py_engine.models",
    "Sequential": "py_engine.models",
    "model_from_config": "py_engine.models",
}
NOT_EXPORTED = {"io", "models", "train"}  # subpackages, like ops: attributes but not in __all__


def run_python(code):
    """What `code` prints as JSON, run by a fresh interpreter in the repo root (so it imports this py_engine)."""
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_import_py_engine_leaves_the_layers_models_io_and_training_unimported():
    loaded = run_python("import json, sys\nimport py_engine\nprint(json.dumps(sorted(sys.modules)))")
    assert "py_engine.ops.math" in loaded and "py_engine.backends.webgpu" in loaded
    assert [m for m in loaded if m in LAZY_PACKAGES or m.startswith(tuple(p + "." for p in LAZY_PACKAGES))] == []
    assert "numpy.random" not in loaded  # eight compiled modules: the shared generator is made on first use


def test_the_shared_generator_is_made_on_first_use_and_seeded_by_set_seed():
    got = run_python(
        "import asyncio, json, sys\nimport py_engine as pe\n"
        "first = asyncio.run(pe.random_uniform((3,)).data()).tolist()\n"
        "loaded = 'numpy.random' in sys.modules\n"
        "pe.set_seed(5)\nseeded = asyncio.run(pe.random_uniform((3,)).data()).tolist()\n"
        "pe.set_seed(5)\nagain = asyncio.run(pe.random_uniform((3,)).data()).tolist()\n"
        "print(json.dumps([loaded, len(set(first)), seeded == again]))"
    )
    assert got == [True, 3, True]


def test_each_lazy_name_resolves_to_its_module_and_is_listed():
    code = f"""
import importlib, json, sys
import py_engine as pe
listed = dir(pe)
got = {{}}
for name, module in {LAZY_NAMES!r}.items():
    value = getattr(pe, name)
    defined = importlib.import_module(module)
    got[name] = [value is (defined if defined.__name__.endswith("." + name) else getattr(defined, name)),
                 name in listed, name in pe.__all__]
star = {{}}
exec("from py_engine import *", star)
got["*"] = sorted(set(pe.__all__) - set(star))
print(json.dumps(got))
"""
    got = run_python(code)
    assert got.pop("*") == []  # every name of __all__ was bound
    assert got == {name: [True, True, name not in NOT_EXPORTED] for name in LAZY_NAMES}


@pytest.mark.parametrize(
    "module", [*LAZY_PACKAGES, "py_engine.models.loading", "py_engine.models.graph_model", "py_engine.io.save"]
)
def test_a_lazy_module_imports_as_a_programs_first_import(module):
    loaded = run_python(f"import json, sys\nimport {module}\nprint(json.dumps(sorted(sys.modules)))")
    assert module in loaded
