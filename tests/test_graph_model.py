"""pe.load_graph_model and GraphModel: inputs and outputs, execute's arguments, memory, errors that name what is
wrong and leak nothing, quantized weights, and the GPU's warm-up and capture. On the real human models (the
`graph_models` fixture) and on small graphs written here."""

import asyncio
import base64
import functools
import http.server
import json
import os
import shutil
import threading

import numpy as np
import pytest

import py_engine as pe
from py_engine.io import fetch
from py_engine.io.errors import ModelLoadError
from py_engine.io.graph_format import parse_graph
from py_engine.models import graph_model
from tests.graph_model_cases import model_inputs, write_graph_model


def load(path):
    return asyncio.run(pe.load_graph_model(path))


@pytest.fixture
def liveness(graph_models):
    model = load(graph_models / "liveness")
    yield model
    model.dispose()


def photo_for(graph_models, name):
    return pe.tensor(model_inputs(graph_models / name / "model.json")[0][1])


# ---- a graph written here: x @ w + b through Relu, its weights quantized ---------------------------------------


def attr_type(dtype):
    return {"type": dtype}


def write_graph(folder, weights, nodes, signature=None, metadata=None):
    """model.json (a GraphDef of `nodes`) and one shard of `weights` [(name, array, quantization dtype or None)]."""
    folder.mkdir(parents=True, exist_ok=True)
    specs, data = [], b""
    for name, array, quantized in weights:
        spec = {"name": name, "shape": list(array.shape), "dtype": str(array.dtype)}
        if quantized == "float16":
            raw = array.astype("<f2").tobytes()
        elif quantized in ("uint8", "uint16"):
            lo, hi = float(array.min()), float(array.max())
            levels = 255 if quantized == "uint8" else 65535
            scale = (hi - lo) / levels or 1.0
            raw = np.round((array - lo) / scale).astype(np.uint8 if quantized == "uint8" else "<u2").tobytes()
            spec["quantization"] = {"dtype": quantized, "min": lo, "scale": scale, "original_dtype": spec["dtype"]}
        else:
            raw = array.tobytes()
        if quantized == "float16":
            spec["quantization"] = {"dtype": "float16", "original_dtype": "float32"}
        specs.append(spec)
        data += raw
    (folder / "weights.bin").write_bytes(data)
    artifacts = {
        "format": "graph-model",
        "generatedBy": "test",
        "convertedBy": "test",
        "modelTopology": {"node": nodes, "library": {}, "versions": {"producer": 1}},
        "weightsManifest": [{"paths": ["weights.bin"], "weights": specs}],
    }
    if signature:
        artifacts["signature"] = signature
    if metadata:
        artifacts["userDefinedMetadata"] = metadata
    (folder / "model.json").write_text(json.dumps(artifacts))
    return folder


def dense_graph(folder, quantization=(None, None)):
    rng = np.random.default_rng(0)
    w, b = rng.normal(size=(3, 2)).astype(np.float32), rng.normal(size=(2,)).astype(np.float32)
    nodes = [
        {
            "name": "x",
            "op": "Placeholder",
            "attr": {"dtype": attr_type("DT_FLOAT"), "shape": {"shape": {"dim": [{"size": "-1"}, {"size": "3"}]}}},
        },
        {"name": "w", "op": "Const", "attr": {"dtype": attr_type("DT_FLOAT")}},
        {"name": "b", "op": "Const", "attr": {"dtype": attr_type("DT_FLOAT")}},
        {
            "name": "mm",
            "op": "MatMul",
            "input": ["x", "w"],
            "attr": {"transpose_a": {"b": False}, "transpose_b": {"b": False}},
        },
        {
            "name": "add",
            "op": "BiasAdd",
            "input": ["mm", "b"],
            "attr": {"data_format": {"s": base64.b64encode(b"NHWC").decode()}},
        },
        {"name": "relu", "op": "Relu", "input": ["add"]},
        {"name": "out", "op": "Identity", "input": ["relu:0"]},
    ]
    write_graph(folder, [("w", w, quantization[0]), ("b", b, quantization[1])], nodes, metadata={"task": "dense"})
    return w, b


def stored(array, quantization):
    """What a weight reads back as, quantized so and dequantized as TF.js does."""
    if quantization == "float16":
        return array.astype(np.float16).astype(np.float32)
    if quantization in ("uint8", "uint16"):
        lo, hi = float(array.min()), float(array.max())
        scale = (hi - lo) / (255 if quantization == "uint8" else 65535)
        return (np.round((array - lo) / scale) * scale + lo).astype(np.float32)
    return array


@pytest.mark.parametrize("quantization", [(None, None), ("uint8", "float16"), ("uint16", "uint8"), ("float16", None)])
def test_quantized_weights_are_dequantized_as_tfjs_does(tmp_path, quantization):
    w, b = dense_graph(tmp_path, quantization)
    model = load(tmp_path / "model.json")
    np.testing.assert_allclose(model.weights["w"].numpy(), stored(w, quantization[0]), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(model.weights["b"].numpy(), stored(b, quantization[1]), rtol=1e-6, atol=1e-6)
    x = np.random.default_rng(1).normal(size=(4, 3)).astype(np.float32)
    expected = np.maximum(x @ stored(w, quantization[0]) + stored(b, quantization[1]), 0)
    np.testing.assert_allclose(model.execute(pe.tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-6)
    assert model.metadata == {"task": "dense"}
    model.dispose()


def test_loads_a_json_file_of_any_name_or_a_url_reporting_progress(graph_models, tmp_path):
    folder = tmp_path / "emotion"
    shutil.copytree(graph_models / "emotion", folder)
    (folder / "model.json").rename(folder / "emotion.json")  # as the npm package names it
    from_file = load(folder / "emotion.json")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=folder))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    progress = []
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/emotion.json"
        from_url = asyncio.run(pe.load_graph_model(url, on_progress=lambda done, total: progress.append((done, total))))
    finally:
        httpd.shutdown()
        httpd.server_close()
    total = (folder / "emotion.bin").stat().st_size
    assert progress[0] == (0, total) and progress[-1] == (total, total)
    x = photo_for(graph_models, "emotion")
    np.testing.assert_array_equal(from_url.execute(x).numpy(), from_file.execute(x).numpy())
    from_file.dispose()
    from_url.dispose()


def test_the_shards_are_requested_before_the_graph_is_parsed(tmp_path, monkeypatch):
    """They download while the graph is parsed and checked; a graph refused then still says why, not the shards."""
    dense_graph(tmp_path)
    requested, seen_at_parse = [], []
    read = fetch.Location._read

    def spied_read(self, target, *args, **kwargs):
        requested.append(os.path.basename(target))
        return read(self, target, *args, **kwargs)

    def spied_parse(artifacts):
        seen_at_parse.extend(requested)
        return parse_graph(artifacts)

    monkeypatch.setattr(fetch.Location, "_read", spied_read)
    monkeypatch.setattr(graph_model, "parse_graph", spied_parse)
    load(tmp_path).dispose()
    assert seen_at_parse == ["model.json", "weights.bin"]
    artifacts = json.loads((tmp_path / "model.json").read_text())
    artifacts["modelTopology"]["node"][5]["op"] = "Selu2"
    (tmp_path / "model.json").write_text(json.dumps(artifacts))
    (tmp_path / "weights.bin").unlink()
    failing_load(tmp_path, r"ops this engine cannot run: Selu2")


# ---- inputs, outputs and execute's arguments ---------------------------------------------------------------------


def test_inputs_and_outputs_come_from_the_signature_in_tfjs_order(graph_models):
    model = load(graph_models / "blazeface")  # its signature sits in userDefinedMetadata, as TF.js reads it
    assert [(i.name, i.shape, i.dtype) for i in model.inputs] == [("input", (1, 256, 256, 3), "float32")]
    assert [o.name for o in model.outputs] == ["Identity_3", "Identity", "Identity_1", "Identity_2"]
    assert model.outputs[0].shape == (1, 384, 16)
    model.dispose()


def test_without_a_signature_inputs_are_placeholders_and_outputs_the_nodes_nothing_reads(tmp_path):
    dense_graph(tmp_path)
    model = load(tmp_path)
    assert [(i.name, i.shape, i.dtype) for i in model.inputs] == [("x", (-1, 3), "float32")]
    assert [o.name for o in model.outputs] == ["out"]
    model.dispose()


def test_execute_takes_a_tensor_a_list_or_a_dict_and_returns_outputs_in_the_order_asked(graph_models, liveness):
    x = photo_for(graph_models, "liveness")
    y = liveness.execute(x)
    assert isinstance(y, pe.Tensor) and y.shape == (1, 2)
    expected = y.numpy()
    for inputs in ([x], {"conv2d_1_input": x}, {"conv2d_1_input:0": x}):
        np.testing.assert_array_equal(liveness.execute(inputs).numpy(), expected)
    np.testing.assert_array_equal(liveness.predict(x).numpy(), expected)
    # a signature key, a node name with or without :0; a list for a list
    softmax, logits = liveness.execute(x, ["activation_6", "StatefulPartitionedCall/sequential_1/dense_2/BiasAdd"])
    np.testing.assert_array_equal(softmax.numpy(), expected)
    np.testing.assert_allclose(pe.softmax(logits).numpy(), expected, rtol=1e-5)
    (single,) = liveness.execute(x, ["Identity:0"])
    np.testing.assert_array_equal(single.numpy(), expected)
    assert asyncio.run(liveness.execute_async(x)).shape == (1, 2)


def test_a_run_leaves_only_inputs_weights_and_outputs(graph_models, liveness):
    x = photo_for(graph_models, "liveness")
    before = pe.memory().num_tensors
    y = liveness.execute(x)
    assert pe.memory().num_tensors == before + 1
    y.dispose()
    counts = []
    for _ in range(3):  # flat over repeated runs
        liveness.execute(x).dispose()
        counts.append(pe.memory().num_tensors)
    assert counts == [before] * 3
    kept = pe.tidy(lambda: liveness.execute(x))
    assert pe.memory().num_tensors == before + 1
    kept.dispose()
    with pe.scope():
        liveness.execute(x)
    assert pe.memory().num_tensors == before


def test_execute_async_runs_control_flow_and_releases_what_loops_left(graph_models):
    model = load(graph_models / "handtrack")
    x = photo_for(graph_models, "handtrack")
    with pytest.raises(RuntimeError, match=r"use `await model.execute_async\(...\)`") as error:
        model.execute(x)
    assert "which needs control flow" in str(error.value)
    before = pe.memory().num_tensors
    outputs = asyncio.run(model.execute_async(x, ["Identity_5:0", "Identity_2:0"]))
    assert [o.shape for o in outputs] == [(1,), (1, 100)]
    assert pe.memory().num_tensors == before + 2
    pe.dispose(outputs)
    model.dispose()


def test_a_tensor_list_or_array_split_then_concatenated_is_the_tensor_again(tmp_path):
    """TensorFlow's TensorListSplit/TensorListConcatV2 and TensorArraySplitV3/ConcatV3 (TF.js 4.22 reshapes each
    piece to the element shape, so it cannot run this graph: no TF.js reference here)."""
    shape = {"shape": {"dim": [{"size": "5"}, {"size": "3"}]}}
    nodes = [
        {"name": "x", "op": "Placeholder", "attr": {"dtype": {"type": "DT_FLOAT"}, "shape": shape}},
        {"name": "element_shape", "op": "Const", "attr": {"dtype": {"type": "DT_INT32"}}},
        {"name": "lengths", "op": "Const", "attr": {"dtype": {"type": "DT_INT32"}}},
        {"name": "split", "op": "TensorListSplit", "input": ["x", "element_shape", "lengths"]},
        {"name": "length", "op": "TensorListLength", "input": ["split"]},
        {"name": "concat", "op": "TensorListConcatV2", "input": ["split"]},
        {"name": "two", "op": "Const", "attr": {"dtype": {"type": "DT_INT32"}}},
        {"name": "array", "op": "TensorArrayV3", "input": ["two"], "attr": {"dtype": {"type": "DT_FLOAT"}}},
        {"name": "array_split", "op": "TensorArraySplitV3", "input": ["array", "x", "lengths", "array:1"]},
        {"name": "array_concat", "op": "TensorArrayConcatV3", "input": ["array", "array_split"]},
    ]
    weights = [
        ("element_shape", np.array([-1, 3], np.int32)),
        ("lengths", np.array([2, 3], np.int32)),
        ("two", np.array(2, np.int32)),
    ]
    model = load(write_graph_model(tmp_path, nodes, weights))
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    before = pe.memory().num_tensors
    names = ["length", "concat:0", "concat:1", "array_concat:0", "array_concat:1"]
    length, joined, lengths, array_joined, array_lengths = asyncio.run(model.execute_async(pe.tensor(x), names))
    assert length.item() == 2 and lengths.tolist() == [2, 3] == array_lengths.tolist()
    np.testing.assert_array_equal(joined.numpy(), x)
    np.testing.assert_array_equal(array_joined.numpy(), x)
    pe.dispose([length, joined, lengths, array_joined, array_lengths])
    assert pe.memory().num_tensors == before + 1  # the input
    model.dispose()


def test_ragged_ops_run_in_a_graph_as_the_engine_ops_do(tmp_path):
    """TF.js 4.22's converter never registers its ragged op list (tf.loadGraphModel says "Unknown op 'RaggedRange'"),
    so these are checked against the engine's ops, which tests/test_tfjs_graph_ops.py checks against TF.js."""
    i32 = {"dtype": {"type": "DT_INT32"}}
    nodes = [
        {"name": "starts", "op": "Placeholder", "attr": {**i32, "shape": {"shape": {"dim": [{"size": "2"}]}}}},
        *({"name": n, "op": "Const", "attr": i32} for n in ("limits", "deltas", "shape", "default", "at")),
        {"name": "range", "op": "RaggedRange", "input": ["starts", "limits", "deltas"]},
        {
            "name": "gather",
            "op": "RaggedGather",
            "input": ["range:0", "range:1", "at"],
            "attr": {"OUTPUT_RAGGED_RANK": {"i": "1"}, "PARAMS_RAGGED_RANK": {"i": "1"}},
        },
        {
            "name": "dense",
            "op": "RaggedTensorToTensor",
            "input": ["shape", "gather:1", "default", "gather:0"],
            "attr": {"row_partition_types": {"list": {"s": [base64.b64encode(b"ROW_SPLITS").decode()]}}},
        },
    ]
    limits, deltas, shape, default, at = [3, 9], [1, 2], [2, 4], -1, [1, 0]
    weights = [
        (n, np.array(v, np.int32))
        for n, v in zip(("limits", "deltas", "shape", "default", "at"), (limits, deltas, shape, default, at))
    ]
    model = load(write_graph_model(tmp_path, nodes, weights))
    starts = pe.tensor(np.array([0, 5], np.int32))
    got = asyncio.run(model.execute_async(starts, "dense"))
    with pe.scope():
        splits, values = pe.ragged_range(starts, pe.tensor(limits), pe.tensor(deltas))
        out_splits, out_values = pe.ragged_gather([splits], values, pe.tensor(at), 1)
        expected = pe.ragged_tensor_to_tensor(
            pe.tensor(shape), out_values, pe.tensor(default), out_splits, ["ROW_SPLITS"]
        )
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
    assert got.tolist() == [[5, 7, -1, -1], [0, 1, 2, -1]]
    model.dispose()


# ---- errors ------------------------------------------------------------------------------------------------------


def test_bad_inputs_say_what_was_expected_and_leak_nothing(graph_models, liveness):
    x = photo_for(graph_models, "liveness")
    flat, ints = pe.reshape(x, (1, 32, 96)), pe.cast(x, "int32")
    before = pe.memory().num_tensors
    with pytest.raises(ValueError, match=r"no node 'image'.*'conv2d_1_input'"):
        liveness.execute({"image": x})
    with pytest.raises(pe.ShapeError, match=r"'conv2d_1_input' must have shape \[-1, 32, 32, 3\].*got \[1, 32, 96\]"):
        liveness.execute(flat)
    with pytest.raises(pe.DTypeError, match="must be float32, got int32"):
        liveness.execute(ints)
    with pytest.raises(ValueError, match=r"has 1 input\(s\).*got 2"):
        liveness.execute([x, x])
    with pytest.raises(ValueError, match="no node 'nope'"):
        liveness.execute(x, "nope")
    with pytest.raises(TypeError, match="inputs must be a Tensor, a list or a dict"):
        liveness.execute(x.numpy())
    assert pe.memory().num_tensors == before


def failing_load(path, pattern):
    before = pe.memory().num_tensors
    with pytest.raises(ModelLoadError, match=pattern):
        load(path)
    assert pe.memory().num_tensors == before


def test_missing_or_corrupt_files_name_the_file(graph_models, tmp_path):
    folder = tmp_path / "emotion"
    shutil.copytree(graph_models / "emotion", folder)
    shard = folder / json.loads((folder / "model.json").read_text())["weightsManifest"][0]["paths"][0]
    data = shard.read_bytes()
    shard.write_bytes(data[:-100])
    failing_load(folder, r"shard 'emotion.bin' is truncated")
    shard.unlink()
    failing_load(folder, r"shard 'emotion.bin' is missing: there is no file")
    (folder / "model.json").write_text("{not json")
    failing_load(folder, r"model.json is not valid JSON")
    failing_load(tmp_path / "nowhere", r"model.json is missing")


def test_a_model_in_memory_loads_as_from_its_files_and_bad_bytes_are_named(tmp_path):
    """graph_model.from_bytes (model.json's and the shards' bytes, already in memory) parses, checks and unpacks as
    load_graph_model does, and refuses what it refuses, leaving nothing allocated."""
    dense_graph(tmp_path, quantization=("float16", "uint8"))
    model_json, shard = (tmp_path / "model.json").read_bytes(), (tmp_path / "weights.bin").read_bytes()
    x = pe.tensor([[0.5, -1.0, 2.0]])
    from_files, in_memory = load(tmp_path), graph_model.from_bytes(model_json, [shard])
    np.testing.assert_array_equal(in_memory.execute(x).numpy(), from_files.execute(x).numpy())
    assert in_memory.outputs == from_files.outputs and in_memory.metadata == from_files.metadata
    for model in (from_files, in_memory):
        model.dispose()
    before = pe.memory().num_tensors
    for args, pattern in [
        ((model_json, [shard[:-1]]), r"shard 'weights.bin' is truncated"),
        ((model_json, [shard, shard]), r"the weights manifest lists 1 shard\(s\), 2 were given"),
        ((b"{not json", [shard]), r"model.json is not valid JSON"),
    ]:
        with pytest.raises(ModelLoadError, match=pattern):
            graph_model.from_bytes(*args)
    assert pe.memory().num_tensors == before


def test_an_op_the_engine_lacks_is_named_with_its_nodes_at_load(tmp_path):
    dense_graph(tmp_path)
    artifacts = json.loads((tmp_path / "model.json").read_text())
    artifacts["modelTopology"]["node"][5]["op"] = "Selu2"
    artifacts["modelTopology"]["node"][3]["op"] = "SparseMatMulX"
    (tmp_path / "model.json").write_text(json.dumps(artifacts))
    failing_load(tmp_path, r"ops this engine cannot run: Selu2 \(node 'relu'\); SparseMatMulX \(node 'mm'\)")


def test_a_layers_model_or_a_broken_graph_is_refused_clearly(tmp_path):
    dense_graph(tmp_path)
    artifacts = json.loads((tmp_path / "model.json").read_text())
    artifacts["format"] = "layers-model"
    (tmp_path / "model.json").write_text(json.dumps(artifacts))
    failing_load(tmp_path, r"format is 'layers-model'; this loader reads 'graph-model'")
    artifacts["format"] = "graph-model"
    artifacts["modelTopology"]["node"][3]["input"] = ["x", "v"]
    (tmp_path / "model.json").write_text(json.dumps(artifacts))
    failing_load(tmp_path, r"node 'mm' \(MatMul\) reads 'v:0', which no node makes")
    artifacts["modelTopology"]["node"][3]["input"] = ["x", "w"]
    artifacts["weightsManifest"][0]["weights"][1]["name"] = "bias"
    (tmp_path / "model.json").write_text(json.dumps(artifacts))
    failing_load(tmp_path, r"Const node\(s\) 'b' have no weight")


def test_a_weights_value_attr_is_not_read_and_an_unreadable_attr_is_named_at_load(tmp_path):
    """A Const with a weight takes its value from the weight, as in TF.js: its `value` attr (a shape without values
    in converted graphs) is not read; any other attr that cannot be read is named with its node."""
    w, _ = dense_graph(tmp_path)
    artifacts = json.loads((tmp_path / "model.json").read_text())
    artifacts["modelTopology"]["node"][1]["attr"]["value"] = {"tensor": {"dtype": "DT_STRING"}}  # w has a weight
    (tmp_path / "model.json").write_text(json.dumps(artifacts))
    model = load(tmp_path)
    np.testing.assert_array_equal(model.weights["w"].numpy(), w)
    assert len(model.host_values()) == 2  # w's and b's values, small enough to stay on the host too
    model.dispose()
    assert model.host_values() == {}  # nor does a disposed model keep them
    artifacts["modelTopology"]["node"][3]["attr"]["transpose_a"] = {"list": {"i": ["one"]}}
    (tmp_path / "model.json").write_text(json.dumps(artifacts))
    failing_load(tmp_path, r"node 'mm' \(MatMul\) has an unreadable attr 'transpose_a'")
    artifacts["modelTopology"]["node"][3]["attr"]["transpose_a"] = {"b": False}
    artifacts["weightsManifest"][0]["weights"][0]["name"] = "weight"  # w has none now: its value attr is read
    (tmp_path / "model.json").write_text(json.dumps(artifacts))
    failing_load(tmp_path, r"node 'w' \(Const\) has an unreadable attr 'value'")


def test_a_while_loop_fills_a_tensor_list_with_what_its_body_computes(tmp_path):
    """A TensorList as a While's loop variable, its items computed in the body (row i of x, doubled): they outlive
    the body's run, and the run leaves nothing behind. TF.js 4.22 disposes a function's intermediates when it
    returns, these items too, so it cannot run this graph: test_graph_model_ops.py's `while_list` is the TF.js
    comparison, with items the body is given."""
    args = [
        {"name": "i", "type": "DT_INT32"},
        {"name": "items", "type": "DT_VARIANT"},
        {"name": "x", "type": "DT_FLOAT"},
    ]
    cond = {
        "signature": {"name": "more", "inputArg": args, "outputArg": [{"name": "holds", "type": "DT_BOOL"}]},
        "nodeDef": [
            {"name": "count", "op": "Const", "attr": {"dtype": {"type": "DT_INT32"}}},
            {"name": "less", "op": "Less", "input": ["i", "count:output:0"]},
        ],
        "ret": {"holds": "less:z:0"},
    }
    body = {
        "signature": {"name": "fill", "inputArg": args, "outputArg": args},
        "nodeDef": [
            {"name": "step", "op": "Const", "attr": {"dtype": {"type": "DT_INT32"}}},
            {"name": "axis", "op": "Const", "attr": {"dtype": {"type": "DT_INT32"}}},
            {"name": "row", "op": "GatherV2", "input": ["x", "i", "axis:output:0"]},
            {"name": "doubled", "op": "AddV2", "input": ["row:output:0", "row:output:0"]},
            {"name": "set", "op": "TensorListSetItem", "input": ["items", "i", "doubled:z:0"]},
            {"name": "next_i", "op": "AddV2", "input": ["i", "step:output:0"]},
        ],
        "ret": {"i": "next_i:z:0", "items": "set:output_handle:0", "x": "x"},
    }
    shape = {"shape": {"dim": [{"size": "3"}, {"size": "2"}]}}
    nodes = [
        {"name": "x", "op": "Placeholder", "attr": {"dtype": {"type": "DT_FLOAT"}, "shape": shape}},
        {"name": "element_shape", "op": "Const", "attr": {"dtype": {"type": "DT_INT32"}}},
        {"name": "three", "op": "Const", "attr": {"dtype": {"type": "DT_INT32"}}},
        {"name": "zero", "op": "Const", "attr": {"dtype": {"type": "DT_INT32"}}},
        {"name": "reserve", "op": "TensorListReserve", "input": ["element_shape", "three"]},
        {
            "name": "loop",
            "op": "StatelessWhile",
            "input": ["zero", "reserve", "x"],
            "attr": {"cond": {"func": {"name": "more"}}, "body": {"func": {"name": "fill"}}},
        },
        {"name": "stack", "op": "TensorListStack", "input": ["loop:1", "element_shape"]},
    ]
    weights = [
        ("element_shape", np.array([2], np.int32)),
        ("three", np.array(3, np.int32)),
        ("zero", np.array(0, np.int32)),
        ("count", np.array(3, np.int32)),
        ("step", np.array(1, np.int32)),
        ("axis", np.array(0, np.int32)),
    ]
    model = load(write_graph_model(tmp_path, nodes, weights, [cond, body]))
    x = pe.tensor(np.arange(6, dtype=np.float32).reshape(3, 2))
    before = pe.memory().num_tensors
    for _ in range(3):
        stacked = asyncio.run(model.execute_async(x, "stack"))
        np.testing.assert_array_equal(stacked.numpy(), 2 * x.numpy())
        stacked.dispose()
        assert pe.memory().num_tensors == before
    model.dispose()


def test_an_if_calling_a_function_the_library_lacks_is_refused_at_load(tmp_path):
    shape = {"shape": {"dim": [{"size": "2"}]}}
    nodes = [
        {"name": "x", "op": "Placeholder", "attr": {"dtype": {"type": "DT_FLOAT"}, "shape": shape}},
        {"name": "p", "op": "Placeholder", "attr": {"dtype": {"type": "DT_BOOL"}, "shape": {"shape": {}}}},
        {
            "name": "branch",
            "op": "StatelessIf",
            "input": ["p", "x"],
            "attr": {"then_branch": {"func": {"name": "twice"}}, "else_branch": {"func": {"name": "nope"}}},
        },
    ]
    twice = {
        "signature": {
            "name": "twice",
            "inputArg": [{"name": "a", "type": "DT_FLOAT"}],
            "outputArg": [{"name": "b", "type": "DT_FLOAT"}],
        },
        "nodeDef": [{"name": "sum", "op": "AddV2", "input": ["a", "a"]}],
        "ret": {"b": "sum:z:0"},
    }
    write_graph_model(tmp_path, nodes, [], [twice])
    failing_load(tmp_path, r"node 'branch' \(StatelessIf\) calls the function 'nope', which the graph's library lacks")
    nodes[2]["attr"]["else_branch"] = {"func": {"name": "twice"}}
    write_graph_model(tmp_path, nodes, [], [twice])
    model = load(tmp_path)
    x, p = pe.tensor([1.5, -2.0]), pe.tensor(True)
    with pytest.raises(RuntimeError, match=r"'branch' \(StatelessIf\).*use `await model.execute_async"):
        model.execute([x, p])
    assert asyncio.run(model.execute_async([x, p])).tolist() == [3.0, -4.0]
    model.dispose()


# ---- GPU: warm-up compiles everything, each execute is one replayed submission -----------------------------------


def test_webgpu_execute_warms_up_then_replays_one_submission_per_run(graph_models, gpu):
    with pe.on_backend("numpy"):
        host = load(graph_models / "liveness")
        x = photo_for(graph_models, "liveness")
        expected = host.execute(x).numpy()
        host.dispose()
    model = load(graph_models / "liveness")
    assert asyncio.run(pe.warmup(model.execute, x)) > 0
    compiles = pe.stats()["pipeline_compiles"]
    first = model.execute(x)  # recorded
    np.testing.assert_allclose(first.numpy(), expected, rtol=1e-4, atol=1e-5)
    for _ in range(2):
        before = pe.stats()
        y = model.execute(x)
        after = pe.stats()
        assert after["submits"] - before["submits"] == 1
        assert after["capture_replays"] - before["capture_replays"] == 1
        np.testing.assert_allclose(y.numpy(), expected, rtol=1e-4, atol=1e-5)
    assert pe.stats()["pipeline_compiles"] == compiles
    model.dispose()
