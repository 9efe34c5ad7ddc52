"""The TF.js layers format: the writer, save and load round trips, shards, progress, and every load error."""

import asyncio
import functools
import hashlib
import http.server
import itertools
import json
import os
import pathlib
import sys
import threading
import types

import numpy as np
import pytest

import py_engine as pe
from py_engine.io import fetch, weights_manifest
from py_engine.io.errors import ModelLoadError
from py_engine.io.save import write_layers_model
from tests.test_models import conv_net, images

L = pe.layers


def load(path, **kwargs):
    return asyncio.run(pe.load_layers_model(path, **kwargs))


def read_json(folder):
    with open(os.path.join(folder, "model.json")) as f:
        return json.load(f)


def write_json(folder, artifacts):
    with open(os.path.join(folder, "model.json"), "w") as f:
        json.dump(artifacts, f)


@pytest.fixture
def saved(tmp_path):
    """(folder, model, its predictions on images()) for conv_net (1432 bytes of weights) saved in 3 shards."""
    model = conv_net()
    want = model.predict(images()).numpy()
    model.save(str(tmp_path), max_shard_bytes=600)
    yield str(tmp_path), model, want
    model.dispose()


def test_the_writer_cuts_one_group_into_shards(tmp_path):
    # app.convert writes a topology and weights it has not built into a model
    named = [("a/kernel", np.arange(300, dtype=np.float32).reshape(10, 30)), ("b/bias", np.arange(7, dtype=np.int32))]
    named.append(("c/gamma", np.full((2, 2), 0.5, np.float32)))
    topology = {"class_name": "Model", "config": {"layers": []}}
    result = write_layers_model(tmp_path, topology, named, max_shard_bytes=500, converted_by="test")
    artifacts = read_json(tmp_path)
    assert artifacts["format"] == "layers-model" and artifacts["modelTopology"] == topology
    assert artifacts["convertedBy"] == "test" and "trainingConfig" not in artifacts
    (group,) = artifacts["weightsManifest"]
    assert group["paths"] == [f"group1-shard{i}of3.bin" for i in (1, 2, 3)]
    assert result["shards"] == [str(tmp_path / p) for p in group["paths"]]
    assert group["weights"] == [
        {"name": "a/kernel", "shape": [10, 30], "dtype": "float32"},
        {"name": "b/bias", "shape": [7], "dtype": "int32"},
        {"name": "c/gamma", "shape": [2, 2], "dtype": "float32"},
    ]
    blobs = [(tmp_path / p).read_bytes() for p in group["paths"]]
    assert [len(b) for b in blobs] == group["sizes"] == [500, 500, 1200 + 28 + 16 - 1000]
    assert group["sha256"] == [hashlib.sha256(b).hexdigest() for b in blobs]
    assert b"".join(blobs) == b"".join(v.astype(v.dtype.newbyteorder("<")).tobytes() for _, v in named)
    assert result["weight_bytes"] == 1244


def test_the_writer_cuts_at_bytes_and_refuses_what_it_cannot_store(tmp_path):
    manifest, shards = weights_manifest.pack([("w", np.arange(3, dtype=np.int32))], 5)
    assert shards == [b"\0\0\0\0\1", b"\0\0\0\2\0", b"\0\0"] and manifest[0]["sizes"] == [5, 5, 2]
    assert weights_manifest.pack([("w", np.zeros(0, np.float32))])[1] == [b""]  # no bytes: one empty shard
    assert weights_manifest.pack([]) == ([], [])  # no weights: no group
    with pytest.raises(ValueError, match="max_shard_bytes must be a positive int, got 0"):
        write_layers_model(tmp_path, {}, [("w", np.zeros(2, np.float32))], max_shard_bytes=0)
    with pytest.raises(ValueError, match="weight 'w' has dtype float64"):
        write_layers_model(tmp_path, {}, [("w", np.zeros(2))])
    with pytest.raises(ValueError, match="weight names must be unique"):
        write_layers_model(tmp_path, {}, [("w", np.zeros(2, np.float32))] * 2)
    assert list(tmp_path.iterdir()) == []  # nothing written


class HeldBody:
    """What unpack uses of a body still in the browser's memory (fetch.JsBody): its length and copy_into; counts the
    copies out of it."""

    def __init__(self, data):
        self.data, self.copies = data, 0

    def __len__(self):
        return len(self.data)

    def copy_into(self, dest, start):
        self.copies += 1
        dest[:] = np.frombuffer(self.data, np.uint8, dest.size, start)


def test_quantized_weights_unpack_alike_from_bytes_and_from_bodies_held_in_the_browser():
    rng = np.random.default_rng(0)
    halves, codes, ints = rng.normal(size=(3, 5)).astype(np.float16), np.arange(7, dtype=np.uint8), np.arange(3)
    data = halves.tobytes() + codes.tobytes() + ints.astype("<i4").tobytes() + halves[0].tobytes() + halves[1].tobytes()
    specs = [
        {"name": "h", "shape": [3, 5], "dtype": "float32", "quantization": {"dtype": "float16"}},
        {"name": "empty", "shape": [0], "dtype": "float32", "quantization": {"dtype": "float16"}},
        {"name": "q", "shape": [7], "dtype": "float32", "quantization": {"dtype": "uint8", "min": -1.0, "scale": 0.5}},
        {"name": "i", "shape": [3], "dtype": "int32"},
        {"name": "row", "shape": [5], "dtype": "float32", "quantization": {"dtype": "float16"}},
        {"name": "row2", "shape": [1, 5], "dtype": "float32", "quantization": {"dtype": "float16"}},
    ]
    cuts = [0, 11, 33, len(data)]  # "h" spans the first two shards, "q" the last two; "row" and "row2" lie in the last
    pieces = [data[a:b] for a, b in itertools.pairwise(cuts)]
    held = [HeldBody(p) for p in pieces]
    for arrays in (
        weights_manifest.unpack({"weights": specs}, pieces),
        weights_manifest.unpack({"weights": specs}, held),
    ):
        np.testing.assert_array_equal(arrays["h"], halves.astype(np.float32))
        np.testing.assert_array_equal(arrays["q"], codes * 0.5 - 1.0)
        np.testing.assert_array_equal(arrays["i"], ints)
        np.testing.assert_array_equal(arrays["row"], halves[0].astype(np.float32))
        np.testing.assert_array_equal(arrays["row2"], halves[1:2].astype(np.float32))
        assert arrays["empty"].shape == (0,) and arrays["h"].dtype == arrays["q"].dtype == np.float32
        assert list(arrays) == [spec["name"] for spec in specs]
        # each weight an array of its own, or a view of the float32 values of the float16 weights beside it
        assert arrays["row"].base is arrays["row2"].base is not None and arrays["row"].base.flags.owndata
        assert all(a.flags.writeable and (a.flags.owndata or a.base is arrays["row"].base) for a in arrays.values())
    assert [body.copies for body in held] == [1, 1, 1]  # a quantized group's bodies come out whole, once each


class Chunk:
    """What fetch.JsBody uses of a Uint8Array the browser's fetch gave: its length, and subarray(a, b).assign_to."""

    def __init__(self, data):
        self.data, self.length = data, len(data)

    def subarray(self, start, end):
        return types.SimpleNamespace(
            assign_to=lambda dest: dest.__setitem__(..., np.frombuffer(self.data[start:end], np.uint8))
        )


def test_a_body_held_in_the_chunks_it_arrived_in_copies_out_any_range():
    data = bytes(range(256)) * 3
    cuts = [0, 100, 101, 400, 768]
    body = fetch.JsBody([Chunk(data[a:b]) for a, b in itertools.pairwise(cuts)])
    assert len(body) == len(data) and len(fetch.JsBody([])) == 0
    for start, size in [(0, 768), (0, 100), (99, 3), (100, 1), (101, 299), (350, 418), (767, 1), (5, 0)]:
        dest = np.zeros(size, np.uint8)
        body.copy_into(dest, start)
        assert dest.tobytes() == data[start : start + size], (start, size)


def test_round_trip_single_shard(tmp_path):
    model = conv_net()
    result = model.save(str(tmp_path), converted_by="test")
    artifacts = read_json(tmp_path)
    assert artifacts["format"] == "layers-model" and artifacts["generatedBy"].startswith("py_engine")
    assert artifacts["convertedBy"] == "test"
    topology = artifacts["modelTopology"]
    assert set(topology) == {"class_name", "config", "keras_version", "backend"} and topology["class_name"] == "Model"
    (group,) = artifacts["weightsManifest"]
    assert group["paths"] == ["group1-shard1of1.bin"] and result["shards"] == [str(tmp_path / "group1-shard1of1.bin")]
    assert [w["name"] for w in group["weights"]] == model.weight_names
    assert all(w["dtype"] == "float32" for w in group["weights"])
    data = (tmp_path / "group1-shard1of1.bin").read_bytes()
    assert group["sha256"] == [hashlib.sha256(data).hexdigest()] and group["sizes"] == [len(data)]
    assert data == b"".join(w.astype("<f4").tobytes() for w in model.get_weights())  # manifest order, little-endian
    loaded = load(str(tmp_path))
    assert loaded.weight_names == model.weight_names and loaded.get_config() == model.get_config()
    for a, b in zip(loaded.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(loaded.predict(images()).numpy(), model.predict(images()).numpy(), rtol=1e-6)
    assert loaded.weights[0].name == "stem/kernel_1"  # the original model still holds "stem/kernel"
    loaded.dispose()
    model.dispose()


def test_round_trip_many_shards(saved):
    folder, model, want = saved
    group = read_json(folder)["weightsManifest"][0]
    total = sum(w.nbytes for w in model.get_weights())
    count = -(-total // 600)
    assert count == 3
    assert group["paths"] == [f"group1-shard{k}of{count}.bin" for k in range(1, count + 1)]
    sizes = [os.path.getsize(os.path.join(folder, p)) for p in group["paths"]]
    assert sizes == [600] * (count - 1) + [total - 600 * (count - 1)]  # cut at byte boundaries, as TF.js
    progress = []
    loaded = load(folder, on_progress=lambda done, of: progress.append((done, of)))
    np.testing.assert_allclose(loaded.predict(images()).numpy(), want, rtol=1e-6)
    assert progress[0] == (0, total) and progress[-1] == (total, total) and len(progress) == count + 1
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(progress)) and {of for _, of in progress} == {total}
    loaded.dispose()
    model.save(folder)  # saving again into the folder removes the shards it no longer needs
    assert sorted(os.listdir(folder)) == ["group1-shard1of1.bin", "model.json"]


def test_load_from_file_url_json_path_and_sequential(tmp_path):
    model = pe.Sequential([L.Dense(3, input_shape=(4,), activation="relu", name="h"), L.Dense(2, name="o")], name="mlp")
    model.save("file://" + str(tmp_path))
    x = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32)
    want = model.predict(x).numpy()
    assert read_json(tmp_path)["modelTopology"]["config"]["layers"][0]["config"]["batch_input_shape"] == [None, 4]
    for where in ("file://" + str(tmp_path / "model.json"), str(tmp_path / "model.json")):
        loaded = load(where)
        assert isinstance(loaded, pe.Sequential) and loaded.name == "mlp"
        np.testing.assert_allclose(loaded.predict(x).numpy(), want, rtol=1e-6)
        loaded.dispose()
    model.dispose()


def test_async_progress_callback(saved):
    folder = saved[0]
    seen = []

    async def on_progress(done, total):
        await asyncio.sleep(0)
        seen.append(done / total)

    loaded = load(folder, on_progress=on_progress)
    assert seen[0] == 0 and seen[-1] == 1
    loaded.dispose()


@pytest.fixture
def server(saved):
    """An HTTP server on localhost serving the saved folder; yields (base URL, folder, want)."""
    folder, _, want = saved

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=folder))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/", folder, want
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def test_load_over_http(server):
    url, folder, want = server
    for where in (url, url + "model.json"):
        loaded = load(where)
        np.testing.assert_allclose(loaded.predict(images()).numpy(), want, rtol=1e-6)
        loaded.dispose()
    os.remove(os.path.join(folder, "group1-shard2of3.bin"))
    failing_load(
        url, r"shard 'group1-shard2of3.bin' is missing: HTTP 404 .* from http://127.0.0.1:\d+/group1-shard2of3.bin"
    )
    failing_load(url + "nothing/model.json", r"model.json is missing: HTTP 404")


def test_an_http_error_carries_the_servers_explanation():
    """This app's server answers errors as {"error": ...}; the load error passes that sentence on."""

    class Failing(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"error": "model.json lists shard 'a.bin', which is not in the model's folder"})
            self.send_response(500)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        failing_load(
            f"http://127.0.0.1:{httpd.server_address[1]}/m/model.json",
            r"model.json could not be fetched: HTTP 500 .* \(the server says: model.json lists shard 'a.bin', which",
        )
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def failing_load(folder, match):
    """Loading must fail with `match` and leave no tensor or variable behind."""
    before = pe.memory().num_tensors
    with pytest.raises(ModelLoadError, match=match):
        load(folder)
    assert pe.memory().num_tensors == before


def test_weights_false_reads_model_json_alone(saved):
    folder, model, _ = saved
    for shard in pathlib.Path(folder).glob("*.bin"):
        shard.unlink()  # not needed: nothing but model.json is read
    progress = []
    outline = load(folder, on_progress=lambda *a: progress.append(a), weights=False)
    assert [w.shape for w in outline.weights] == [w.shape for w in model.weights]
    assert outline.weight_names == model.weight_names and progress == []
    assert all(not w.numpy().any() for w in outline.weights)
    outline.dispose()


def test_missing_shard(saved):
    folder = saved[0]
    os.remove(os.path.join(folder, "group1-shard3of3.bin"))
    failing_load(
        folder, r"load_layers_model\(.*model.json\): shard 'group1-shard3of3.bin' is missing: there is no file"
    )


def test_corrupt_shard(saved):
    folder = saved[0]
    path = pathlib.Path(folder, "group1-shard2of3.bin")
    data = bytearray(path.read_bytes())
    data[10] ^= 0xFF
    path.write_bytes(bytes(data))
    failing_load(folder, r"shard 'group1-shard2of3.bin' is corrupt: its sha256 is [0-9a-f]{64}, the manifest says")


def test_truncated_shard(saved):
    folder = saved[0]
    path = pathlib.Path(folder, "group1-shard1of3.bin")
    path.write_bytes(path.read_bytes()[:-7])
    failing_load(folder, r"shard 'group1-shard1of3.bin' is truncated: 593 bytes, the manifest says 600")
    artifacts = read_json(folder)
    del artifacts["weightsManifest"][0]["sizes"]  # with hashes only, the shard whose hash fails is named
    write_json(folder, artifacts)
    failing_load(
        folder,
        r"shard 'group1-shard1of3.bin' is truncated: the group's 3 shard\(s\) hold 1425 bytes, the weights .* need 1432",
    )
    del artifacts["weightsManifest"][0]["sha256"]  # as TF.js writes it: the group's total is all there is to check
    write_json(folder, artifacts)
    failing_load(folder, r"shards 'group1-shard1of3.bin', 'group1-shard2of3.bin', 'group1-shard3of3.bin' are truncated")


def test_weight_shapes_must_match_the_topology(saved):
    folder = saved[0]
    artifacts = read_json(folder)
    layers = artifacts["modelTopology"]["config"]["layers"]
    fc = next(entry for entry in layers if entry["name"] == "fc")
    fc["config"]["units"] = 5
    write_json(folder, artifacts)
    failing_load(
        folder,
        r"weight 'fc/kernel' has shape \[6, 4\] in the weights manifest, but the model's topology needs \[6, 5\]",
    )


def test_weight_count_must_match_the_topology(saved):
    folder = saved[0]
    artifacts = read_json(folder)
    project = next(entry for entry in artifacts["modelTopology"]["config"]["layers"] if entry["name"] == "project")
    project["config"]["use_bias"] = False
    write_json(folder, artifacts)
    failing_load(folder, r"the weights manifest has 1 weight\(s\) the model's topology does not use: 'project/bias'")
    project["config"]["use_bias"] = True
    artifacts["weightsManifest"][0]["weights"][-1]["name"] = "renamed"  # dw_bn/moving_variance is now missing
    write_json(folder, artifacts)
    failing_load(folder, r"weight '.*moving_variance' of shape \[6\] is missing from the weights manifest")


def test_unknown_layer_classes_are_named(saved):
    folder = saved[0]
    artifacts = read_json(folder)
    for entry in artifacts["modelTopology"]["config"]["layers"]:
        if entry["class_name"] in ("ReLU", "Activation"):
            entry["class_name"] = "Swish"
        if entry["name"] == "pool":
            entry["class_name"] = "SpatialPyramidPooling"
    write_json(folder, artifacts)
    failing_load(
        folder,
        r"unknown layer classes: 'Swish' \(layers 'stem_relu', 'dw_relu'\); 'SpatialPyramidPooling' \(layers 'pool'\)",
    )


def test_bad_model_json(tmp_path):
    failing_load(str(tmp_path), r"model.json is missing: there is no file")
    (tmp_path / "model.json").write_text("{not json")
    failing_load(str(tmp_path), "model.json is not valid JSON")
    write_json(tmp_path, {"format": "graph-model", "modelTopology": {}})
    failing_load(str(tmp_path), "format is 'graph-model'; this loader reads 'layers-model'")
    write_json(tmp_path, {"weightsManifest": []})
    failing_load(str(tmp_path), "no 'modelTopology'")


def test_unsupported_manifest_entries(saved):
    folder = saved[0]
    artifacts = read_json(folder)
    artifacts["weightsManifest"][0]["weights"][0]["dtype"] = "float16"
    write_json(folder, artifacts)
    failing_load(folder, r"weight 'stem/kernel' has dtype 'float16'; supported: float32, int32, bool")
    artifacts["weightsManifest"][0]["weights"][0]["dtype"] = "float32"
    artifacts["weightsManifest"][0]["weights"][0]["quantization"] = {"dtype": "int4", "scale": 1, "min": 0}
    write_json(folder, artifacts)
    failing_load(folder, "weight 'stem/kernel' has quantization dtype 'int4'; supported: uint8, uint16, float16")
    artifacts["weightsManifest"][0]["weights"][0]["quantization"] = {"dtype": "uint8"}
    write_json(folder, artifacts)
    failing_load(folder, "weight 'stem/kernel' is quantized to uint8 without numbers 'min' and 'scale'")
    del artifacts["weightsManifest"][0]["weights"][0]["quantization"]
    artifacts["weightsManifest"][0]["paths"][0] = "/etc/passwd"
    write_json(folder, artifacts)
    failing_load(folder, "shard path '/etc/passwd' must be relative to model.json")


def test_tfjs_saved_model_loads(tmp_path):
    """A model.json as TF.js 4.x writes it (weights in one "weights.bin", TF.js auto-names, no hashes)."""
    rng = np.random.default_rng(5)
    kernel, bias = rng.normal(size=(3, 3, 1, 2)).astype(np.float32), rng.normal(size=2).astype(np.float32)
    dense_k, dense_b = rng.normal(size=(18, 3)).astype(np.float32), rng.normal(size=3).astype(np.float32)
    init = {
        "class_name": "VarianceScaling",
        "config": {"scale": 1, "mode": "fan_avg", "distribution": "normal", "seed": None},
    }
    conv = {
        "filters": 2, "kernel_initializer": init, "kernel_regularizer": None, "kernel_constraint": None,
        "kernel_size": [3, 3], "strides": [1, 1], "padding": "valid", "data_format": "channels_last",
        "dilation_rate": [1, 1], "activation": "relu", "use_bias": True,
        "bias_initializer": {"class_name": "Zeros", "config": {}}, "bias_regularizer": None,
        "activity_regularizer": None, "bias_constraint": None, "name": "conv2d_Conv2D1", "trainable": True,
        "batch_input_shape": [None, 5, 5, 1], "dtype": "float32",
    }  # fmt: skip
    flatten = {"name": "flatten_Flatten1", "trainable": True, "data_format": "channels_last"}
    dense = {
        "units": 3, "activation": "softmax", "use_bias": True, "kernel_initializer": init,
        "bias_initializer": {"class_name": "Zeros", "config": {}}, "kernel_regularizer": None,
        "bias_regularizer": None, "activity_regularizer": None, "kernel_constraint": None, "bias_constraint": None,
        "name": "dense_Dense1", "trainable": True,
    }  # fmt: skip
    topology = {
        "class_name": "Sequential",
        "config": {
            "name": "sequential_1",
            "layers": [
                {"class_name": "Conv2D", "config": conv},
                {"class_name": "Flatten", "config": flatten},
                {"class_name": "Dense", "config": dense},
            ],
        },
        "keras_version": "tfjs-layers 4.22.0",
        "backend": "tensor_flow.js",
    }
    names = ["conv2d_Conv2D1/kernel", "conv2d_Conv2D1/bias", "dense_Dense1/kernel", "dense_Dense1/bias"]
    arrays = [kernel, bias, dense_k, dense_b]
    specs = [{"name": n, "shape": list(a.shape), "dtype": "float32"} for n, a in zip(names, arrays)]
    write_json(
        tmp_path,
        {
            "modelTopology": topology,
            "format": "layers-model",
            "generatedBy": "TensorFlow.js tfjs-layers v4.22.0",
            "convertedBy": None,
            "weightsManifest": [{"paths": ["./weights.bin"], "weights": specs}],
        },
    )
    (tmp_path / "weights.bin").write_bytes(b"".join(a.tobytes() for a in arrays))
    model = load(str(tmp_path))
    x = rng.normal(size=(2, 5, 5, 1)).astype(np.float32)
    from tests.test_layers import ref_conv

    h = np.maximum(ref_conv(x, kernel) + bias, 0).reshape(2, 18) @ dense_k + dense_b
    want = np.exp(h - h.max(1, keepdims=True))
    np.testing.assert_allclose(model.predict(x).numpy(), want / want.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    assert model.get_config()["layers"][0]["config"] == conv  # what TF.js wrote comes back unchanged
    model.dispose()


def test_browser_branch_fetches_relative_urls_with_the_browsers_fetch(saved, monkeypatch):
    """In Pyodide, URLs (relative ones too) go through the browser's fetch (js.fetch): exercised here with a
    stand-in."""
    folder, _, want = saved
    requested = []

    class Response:  # what the loader uses of a JS Response
        def __init__(self, data):
            self.ok = data is not None
            self.data = data if self.ok else b'{"error": "no such file", "status": 404}'  # as app/ answers
            self.status, self.statusText = (200, "OK") if self.ok else (404, "Not Found")

            # its body's stream gives the bytes in two chunks (one when short), Uint8Arrays' proxies
            half = len(self.data) // 2
            chunks = [self.data[:half], self.data[half:]] if half else [self.data]
            parts = [types.SimpleNamespace(done=False, value=Uint8Array(c)) for c in chunks]
            parts.append(types.SimpleNamespace(done=True, value=None))

            async def read():
                return parts.pop(0)

            self.body = types.SimpleNamespace(getReader=lambda: types.SimpleNamespace(read=read))

        async def arrayBuffer(self):  # the JS name
            return Uint8Array(self.data)

    class Uint8Array:  # what the loader uses of one: its length, set() to join chunks, to_bytes()
        def __init__(self, data):
            self.data, self.length = bytearray(data), len(data)

        @classmethod
        def new(cls, length):
            return cls(bytes(length))

        def set(self, chunk, at):
            self.data[at : at + chunk.length] = chunk.data

        def to_bytes(self):
            return bytes(self.data)

    async def fetch_url(url):
        requested.append(url)
        path = os.path.join(folder, url.removeprefix("models/convnet/"))
        return Response(pathlib.Path(path).read_bytes() if os.path.exists(path) else None)

    # a page served over plain HTTP from another host has no WebCrypto: the shards are hashed with hashlib
    js = types.ModuleType("js")
    js.Uint8Array, js.fetch = Uint8Array, fetch_url
    monkeypatch.setitem(sys.modules, "js", js)
    monkeypatch.setattr(fetch, "IN_BROWSER", True)
    loaded = load("models/convnet")
    assert requested == ["models/convnet/model.json"] + [f"models/convnet/group1-shard{k}of3.bin" for k in (1, 2, 3)]
    np.testing.assert_allclose(loaded.predict(images()).numpy(), want, rtol=1e-6)
    loaded.dispose()
    os.remove(os.path.join(folder, "group1-shard1of3.bin"))
    failing_load(
        "models/convnet/model.json",
        r"shard 'group1-shard1of3.bin' is missing: HTTP 404 Not Found from models/convnet/group1-shard1of3.bin "
        r"\(the server says: no such file\)",
    )
