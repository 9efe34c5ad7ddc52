"""A GatherNd of pointwise convolutions' output runs them on the gathered pixels alone (models/graph_gather_sink.py):
the graph's values (bit for bit where the convolution's sums do not depend on the pixels' count), kernels over the
gathered pixels, memory flat; a convolution another node reads, a strided one, or indices into the channels keep the
graph's order."""

import numpy as np
import pytest

import py_engine as pe
from py_engine.models import graph_model
from py_engine.models.graph_gather_sink import SunkGather
from tests.graph_model_cases import attr, write_graph_model
from tests.pyodide import start_node_pyodide
from tests.test_graph_fusion import conv_node, placeholder
from tests.test_graph_model import load

MAP = (1, 12, 10, 5)


def int_placeholder(name, shape):
    dims = [{"size": str(d)} for d in shape]
    return {"name": name, "op": "Placeholder", "attr": {"dtype": attr("DT_INT32"), "shape": {"shape": {"dim": dims}}}}


def gather(name, params, indices):
    return {"name": name, "op": "GatherNd", "input": [params, indices], "attr": {"Tparams": attr("DT_FLOAT")}}


@pytest.fixture
def heads(tmp_path):
    """Two pointwise convolutions (relu, then linear) gathered at `pixels`; a pointwise one that the run also
    returns, gathered; a strided 1x1 one, gathered; and a chain like the first gathered at `cells` ([n, 4]: into the
    channels, so its run convolves the whole map first)."""
    rng = np.random.default_rng(5)
    weights = [
        ("w1", rng.uniform(-1, 1, (1, 1, 5, 8))),
        ("b1", rng.uniform(-1, 1, 8)),
        ("w2", rng.uniform(-1, 1, (1, 1, 8, 3))),
        ("b2", rng.uniform(-1, 1, 3)),
        ("w3", rng.uniform(-1, 1, (1, 1, 5, 4))),
        ("b3", rng.uniform(-1, 1, 4)),
    ]
    relu = conv_node("relu", "_FusedConv2D", "x", "w1", "b1")
    relu["attr"]["fused_ops"] = attr(["BiasAdd", "Relu"])
    strided = conv_node("strided", "_FusedConv2D", "x", "w3", "b3")
    strided["attr"]["strides"] = attr([1, 2, 2, 1])
    nodes = [
        placeholder("x", MAP),
        int_placeholder("pixels", (-1, 3)),
        int_placeholder("cells", (-1, 4)),
        *[{"name": name, "op": "Const", "attr": {"dtype": attr("DT_FLOAT")}} for name, _ in weights],
        relu,
        conv_node("head", "_FusedConv2D", "relu", "w2", "b2"),
        gather("picked", "head", "pixels"),
        conv_node("shared", "_FusedConv2D", "x", "w3", "b3"),
        gather("picked_shared", "shared", "pixels"),
        strided,
        gather("picked_strided", "strided", "pixels"),
        {**conv_node("relu2", "_FusedConv2D", "x", "w1", "b1"), "attr": relu["attr"]},
        conv_node("head2", "_FusedConv2D", "relu2", "w2", "b2"),
        gather("picked_cells", "head2", "cells"),
    ]
    return write_graph_model(tmp_path / "heads", nodes, [(n, np.asarray(a, np.float32)) for n, a in weights])


OUTPUTS = ["picked", "picked_shared", "shared", "picked_strided", "picked_cells"]


def feeds(rng):
    x = rng.normal(0, 2, MAP).astype(np.float32)
    pixels = np.array([[0, 0, 0], [0, 5, 4], [0, 3, 1], [0, 3, 1]], np.int32)  # within the strided map too
    cells = np.array([[0, 1, 2, 0], [0, 11, 9, 2]], np.int32)
    return {"x": pe.tensor(x), "pixels": pe.tensor(pixels), "cells": pe.tensor(cells)}


def test_a_gather_of_pointwise_convolutions_runs_them_on_its_pixels_with_the_graphs_values(
    each_backend, heads, rng, monkeypatch
):
    inputs = feeds(rng)
    model = load(heads)
    profiled = pe.profile(model.execute, inputs, OUTPUTS)
    (plan,) = model._plans.values()
    sunk = [step for step, _, _ in plan.steps if isinstance(step, SunkGather)]
    assert sorted((s.name, s.op) for s in sunk) == [
        ("picked", "_FusedConv2D+_FusedConv2D+GatherNd"),
        ("picked_cells", "_FusedConv2D+_FusedConv2D+GatherNd"),
    ]
    # the chain's two convolutions ran on the 4 gathered pixels; the shared and strided ones on their maps
    convs = sorted(tuple(r.input_shapes[0]) for r in profiled.kernels if r.name == "FusedConv2D")
    assert (1, 1, 4, 5) in convs and (1, 1, 4, 8) in convs, convs
    got = [y.numpy() for y in profiled.result]
    pe.dispose(profiled.result)
    monkeypatch.setattr(graph_model, "sink_gathers", lambda steps, model, outputs: steps)
    plain = load(heads)
    want = [y.numpy() for y in plain.execute(inputs, OUTPUTS)]
    for a, b in zip(got, want, strict=True):
        assert a.shape == b.shape
        if each_backend == "numpy":  # BLAS blocks its sums by the matrices' sizes
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
        else:
            np.testing.assert_array_equal(a, b)
    plain.dispose()
    before = pe.memory().num_tensors
    for _ in range(3):  # on webgpu: replays of the recorded run
        pe.dispose(model.execute(inputs, OUTPUTS))
        assert pe.memory().num_tensors == before
    model.dispose()
    pe.dispose(list(inputs.values()))


def test_movenets_regression_and_offset_heads_run_on_the_gathered_pixels(graph_models, monkeypatch):
    """Its two heads, each two 1x1 convolutions over the 48x48 map read at 1 and at 17 pixels."""
    x = pe.tensor(((np.arange(192 * 192 * 3) * 7919) % 256).reshape(1, 192, 192, 3).astype(np.int32))
    model = load(graph_models / "movenet-lightning")
    got = model.execute(x).numpy()
    (plan,) = model._plans.values()
    assert [s.name for s, _, _ in plan.steps if isinstance(s, SunkGather)] == [
        "StatefulPartitionedCall/GatherNd",
        "StatefulPartitionedCall/GatherNd_1",
    ]
    model.dispose()
    monkeypatch.setattr(graph_model, "sink_gathers", lambda steps, model, outputs: steps)
    model = load(graph_models / "movenet-lightning")
    np.testing.assert_allclose(got, model.execute(x).numpy(), rtol=1e-6, atol=1e-6)
    model.dispose()
    x.dispose()


ON_WASM = """
import json, pyodide_js
from py_engine.models import graph_model
pyodide_js.mountNodeFS("/heads", FOLDER_)
await pe.set_backend("wasm")
inputs = {name: pe.tensor(np.load(f"/heads/{name}.npy")) for name in ("x", "pixels", "cells")}
sunk = await pe.load_graph_model("file:///heads/model.json")
got = [[y.numpy() for y in sunk.execute(inputs, OUTPUTS_)] for _ in range(3)]  # recorded, then replayed
graph_model.sink_gathers = lambda steps, model, outputs: steps
plain = await pe.load_graph_model("file:///heads/model.json")
want = [y.numpy() for y in plain.execute(inputs, OUTPUTS_)]
[pe.get_backend(), [[bool(np.array_equal(a, b)) for a, b in zip(run, want)] for run in got]]
"""


def test_on_wasm_the_gathered_pixels_give_the_graphs_values_bit_for_bit(heads, rng):
    for name, t in feeds(rng).items():
        np.save(heads / f"{name}.npy", t.numpy())
    pyodide = start_node_pyodide()
    try:
        backend, equal = pyodide.run(ON_WASM.replace("FOLDER_", repr(str(heads))).replace("OUTPUTS_", repr(OUTPUTS)))
    finally:
        pyodide.close()
    assert backend == "wasm"
    assert equal == [[True] * len(OUTPUTS)] * 3
