"""Every backend, recorder, capture recording, replay program and device implements its protocol
(py_engine/backend_protocols.py): the same member names and the same parameter names, down to the JS functions of
static/worker/gpu_device.js that BridgeDevice calls."""

import ast
import asyncio
import inspect
import pathlib
import re

import pytest

import py_engine as pe
from py_engine.backend_protocols import Backend, CaptureRecording, Device, Recorder, ReplayProgram
from py_engine.backends.numpy import NumpyBackend
from py_engine.backends.webgpu.capture import Recording
from py_engine.backends.webgpu.dispatch_plans import PlanLog
from py_engine.backends.webgpu.null_device import NullDevice
from py_engine.backends.webgpu.wgpu_device import WgpuDevice
from py_engine.engine import ENGINE
from py_engine.engine.warmup import ShaderList

ROOT = pathlib.Path(__file__).resolve().parent.parent
BRIDGE_DEVICE = ROOT / "py_engine" / "backends" / "webgpu" / "bridge_device.py"
BRIDGE_JS = ROOT / "static" / "worker" / "bridge.js"
DEVICE_JS = ROOT / "static" / "worker" / "gpu_device.js"  # makeDevice: the device bridge.js hands out


def members(protocol):
    """(methods {name: parameter names}, data attribute names) that the protocol declares."""
    methods, attributes = {}, set(getattr(protocol, "__annotations__", {}))
    for name, value in vars(protocol).items():
        if inspect.isfunction(value) and not name.startswith("_"):
            methods[name] = parameters(value)
    return methods, attributes


def parameters(fn):
    return [p.name for p in inspect.signature(fn).parameters.values()]


def mismatches(protocol, get, defaults=()):
    """What `get(name)` (the implementation's member or None) gets wrong about the protocol."""
    methods, attributes = members(protocol)
    problems = []
    for name, expected in methods.items():
        found = get(name)
        if found is None or (name not in defaults and getattr(found, "__func__", found) is getattr(protocol, name)):
            problems.append(f"{name}: missing")
        elif not callable(found):
            problems.append(f"{name}: not a method")
        elif parameters(found) != expected[1:]:
            problems.append(f"{name}{tuple(parameters(found))}: the protocol's parameters are {tuple(expected[1:])}")
        elif inspect.iscoroutinefunction(getattr(protocol, name)) != inspect.iscoroutinefunction(found):
            problems.append(f"{name}: async in one and not the other")
    problems += [f"{name}: missing attribute" for name in sorted(attributes) if get(name, attribute=True) is None]
    return problems


def backend_defaults():
    """Methods the Backend protocol gives a body to (a no-op or a GPU-only default): every other one, whose body
    is `...`, an implementation must define itself."""
    return {name for name, value in vars(Backend).items() if inspect.isfunction(value) and not _is_stub(value)}


def _is_stub(fn):
    body = ast.parse(inspect.getsource(fn).strip()).body[0].body
    if (
        isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    return len(body) == 1 and isinstance(body[0], ast.Expr) and body[0].value.value is Ellipsis


def lookup(obj):
    """get(name, attribute=False) for mismatches(): the member of obj, True for a data attribute it has, else None."""

    def get(name, attribute=False):
        if not hasattr(obj, name):
            return None
        return True if attribute else getattr(obj, name)

    return get


def test_every_backend_implements_the_backend_protocol(each_backend):
    backend = ENGINE.active()
    assert backend.name == each_backend
    assert mismatches(Backend, lookup(backend), backend_defaults()) == []


def test_no_backend_reads_a_tensors_buffer():
    """A backend is given (handle, shape, dtype) for each input (Backend.run) and handles elsewhere: none reaches into
    a tensor for its DataBuffer (tests/test_import_graph.py checks that none imports the engine or the tensor)."""
    reads = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted((ROOT / "py_engine" / "backends").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and node.attr == "_buf"
    ]
    assert reads == [], "backends reading a tensor's _buf: " + ", ".join(reads)


def test_a_backend_missing_a_member_or_renaming_a_parameter_fails_the_check():
    class Incomplete:
        name, is_gpu, lost, recorder = "incomplete", False, None, None
        host_arrays, kernel_fallback, memory_budget, captures = False, None, None, False

        def upload(self, values):  # renamed parameter
            return values

    problems = mismatches(Backend, lookup(Incomplete()), backend_defaults())
    assert "upload('values',): the protocol's parameters are ('array',)" in problems
    assert "read: missing" in problems and "run: missing" in problems
    assert "release_pool: missing" in problems  # a class that does not subclass Backend gets no default
    assert not any("attribute" in p for p in problems)


def test_a_backend_inheriting_a_stub_instead_of_defining_it_fails_the_check():
    class Partial(NumpyBackend):
        read = Backend.read  # back to the protocol's `...`

    problems = mismatches(Backend, lookup(Partial()), backend_defaults())
    assert problems == ["read: missing"]


def test_wgpu_device_implements_the_device_protocol():
    assert asyncio.run(pe.set_backend("webgpu")), ENGINE.fallback_reason
    device = ENGINE.active().device
    assert type(device) is WgpuDevice
    assert mismatches(Device, lookup(device)) == []


def _bridge_class():
    tree = ast.parse(BRIDGE_DEVICE.read_text())
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "BridgeDevice")


def _init_attributes(tree, class_name):
    """self.X assigned in the class's __init__."""
    cls = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == class_name)
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    names = set()
    for node in ast.walk(init):
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        for target in targets:
            for t in target.elts if isinstance(target, ast.Tuple) else [target]:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    names.add(t.attr)
    return names


def test_bridge_device_implements_the_device_protocol():
    """BridgeDevice imports Pyodide's `js`, so its source is read, not imported."""
    cls = _bridge_class()
    methods = {
        n.name: (n, isinstance(n, ast.AsyncFunctionDef))
        for n in cls.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    attributes = _init_attributes(ast.parse(BRIDGE_DEVICE.read_text()), "BridgeDevice")
    expected, declared = members(Device)
    problems = []
    for name, params in expected.items():
        if name not in methods:
            problems.append(f"{name}: missing")
            continue
        node, is_async = methods[name]
        found = [a.arg for a in node.args.args]
        if found != params:
            problems.append(f"{name}{tuple(found)}: the protocol's parameters are {tuple(params)}")
        if is_async != inspect.iscoroutinefunction(getattr(Device, name)):
            problems.append(f"{name}: async in one and not the other")
    problems += [f"{name}: missing attribute" for name in sorted(declared - attributes)]
    assert problems == []


def _js_names_called():
    """The JS device's members BridgeDevice uses: `d.X` and `js_device.X` in __init__, `self._js.X` anywhere."""
    names = set()
    for node in ast.walk(_bridge_class()):
        if not isinstance(node, ast.Attribute):
            continue
        owner = node.value
        device_local = isinstance(owner, ast.Name) and owner.id in ("d", "js_device")
        device_member = isinstance(owner, ast.Attribute) and owner.attr == "_js"
        if device_local or device_member:
            names.add(node.attr)
    return names


def _bridge_js_device_members():
    """The keys of the object makeDevice() returns in gpu_device.js (shorthand `name,` and `name: value`)."""
    source = DEVICE_JS.read_text()
    make_device = source[source.index("function makeDevice(") :]
    returned = re.search(r"\n    return \{(.*?)\n    \};", make_device, re.S)
    assert returned, "gpu_device.js: makeDevice's `return { ... };` was not found; update this test's parser"
    keys = set()
    for entry in re.split(r",\s*(?=[A-Za-z_]\w*\s*(?:[:,]|$))", returned.group(1).strip()):
        key = re.match(r"\s*([A-Za-z_]\w*)", entry)
        if key:
            keys.add(key.group(1))
    return keys


def test_bridge_js_exposes_every_function_bridge_device_calls():
    called = _js_names_called()
    assert {"createBuffer", "dispatch", "flush", "read", "runProgram", "createProgram", "destroyProgram"} <= called
    exposed = _bridge_js_device_members()
    assert called - exposed == set(), (
        f"BridgeDevice calls JS device members gpu_device.js does not expose: {called - exposed}"
    )
    host = re.search(r"self\.peBridge = \{(.*?)\n  \};", BRIDGE_JS.read_text(), re.S)
    assert host and re.search(r"\bopen\b", host.group(1)), (
        "bridge.js: self.peBridge has no `open` (BridgeDevice.create)"
    )


@pytest.mark.parametrize("renamed", ["createBuffer", "runProgram"])
def test_a_renamed_js_function_is_caught(renamed):
    exposed = _bridge_js_device_members() - {renamed}
    assert renamed in _js_names_called() - exposed


def test_null_device_implements_the_device_protocol():
    assert mismatches(Device, lookup(NullDevice("cpu"))) == []


@pytest.mark.parametrize(
    "recorder", [ShaderList(), Recording("f", None, []), PlanLog()], ids=lambda r: type(r).__name__
)
def test_every_recorder_implements_the_recorder_protocol(recorder):
    """Warm-up, capture and dispatch plans watch the backend through the one Recorder contract."""
    assert Recorder in type(recorder).__mro__  # a subclass: the events it does not keep are the protocol's no-ops
    every_method_has_a_default = {name for name, value in vars(Recorder).items() if inspect.isfunction(value)}
    assert mismatches(Recorder, lookup(recorder), every_method_has_a_default) == []


def test_webgpu_capture_implements_the_capture_protocols(gpu):
    """pe.capture (engine/capture.py) reaches the backend only through Backend.record, the CaptureRecording it
    returns and the ReplayProgram that recording builds."""
    recording = gpu.record("f", [])
    defaults = {name for name, value in vars(Recorder).items() if inspect.isfunction(value)}
    defaults |= {name for name, value in vars(CaptureRecording).items() if inspect.isfunction(value) and not _is_stub(value)}  # fmt: skip
    assert mismatches(CaptureRecording, lookup(recording), defaults) == []
    x = pe.tensor([1.0, 2.0, 3.0])
    captured = pe.capture(lambda t: t * 2.0 + 1.0)
    pe.dispose(captured(x))
    (recorded,) = captured._programs.values()
    assert mismatches(ReplayProgram, lookup(recorded.program)) == []
    captured.dispose()
    pe.dispose(x)
