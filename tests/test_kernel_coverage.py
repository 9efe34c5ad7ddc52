"""Every backend registers the same kernels, and the conformance suite runs every one of them."""

from py_engine import kernel_registry
from py_engine.engine import ENGINE
from py_engine.testing.conformance import all_cases, run_on


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
