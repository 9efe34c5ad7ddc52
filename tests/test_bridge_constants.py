"""static/worker/bridge.js and gpu_device.js state none of the constants of py_engine/backends/webgpu/device.py: BridgeDevice hands them to
peBridge.open (BRIDGE_CONSTANTS) and the JS device reads them under the names Python gives. These checks read both
sources (bridge_device.py imports Pyodide's `js`), so the two sides disagreeing fails here, not in a page."""

import ast
import pathlib
import re

import pytest

from py_engine.backends.webgpu.device import BRIDGE_CONSTANTS, UNIFORM_BLOCK, UNIFORM_RING, DeviceStats

ROOT = pathlib.Path(__file__).resolve().parent.parent
BRIDGE_JS = (ROOT / "static" / "worker" / "bridge.js").read_text()
DEVICE_JS = (ROOT / "static" / "worker" / "gpu_device.js").read_text()  # the device bridge.js hands out
BRIDGE_DEVICE = (ROOT / "py_engine" / "backends" / "webgpu" / "bridge_device.py").read_text()


def test_bridge_device_hands_the_constants_to_bridge_js_when_it_opens_the_device():
    opens = [
        node
        for node in ast.walk(ast.parse(BRIDGE_DEVICE))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "open"
    ]
    assert len(opens) == 1 and "BRIDGE_CONSTANTS" in ast.unparse(opens[0].args)
    opened = re.search(r"async function openOnce\(constants\) \{.*?\n  \}", BRIDGE_JS, re.S)
    assert opened and "device.useConstants(constants);" in opened.group(0)
    assert re.search(r"self\.peBridge = \{\s*open: openOnce,", BRIDGE_JS)


def test_bridge_js_reads_every_constant_python_hands_it_and_no_other():
    use = re.search(r"function useConstants\(constants\) \{(.*?)\n    \}", DEVICE_JS, re.S)
    assert use, "gpu_device.js: useConstants(constants) was not found; update this test's parser"
    read = set(re.findall(r"\bconstants\.(\w+)", use.group(1)))
    for destructured in re.findall(r"\(\{([^}]*)\} = constants\)", use.group(1)):
        read |= {name.strip() for name in destructured.split(",")}
    assert read == set(BRIDGE_CONSTANTS)


def test_bridge_js_counts_each_of_pythons_stats_and_no_other():
    counted = set(re.findall(r'\bcount\("(\w+)"', DEVICE_JS))
    assert counted == set(DeviceStats.FIELDS)
    assert BRIDGE_CONSTANTS["statFields"] == list(DeviceStats.FIELDS)  # stats() reports them in Python's order


@pytest.mark.parametrize("source", [BRIDGE_JS, DEVICE_JS], ids=["bridge.js", "gpu_device.js"])
def test_bridge_js_restates_no_constant(source):
    for name in DeviceStats.FIELDS:  # a stat's name only where it is counted, never in a list of its own
        assert source.count(f'"{name}"') == source.count(f'count("{name}"'), name
    assert not re.search(rf"\b({UNIFORM_RING}|{UNIFORM_RING // 1024} \* 1024)\b", source)
    assert not re.search(rf"=\s*{UNIFORM_BLOCK}\b", source)
    assert not re.search(r"\b(UNIFORM_BLOCK|UNIFORM_RING|STAT_FIELDS)\b", source)
