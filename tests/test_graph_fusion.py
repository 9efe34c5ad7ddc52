"""A graph model's elementwise chains (hard-swish: Mul, Add, Relu6, Mul) run as one FusedElementwise kernel
(models/graph_fusion.py), giving the values of the nodes run one at a time bit for bit; a chain reading two tensors,
an output or a value two nodes read is not hidden in one. Memory stays flat."""

import inspect

import numpy as np
import pytest

import py_engine as pe
from py_engine.models import graph_model
from py_engine.models.graph_fusion import FusedChain
from tests.graph_model_cases import attr, write_graph_model
from tests.pyodide import start_node_pyodide
from tests.test_graph_model import attr_type, load, write_graph

SHAPE = (1, 16, 16, 32)  # 8192 values: above the wasm kernels' SMALL, so the module's fused program runs there
OUTPUTS = ["out", "square", "neg"]


def node(name, op, *inputs):
    return {"name": name, "op": op, "input": list(inputs), "attr": {"T": attr_type("DT_FLOAT")}}


def placeholder(name, shape):
    dims = [{"size": str(d)} for d in shape]
    return {
        "name": name,
        "op": "Placeholder",
        "attr": {"dtype": attr_type("DT_FLOAT"), "shape": {"shape": {"dim": dims}}},
    }


def const(name):
    return {"name": name, "op": "Const", "attr": {"dtype": attr_type("DT_FLOAT")}}


@pytest.fixture
def folder(tmp_path):
    """hard-swish of x (one chain of 4), a squeeze-excite gate hard-sigmoid(s) (a chain of 3 on another tensor), their
    product (two tensors: no chain), and square(x), an output that neg reads (so neither is in a chain)."""
    nodes = [
        placeholder("x", SHAPE),
        placeholder("s", (1, 1, 1, SHAPE[3])),
        const("sixth"),
        const("three"),
        node("mul", "Mul", "sixth", "x"),
        node("add", "Add", "x", "three"),
        node("relu6", "Relu6", "add"),
        node("hard_swish", "Mul", "mul", "relu6"),
        node("gate_add", "AddV2", "s", "three"),
        node("gate_relu6", "Relu6", "gate_add"),
        node("gate", "Mul", "gate_relu6", "sixth"),
        node("out", "Mul", "hard_swish", "gate"),
        node("square", "Square", "x"),
        node("neg", "Neg", "square"),
    ]
    weights = [("sixth", np.float32(1 / 6), None), ("three", np.float32(3), None)]
    return write_graph(tmp_path / "chains", [(n, np.asarray(v), q) for n, v, q in weights], nodes)


def inputs(rng):
    x = rng.normal(0, 4, SHAPE).astype(np.float32)
    x.reshape(-1)[:8] = [np.nan, np.inf, -np.inf, -0.0, 0.0, -3.0, 3.0, 6.0]  # relu6's edges and the specials
    return x, rng.normal(0, 4, (1, 1, 1, SHAPE[3])).astype(np.float32)


def one_at_a_time(x, s):
    """The graph's nodes as the engine's ops, in the graph's order."""
    sixth, three = pe.tensor(np.float32(1 / 6)), pe.tensor(np.float32(3))
    hard_swish = pe.mul(pe.mul(sixth, x), pe.relu6(pe.add(x, three)))
    gate = pe.mul(pe.relu6(pe.add(s, three)), sixth)
    square = pe.square(x)
    return [pe.mul(hard_swish, gate), square, pe.neg(square)]


def test_chains_run_as_one_kernel_with_the_nodes_values_bit_for_bit(each_backend, folder, rng):
    model = load(folder)
    x, s = (pe.tensor(a) for a in inputs(rng))
    expected = [t.numpy() for t in one_at_a_time(x, s)]
    profiled = pe.profile(model.execute, [x, s], OUTPUTS)
    kernels = [record.name for record in profiled.kernels]
    assert sorted(kernels) == sorted(["FusedElementwise", "FusedElementwise", "Mul", "Square", "Neg"]), kernels
    for got, want in zip(profiled.result, expected):
        np.testing.assert_array_equal(got.numpy(), want)
    (plan,) = model._plans.values()
    chains = [step for step, _, _ in plan.steps if isinstance(step, FusedChain)]
    assert sorted(chain.op for chain in chains) == ["AddV2+Relu6+Mul", "Mul+Add+Relu6+Mul"]
    pe.dispose(profiled.result)
    before = pe.memory().num_tensors
    for _ in range(3):  # on webgpu: replays of the recorded run (pe.capture), the scalars its constants
        ys = model.execute([x, s], OUTPUTS)
        for got, want in zip(ys, expected):
            np.testing.assert_array_equal(got.numpy(), want)
        pe.dispose(ys)
        assert pe.memory().num_tensors == before
    model.dispose()


def test_a_real_models_chains_give_the_values_of_its_nodes_one_at_a_time(graph_models, monkeypatch):
    """centernet's hard-swishes and squeeze-excite gates: 28 chains, 20 of them hard-swishes taken into the fused
    convolution before them (its activation hard_swish); its outputs those of the graph run without them."""
    x = pe.tensor(((np.arange(512 * 512 * 3) * 7919) % 256).reshape(1, 512, 512, 3).astype(np.float32))
    model = load(graph_models / "centernet")
    fused = [y.numpy() for y in model.execute(x)]
    (plan,) = model._plans.values()
    chains = [step for step, _, _ in plan.steps if isinstance(step, FusedChain)]
    assert len(chains) == 8 and {c.op for c in chains} == {"Add+Relu6+Mul"}
    convs = [step for step, _, _ in plan.steps if step.attrs.get("fused_ops") == ["BiasAdd", "HardSwish"]]
    assert len(convs) == 20 and {c.op for c in convs} == {"_FusedConv2D", "FusedDepthwiseConv2dNative"}
    assert {c.attrs["hard_swish_scale"] for c in convs} == {float(np.float16(1 / 6))}  # the weights' float16
    model.dispose()
    monkeypatch.setattr(graph_model, "fuse_chains", lambda steps, model, outputs: steps)
    model = load(graph_models / "centernet")
    for got, want in zip(model.execute(x), fused):
        np.testing.assert_array_equal(got.numpy(), want)
    (plan,) = model._plans.values()
    assert not any(
        isinstance(step, FusedChain) or "HardSwish" in step.attrs.get("fused_ops", []) for step, _, _ in plan.steps
    )
    model.dispose()


ON_WASM = """
import pyodide_js
pyodide_js.mountNodeFS("/chains", FOLDER_)
await pe.set_backend("wasm")
model = await pe.load_graph_model("file:///chains/model.json")
x, s = (pe.tensor(np.load(f"/chains/{name}.npy")) for name in ("x", "s"))
expected = [t.numpy() for t in one_at_a_time(x, s)]
profiled = pe.profile(model.execute, [x, s], OUTPUTS_)
[
    pe.get_backend(),
    sorted(record.name for record in profiled.kernels),
    [bool(np.array_equal(got.numpy(), want, equal_nan=True)) for got, want in zip(profiled.result, expected)],
]
"""


def test_on_wasm_the_modules_fused_program_gives_the_nodes_values_bit_for_bit(folder, rng):
    for name, a in zip(("x", "s"), inputs(rng)):
        np.save(folder / f"{name}.npy", a)
    pyodide = start_node_pyodide()
    try:
        pyodide.run(inspect.getsource(one_at_a_time))
        backend, kernels, equal = pyodide.run(
            ON_WASM.replace("FOLDER_", repr(str(folder))).replace("OUTPUTS_", repr(OUTPUTS))
        )
    finally:
        pyodide.close()
    assert backend == "wasm"
    assert kernels == sorted(["FusedElementwise", "FusedElementwise", "Mul", "Neg", "Square"])
    assert equal == [True, True, True]


def conv_node(name, op, *inputs):
    attrs = {"T": "DT_FLOAT", "strides": [1, 1, 1, 1], "dilations": [1, 1, 1, 1], "padding": "SAME"}
    attrs |= {"data_format": "NHWC", "fused_ops": ["BiasAdd"], "num_args": 1, "epsilon": 0.0}
    return {"name": name, "op": op, "input": list(inputs), "attr": {k: attr(v) for k, v in attrs.items()}}


def hard_swish_nodes(prefix, x):
    return [
        node(f"{prefix}/mul", "Mul", x, "scale"),
        node(f"{prefix}/add", "AddV2", "three", x),
        node(f"{prefix}/relu6", "Relu6", f"{prefix}/add"),
        node(prefix, "Mul", f"{prefix}/mul", f"{prefix}/relu6"),
    ]


@pytest.fixture
def convs(tmp_path):
    """A conv + bias then hard-swish, a depthwise one then hard-swish (both taken into their convolution), and a conv
    then hard-swish where the run returns the conv's output too (the chain stays a FusedElementwise step)."""
    rng = np.random.default_rng(3)
    weights = [
        ("w1", rng.uniform(-1, 1, (1, 1, 4, 8))),
        ("b1", rng.uniform(-1, 1, 8)),
        ("wd", rng.uniform(-1, 1, (3, 3, 8, 1))),
        ("bd", rng.uniform(-1, 1, 8)),
        ("w2", rng.uniform(-1, 1, (3, 3, 4, 5))),
        ("b2", rng.uniform(-1, 1, 5)),
        ("scale", np.float16(1 / 6)),  # as CenterNet's float16 shards hold it
        ("three", np.float32(3)),
    ]
    nodes = [
        placeholder("x", (1, 9, 10, 4)),
        *[{"name": name, "op": "Const", "attr": {"dtype": attr("DT_FLOAT")}} for name, _ in weights],
        conv_node("conv1", "_FusedConv2D", "x", "w1", "b1"),
        *hard_swish_nodes("hs1", "conv1"),
        conv_node("dw", "FusedDepthwiseConv2dNative", "hs1", "wd", "bd"),
        *hard_swish_nodes("out", "dw"),
        conv_node("conv2", "_FusedConv2D", "x", "w2", "b2"),
        *hard_swish_nodes("hs2", "conv2"),
    ]
    return write_graph_model(tmp_path / "convs", nodes, [(n, np.asarray(a, np.float32)) for n, a in weights])


def test_a_hard_swish_after_a_fused_convolution_runs_in_it_with_the_nodes_values(convs, monkeypatch):
    x = np.random.default_rng(4).normal(0, 3, (1, 9, 10, 4)).astype(np.float32)
    x.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
    model = load(convs)
    fused = [y.numpy() for y in model.execute(pe.tensor(x), ["out", "hs2", "conv2"])]
    (plan,) = model._plans.values()
    steps = [step for step, _, _ in plan.steps]
    taken = [step for step in steps if "HardSwish" in step.attrs.get("fused_ops", [])]
    assert [(s.name, s.op) for s in taken] == [("hs1", "_FusedConv2D"), ("out", "FusedDepthwiseConv2dNative")]
    assert {s.attrs["hard_swish_scale"] for s in taken} == {float(np.float16(1 / 6))}
    assert [s.name for s in steps if isinstance(s, FusedChain)] == ["hs2"]  # conv2's output is returned too
    monkeypatch.setattr(graph_model, "fuse_chains", lambda steps, model, outputs: steps)
    for got, want in zip(load(convs).execute(pe.tensor(x), ["out", "hs2", "conv2"]), fused, strict=True):
        np.testing.assert_array_equal(got.numpy(), want)
