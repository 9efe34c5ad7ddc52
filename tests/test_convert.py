"""The EfficientNet-Lite0 converter (app/convert): the torch legacy reader on handcrafted files, the layout
conversions, the topology, the converted folder (written by py_engine's writer, tests/test_io.py), and the converted model against PyTorch's logits
(tests/fixtures/efficientnet_lite0_chelsea.npz, made once by scripts/make_reference_fixture.py)."""

import asyncio
import hashlib
import json
import pickle
import struct
from collections import Counter, OrderedDict
from pathlib import Path

import numpy as np
import pytest

import py_engine as pe
from app.__main__ import main
from app.convert import ConvertError, convert_model, efficientnet_lite, imagenet
from app.convert.keras_graph import conv_kernel, dense_kernel, depthwise_kernel
from app.convert.torch_legacy import MAGIC, TorchLegacyError, load, loads
from py_engine.io.weights_manifest import DEFAULT_SHARD_BYTES
from py_engine.window_output_size import same_padding

FIXTURE = Path(__file__).parent / "fixtures" / "efficientnet_lite0_chelsea.npz"
EXPECTED_TOP5 = [285, 282, 281, 287, 728]  # Egyptian cat, tiger cat, tabby, lynx, plastic bag

# --- a legacy torch file written opcode by opcode (no torch): see the format in app/convert/torch_legacy.py


def op_global(module, name):
    return b"c" + f"{module}\n{name}\n".encode()


def lit(value):
    return pickle.dumps(value, protocol=2)[2:-1]  # one value's opcodes, without PROTO and STOP


def persistent_storage(type_name, key, numel, view=None):
    fields = lit("storage") + op_global("torch", type_name) + lit(key) + lit("cpu") + lit(numel) + lit(view)
    return b"(" + fields + b"tQ"  # MARK ... TUPLE BINPERSID


def tensor(storage, offset, size, stride, rebuild="_rebuild_tensor_v2"):
    hooks = op_global("collections", "OrderedDict") + b")R"  # backward_hooks: OrderedDict()
    args = storage + lit(offset) + lit(tuple(size)) + lit(tuple(stride))
    if rebuild == "_rebuild_tensor_v2":
        args += lit(False) + hooks
    return op_global("torch._utils", rebuild) + b"(" + args + b"tR"


def parameter(data):
    hooks = op_global("collections", "OrderedDict") + b")R"
    return op_global("torch._utils", "_rebuild_parameter") + b"(" + data + lit(True) + hooks + b"tR"


def ordered_dict(items):
    return op_global("collections", "OrderedDict") + b")R(" + b"".join(lit(k) + v for k, v in items) + b"u"


def legacy_file(obj, storages, magic=MAGIC, little_endian=True, keys=None):
    order = "<" if little_endian else ">"
    info = {"protocol_version": 1001, "little_endian": little_endian, "type_sizes": {"short": 2, "int": 4, "long": 4}}
    data = b"".join(pickle.dumps(v, protocol=2) for v in (magic, 1001, info))
    data += b"\x80\x02" + obj + b"." + pickle.dumps(keys or [k for k, _ in storages], protocol=2)
    for _, array in storages:
        data += struct.pack(order + "q", array.size) + array.astype(array.dtype.newbyteorder(order)).tobytes()
    return data


def sample_file(little_endian=True):
    """Channels-last strides, a storage offset, two tensors on one storage, a 0-d int64, a storage view, a
    float16 parameter, an empty tensor."""
    floats = np.arange(40, dtype=np.float32) * 0.5
    longs = np.array([7], dtype=np.int64)
    halves = np.array([1.5, -2.0, 65504.0], dtype=np.float16)
    doubles = np.arange(10, dtype=np.float64)
    f = persistent_storage("FloatStorage", "f", 40)
    obj = ordered_dict(
        [
            ("conv.weight", tensor(f, 4, (2, 3, 2, 2), (1, 2, 12, 6))),  # NHWC memory, NCHW view
            ("bias", tensor(f, 30, (3,), (2,))),
            ("steps", tensor(persistent_storage("LongStorage", "l", 1), 0, (), ())),
            ("view", tensor(persistent_storage("DoubleStorage", "d", 10, ("dv", 4, 5)), 1, (2, 2), (2, 1))),
            ("half", parameter(tensor(persistent_storage("HalfStorage", "h", 3), 0, (3,), (1,)))),
            ("empty", tensor(f, 0, (0, 5), (5, 1), rebuild="_rebuild_tensor")),
        ]
    )
    storages = [("f", floats), ("l", longs), ("d", doubles), ("h", halves)]
    expected = {
        "conv.weight": np.lib.stride_tricks.as_strided(floats[4:], (2, 3, 2, 2), (4, 8, 48, 24)),
        "bias": floats[[30, 32, 34]],
        "steps": np.array(7, dtype=np.int64),
        "view": doubles[5:9].reshape(2, 2),
        "half": halves,
        "empty": np.zeros((0, 5), np.float32),
    }
    return legacy_file(obj, storages, little_endian=little_endian), expected


@pytest.mark.parametrize("little_endian", [True, False])
def test_legacy_reader_rebuilds_strided_tensors(little_endian):
    data, expected = sample_file(little_endian)
    state = loads(data)
    assert isinstance(state, OrderedDict) and list(state) == list(expected)
    for name, want in expected.items():
        got = state[name]
        assert got.dtype == want.dtype and got.shape == want.shape, name
        assert got.flags.c_contiguous and got.flags.owndata, name
        np.testing.assert_array_equal(got, want, err_msg=name)
    assert state["conv.weight"][1, 2, 0, 1] == 0.5 * (4 + 1 + 2 * 2 + 0 * 12 + 1 * 6)


def test_legacy_reader_from_disk(tmp_path):
    data, expected = sample_file()
    (tmp_path / "w.pth").write_bytes(data)
    np.testing.assert_array_equal(load(tmp_path / "w.pth")["bias"], expected["bias"])


def corrupt(data, old, new):
    assert data.count(old) == 1
    return data.replace(old, new)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: b"PK\x03\x04" + d, "zip format"),
        (lambda d: legacy_file(lit(1), [], magic=12345), "magic number 12345"),
        (lambda d: d[:-3], "truncated: storage h"),
        (lambda d: d + b"\0", "unexpected data after the last storage"),
        (lambda d: legacy_file(lit(1), [], keys=["x"]), "storage list names 1 storages, the object uses 0"),
        (
            lambda d: corrupt(d, b"ctorch\nLongStorage\n", b"ctorch\nQIntStorage\n"),
            r"refusing to load torch\.QIntStorage",
        ),
        (lambda d: d[:200], "not a readable legacy torch file"),
    ],
)
def test_legacy_reader_rejects_bad_files(make, message):
    data, _ = sample_file()
    with pytest.raises(TorchLegacyError, match=message):
        loads(make(data))


def test_legacy_reader_runs_no_code(tmp_path):
    marker = tmp_path / "pwned"
    evil = op_global("os", "system") + b"(" + lit(f"touch {marker}") + b"tR"
    with pytest.raises(TorchLegacyError, match=r"refusing to load os\.system"):
        loads(legacy_file(evil, []))
    assert not marker.exists()


def test_legacy_reader_checks_tensor_bounds():
    f = persistent_storage("FloatStorage", "f", 4)
    for size, stride, offset in [((2, 3), (3, 1), 0), ((4,), (1,), 1), ((2,), (-1,), 1)]:
        with pytest.raises(TorchLegacyError, match=r"reaches element|invalid strides"):
            loads(legacy_file(tensor(f, offset, size, stride), [("f", np.zeros(4, np.float32))]))
    with pytest.raises(TorchLegacyError, match="storage f holds 3 elements, the object says 4"):
        loads(legacy_file(tensor(f, 0, (1,), (1,)), [("f", np.zeros(3, np.float32))]))


# --- layouts and padding


def test_layout_conversions(rng):
    w = rng.standard_normal((8, 3, 5, 4)).astype(np.float32)  # torch conv [out, in, h, w]
    k = conv_kernel(w)
    assert k.shape == (5, 4, 3, 8) and k.flags.c_contiguous
    assert k[4, 1, 2, 6] == w[6, 2, 4, 1]
    dw = rng.standard_normal((6, 1, 3, 3)).astype(np.float32)
    kd = depthwise_kernel(dw)
    assert kd.shape == (3, 3, 6, 1) and kd[2, 0, 5, 0] == dw[5, 0, 2, 0]
    with pytest.raises(ValueError, match=r"depthwise weight must be \[channels, 1, h, w\], got \[6, 2, 3, 3\]"):
        depthwise_kernel(np.zeros((6, 2, 3, 3)))
    lin = rng.standard_normal((10, 4)).astype(np.float32)  # torch Linear [out, in]
    x = rng.standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_allclose(x @ dense_kernel(lin), x @ lin.T)


def test_conv_kernel_layout_computes_the_same_convolution(rng):
    """torch's cross-correlation in NCHW with [out, in, h, w] == ours in NHWC with the converted kernel."""
    x = rng.standard_normal((1, 3, 6, 7)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
    torch_out = np.einsum("nchwij,ocij->nohw", sliding(x, (2, 3), (3, 2)), w)
    ours = conv(x.transpose(0, 2, 3, 1), conv_kernel(w), 1, "valid")
    np.testing.assert_allclose(ours.transpose(0, 3, 1, 2), torch_out, rtol=1e-5, atol=1e-5)


def sliding(x, axes, window):
    return np.lib.stride_tricks.sliding_window_view(x, window, axis=axes)


@pytest.mark.parametrize(
    "size, kernel, stride, pads",
    [
        (224, 3, 2, (0, 1)),
        (112, 5, 2, (1, 2)),
        (56, 3, 1, (1, 1)),
        (14, 5, 1, (2, 2)),
        (225, 3, 2, (1, 1)),
        (7, 1, 1, (0, 0)),
    ],
)
def test_same_padding_puts_the_odd_pixel_last(size, kernel, stride, pads):
    assert same_padding(size, kernel, stride) == pads


# --- the real model


@pytest.fixture(scope="module")
def state():
    return load(efficientnet_lite.weights_path())


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    models = tmp_path_factory.mktemp("models")
    assert main(["convert", "efficientnet-lite0", "--models", str(models)]) == 0
    return models / "efficientnet-lite0"


def test_checkpoint_reads(state):
    assert len(state) == 296
    assert Counter(str(v.dtype) for v in state.values()) == {"float32": 247, "int64": 49}
    assert state["_conv_stem.weight"].shape == (32, 3, 3, 3) and state["_fc.weight"].shape == (1000, 1280)
    assert state["_blocks.15._depthwise_conv.weight"].shape == (1152, 1, 3, 3)


# What TF.js 4.22's model.toJSON() writes for each layer class (keys of "config")
TFJS_CONFIG_KEYS = {
    "InputLayer": "batch_input_shape dtype sparse name",
    "ZeroPadding2D": "padding data_format name trainable",
    "Conv2D": "filters kernel_initializer kernel_regularizer kernel_constraint kernel_size strides padding data_format "
    "dilation_rate activation use_bias bias_initializer bias_regularizer activity_regularizer bias_constraint name "
    "trainable",
    "DepthwiseConv2D": "kernel_size strides padding data_format dilation_rate activation use_bias bias_initializer "
    "bias_regularizer activity_regularizer bias_constraint name trainable depth_multiplier depthwise_initializer "
    "depthwise_regularizer depthwise_constraint",
    "BatchNormalization": "axis momentum epsilon center scale beta_initializer gamma_initializer "
    "moving_mean_initializer moving_variance_initializer beta_regularizer gamma_regularizer beta_constraint "
    "gamma_constraint name trainable",
    "ReLU": "max_value name trainable",
    "Add": "name trainable",
    "GlobalAveragePooling2D": "data_format name trainable",
    "Dropout": "rate noise_shape seed name trainable",
    "Dense": "units activation use_bias kernel_initializer bias_initializer kernel_regularizer bias_regularizer "
    "activity_regularizer kernel_constraint bias_constraint name trainable",
}


def test_topology(state):
    g = efficientnet_lite.build(state)
    layers = g.layers
    assert len(layers) == 149
    assert Counter(layer["class_name"] for layer in layers) == {
        "InputLayer": 1,
        "ZeroPadding2D": 5,
        "Conv2D": 33,
        "DepthwiseConv2D": 16,
        "BatchNormalization": 49,
        "ReLU": 33,
        "Add": 9,
        "GlobalAveragePooling2D": 1,
        "Dropout": 1,
        "Dense": 1,
    }
    seen = set()
    for layer in layers:
        assert set(layer["config"]) == set(TFJS_CONFIG_KEYS[layer["class_name"]].split()), layer["name"]
        assert layer["config"]["name"] == layer["name"] not in seen
        assert all(node[0] in seen for nodes in layer["inbound_nodes"] for node in nodes), layer["name"]
        seen.add(layer["name"])
    shapes = g.shapes
    assert shapes["stem_conv_pad"] == (225, 225, 3) and shapes["stem_conv"] == (112, 112, 32)
    assert shapes["block2a_dwconv_pad"] == (113, 113, 96) and shapes["block2a_dwconv"] == (56, 56, 96)
    assert shapes["block3a_dwconv_pad"] == (59, 59, 144) and shapes["block6a_dwconv"] == (7, 7, 672)
    assert shapes["block7a_project_bn"] == (7, 7, 320) and shapes["top_activation"] == (7, 7, 1280)
    assert shapes["avg_pool"] == (1280,) and shapes["predictions"] == (1000,)
    config = {layer["name"]: layer["config"] for layer in layers}
    assert config["stem_conv_pad"]["padding"] == [[0, 1], [0, 1]] and config["stem_conv"]["padding"] == "valid"
    assert config["block3a_dwconv_pad"]["padding"] == [[1, 2], [1, 2]]
    assert config["block5a_dwconv"]["padding"] == "same" and config["block5a_dwconv"]["kernel_size"] == [5, 5]
    assert config["stem_activation"]["max_value"] == 6 and config["stem_bn"]["epsilon"] == 1e-3
    assert config["top_dropout"]["rate"] == 0.2 and config["stem_conv"]["use_bias"] is False
    adds = [layer for layer in layers if layer["class_name"] == "Add"]
    assert [a["name"] for a in adds][:3] == ["block2b_add", "block3b_add", "block4b_add"]
    assert adds[0]["inbound_nodes"] == [[["block2b_project_bn", 0, 0, {}], ["block2a_project_bn", 0, 0, {}]]]
    topology = g.topology()
    assert topology["class_name"] == "Model"
    assert topology["config"]["input_layers"] == [["input", 0, 0]]
    assert topology["config"]["output_layers"] == [["predictions", 0, 0]]
    names = [n for n, _ in g.weights]
    assert len(names) == len(set(names)) == 247 and sum(v.size for _, v in g.weights) == 4_694_024
    weights = dict(g.weights)
    assert weights["block1a_dwconv/depthwise_kernel"].shape == (3, 3, 32, 1)
    assert weights["predictions/kernel"].shape == (1280, 1000) and weights["top_bn/moving_variance"].shape == (1280,)
    np.testing.assert_array_equal(weights["stem_conv/kernel"], state["_conv_stem.weight"].transpose(2, 3, 1, 0))


def test_build_rejects_other_checkpoints(state):
    with pytest.raises(ValueError, match=r"the state_dict has no '_blocks\.3\._expand_conv\.weight'"):
        efficientnet_lite.build({k: v for k, v in state.items() if k != "_blocks.3._expand_conv.weight"})
    with pytest.raises(ValueError, match=r"1 state_dict entries have no place in EfficientNet-Lite0: \['_extra'\]"):
        efficientnet_lite.build({**state, "_extra": np.zeros(1)})
    with pytest.raises(ValueError, match="block 2: expected a 3x3 depthwise convolution"):
        efficientnet_lite.build({**state, "_blocks.2._depthwise_conv.weight": np.zeros((144, 1, 5, 5))})


def test_converted_folder(converted):
    model = json.loads((converted / "model.json").read_text())
    assert model["format"] == "layers-model" and len(model["modelTopology"]["config"]["layers"]) == 149
    (group,) = model["weightsManifest"]
    sizes = [(converted / p).stat().st_size for p in group["paths"]]
    assert len(sizes) == 5 and max(sizes) <= DEFAULT_SHARD_BYTES and sum(sizes) == 4_694_024 * 4
    assert group["sizes"] == sizes
    assert group["sha256"] == [hashlib.sha256((converted / p).read_bytes()).hexdigest() for p in group["paths"]]
    labels = json.loads((converted / "labels.json").read_text())
    assert len(labels) == 1000 and all(isinstance(name, str) and name for name in labels)
    assert [labels[i] for i in EXPECTED_TOP5] == ["Egyptian cat", "tiger cat", "tabby", "lynx", "plastic bag"]
    meta = json.loads((converted / "metadata.json").read_text())
    assert meta["input"]["shape"] == [1, 224, 224, 3] and meta["input"]["mean"] == list(imagenet.MEAN)
    assert meta["input"]["std"] == list(imagenet.STD) and "[0,1]" in meta["input"]["scale"]
    assert meta["source"]["sha256"].startswith("57934424") and meta["shards"] == 5
    assert sorted(p.name for p in converted.parent.iterdir()) == ["efficientnet-lite0"]  # no staging left over


def test_convert_replaces_the_folder_whole(tmp_path, capsys):
    old = tmp_path / "efficientnet-lite0"
    old.mkdir()
    (old / "stale.bin").write_bytes(b"x")
    assert convert_model("efficientnet-lite0", tmp_path) == old
    assert "149 layers, 4,694,024 parameters, 5 shards" in capsys.readouterr().out
    assert not (old / "stale.bin").exists() and (old / "model.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["efficientnet-lite0"]


def test_convert_checks_the_checkpoint_hash(tmp_path):
    data = bytearray(efficientnet_lite.weights_path().read_bytes())
    data[-1] ^= 1
    source = tmp_path / "efficientnet-lite0-57934424.pth"
    source.write_bytes(data)
    with pytest.raises(ValueError, match=r"efficientnet-lite0-57934424\.pth is corrupt: its sha256 \w+ does not start"):
        efficientnet_lite.convert(tmp_path / "out", source)
    assert not (tmp_path / "out").exists()


def test_convert_errors(tmp_path, capsys):
    with pytest.raises(ConvertError, match="no converter for 'resnet50'; known: efficientnet-lite0"):
        convert_model("resnet50", tmp_path)
    (tmp_path / "file").write_text("")
    assert main(["convert", "efficientnet-lite0", "--models", str(tmp_path / "file")]) == 1
    assert "error: converting efficientnet-lite0:" in capsys.readouterr().err


def test_fixture_provenance():
    ref = np.load(FIXTURE)
    assert ref["input"].shape == (1, 224, 224, 3) and ref["input"].dtype == np.float32
    assert ref["logits"].shape == (1000,) and ref["logits"].dtype == np.float32
    assert ref["top5"].tolist() == list(np.argsort(-ref["logits"])[:5]) == EXPECTED_TOP5
    assert str(ref["provenance"]).startswith("torch 2.13.0")


def test_converted_model_matches_pytorch(converted):
    """A plain numpy forward pass over the written model.json and shards reproduces torch's logits."""
    ref = np.load(FIXTURE)
    logits = run_layers_model(converted, ref["input"])[0]
    assert np.abs(logits - ref["logits"]).max() <= 1e-3
    assert list(np.argsort(-logits)[:5]) == EXPECTED_TOP5


def test_converted_model_runs_in_the_engine(converted, each_backend):
    """py_engine's loader reads the folder (hashes checked) and its predict reproduces torch's logits."""
    ref = np.load(FIXTURE)
    model = asyncio.run(pe.load_layers_model(converted))
    try:
        y = model.predict(ref["input"])
        logits = y.numpy()[0]
        y.dispose()
    finally:
        model.dispose()
    assert np.abs(logits - ref["logits"]).max() <= 1e-3, each_backend
    assert list(np.argsort(-logits)[:5]) == EXPECTED_TOP5


# --- an independent numpy interpreter of the layers model.json: checks the files without the engine


def run_layers_model(folder: Path, x: np.ndarray) -> np.ndarray:
    model = json.loads((folder / "model.json").read_text())
    weights = {}
    for group in model["weightsManifest"]:
        data, offset = b"".join((folder / p).read_bytes() for p in group["paths"]), 0
        for spec in group["weights"]:
            n = int(np.prod(spec["shape"]))
            weights[spec["name"]] = np.frombuffer(data, "<f4", n, offset).reshape(spec["shape"])
            offset += 4 * n
    values = {}
    for layer in model["modelTopology"]["config"]["layers"]:
        c, name, kind = layer["config"], layer["name"], layer["class_name"]
        ins = [values[node[0]] for node in layer["inbound_nodes"][0]] if layer["inbound_nodes"] else [x]
        w = {k.split("/", 1)[1]: v for k, v in weights.items() if k.startswith(name + "/")}
        if kind == "ZeroPadding2D":
            y = np.pad(ins[0], ((0, 0), *map(tuple, c["padding"]), (0, 0)))
        elif kind in ("Conv2D", "DepthwiseConv2D"):
            depthwise = kind == "DepthwiseConv2D"
            kernel = w["depthwise_kernel" if depthwise else "kernel"]
            y = conv(ins[0], kernel, c["strides"][0], c["padding"], depthwise)
        elif kind == "BatchNormalization":
            y = (ins[0] - w["moving_mean"]) / np.sqrt(w["moving_variance"] + c["epsilon"]) * w["gamma"] + w["beta"]
        elif kind == "ReLU":
            y = np.clip(ins[0], 0, c["max_value"])
        elif kind == "Add":
            y = sum(ins)
        elif kind == "GlobalAveragePooling2D":
            y = ins[0].mean((1, 2))
        elif kind == "Dense":
            y = ins[0] @ w["kernel"] + w["bias"]
        else:  # InputLayer; Dropout is the identity at inference
            y = ins[0]
        values[name] = y.astype(np.float32)
    return values[model["modelTopology"]["config"]["output_layers"][0][0]]


def conv(x, kernel, stride, padding, depthwise=False):
    """NHWC convolution as a sum over kernel taps; "same" is TensorFlow's (odd pixel bottom/right)."""
    kh, kw = kernel.shape[:2]
    if padding == "same":
        pads = [same_padding(x.shape[a], k, stride) for a, k in ((1, kh), (2, kw))]
        x = np.pad(x, ((0, 0), *pads, (0, 0)))
    oh, ow = (x.shape[1] - kh) // stride + 1, (x.shape[2] - kw) // stride + 1
    out = 0
    for i in range(kh):
        for j in range(kw):
            tap = x[:, i : i + stride * (oh - 1) + 1 : stride, j : j + stride * (ow - 1) + 1 : stride]
            out = out + (tap * kernel[i, j, :, 0] if depthwise else tap @ kernel[i, j])
    return out
