"""Every backend registers the same kernels, each under one family name (the same-named module in every backend,
in ops/gradients/ and in the conformance suite), and the conformance suite runs every one of them."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from py_engine import kernel_registry
from py_engine.engine import ENGINE
from py_engine.testing.conformance import SUITES, all_cases, run_on

REPO = Path(__file__).resolve().parent.parent


def registered(backend):
    return {name for name, b in kernel_registry._KERNELS if b == backend}


def test_numpy_and_webgpu_register_the_same_kernels():
    numpy, webgpu = registered("numpy"), registered("webgpu")
    assert numpy, "no numpy kernel is registered"
    assert not numpy - webgpu, f"kernels only numpy has (the webgpu backend cannot run them): {sorted(numpy - webgpu)}"
    assert not webgpu - numpy, f"kernels only webgpu has (no reference to test them against): {sorted(webgpu - numpy)}"


def test_every_registered_kernel_has_conformance_cases():
    ran = set()  # the kernels the cases run, on numpy: the same ops run the same kernels on every backend
    for case in all_cases():
        ran.update(record.name for record in ENGINE.profile(run_on, case, "numpy").kernels)
    missing = (registered("numpy") | registered("webgpu")) - ran
    assert not missing, (
        f"kernels no conformance case runs: {sorted(missing)}; add cases to py_engine/testing/conformance"
    )


# Where each kernel is registered, read in a fresh interpreter while `import py_engine` runs (a profile hook sees
# every register_kernel and register_gradient call and the module that made it).
_WHERE = """
import json, sys
where = {"kernels": {}, "gradients": {}}
def hook(frame, event, arg):
    code = frame.f_code
    if event == "call" and code.co_filename.endswith("kernel_registry.py") and code.co_name in ("register_kernel", "register_gradient"):
        module = frame.f_back.f_globals["__name__"]
        if code.co_name == "register_kernel":
            where["kernels"].setdefault(frame.f_locals["name"], {})[frame.f_locals["backend"]] = module
        elif frame.f_locals["fn"] is not None:
            where["gradients"][frame.f_locals["kernel_name"]] = module
sys.setprofile(hook)
import py_engine
sys.setprofile(None)
print(json.dumps(where))
"""


@pytest.fixture(scope="module")
def where():
    done = subprocess.run([sys.executable, "-c", _WHERE], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def family(module):
    return module.rsplit(".", 1)[-1]


def test_each_kernel_has_one_family_name_on_every_backend_and_for_its_gradient(where):
    """A kernel lives in the same-named module on every backend (backends/numpy/kernels/nn.py,
    backends/wasm/kernels/nn.py, backends/webgpu/kernels/nn.py) and its gradient in ops/gradients/ under that name
    too."""
    assert where["kernels"], "no kernel registration was seen"
    astray = {
        kernel: module
        for kernel, backends in where["kernels"].items()
        for backend, module in backends.items()
        if not re.fullmatch(rf"py_engine\.backends\.{backend}\.kernels\.\w+", module)
    }
    assert not astray, f"kernels registered outside backends/<backend>/kernels/<family>.py: {astray}"
    split = {k: b for k, b in where["kernels"].items() if len({family(m) for m in b.values()}) > 1}
    assert not split, f"kernels whose modules' names differ across backends: {split}"
    gradients = {
        kernel: module
        for kernel, module in where["gradients"].items()
        if kernel in where["kernels"]  # Reshape's gradient is for a view, which runs no kernel
        and family(module) != family(where["kernels"][kernel]["numpy"])
    }
    assert not gradients, f"gradients not in ops/gradients/<the kernel's family>.py: {gradients}"


def test_each_conformance_module_runs_every_kernel_of_its_family(where):
    families = {}
    for kernel, backends in where["kernels"].items():
        families.setdefault(family(backends["numpy"]), set()).add(kernel)
    missing = {}
    for name, cases in SUITES.items():
        if name not in families:
            continue
        ran = set()
        for case in cases:
            ran.update(record.name for record in ENGINE.profile(run_on, case, "numpy").kernels)
        if families[name] - ran:
            missing[name] = sorted(families[name] - ran)
    assert not missing, (
        f"kernels of a family its conformance module (testing/conformance/<family>.py) never runs: {missing}"
    )
    assert set(families) <= set(SUITES), f"families without a conformance module: {sorted(set(families) - set(SUITES))}"
