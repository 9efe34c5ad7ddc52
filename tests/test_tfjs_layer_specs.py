"""Reshaping, merge, activation, noise, preprocessing and pooling layers against the real TensorFlow.js 4.22, both ways.

Each model below is a spec (Keras class names and snake_case configs, as a saved model.json has them).
tests/tfjs/layer_specs.mjs builds it with TF.js's own layer classes, gives it seeded weights, saves it and predicts
on the spec's inputs; here the engine loads what TF.js saved and must predict the same within 1e-5, on numpy and on
webgpu. The other way, the engine builds the same spec, saves it, and TF.js loads it and predicts the same. Several
input shapes per layer, and masks (from Masking) through the layers that take or pass them.
"""

import asyncio
import json

import numpy as np
import pytest

import py_engine as pe
from tests.tfjs_node import run_tfjs

TOLERANCE = 1e-5


def data(shape, seed, zero_steps=(), value=0.0):
    """Seeded normal inputs [batch, *shape]; zero_steps [(example, step)] are set to `value` (masked by Masking)."""
    x = np.random.default_rng(seed).normal(size=shape).astype(np.float32)
    for b, t in zero_steps:
        x[b, t] = value
    return x


def ids(shape, num_tokens, seed):
    return np.random.default_rng(seed).integers(0, num_tokens, shape).astype(np.float32)


def layer(class_name, inbound, **config):
    return {"class_name": class_name, "config": config, "inbound": list(inbound)}


# name -> (inputs {name: array with the batch axis}, layers, outputs); nodes are the inputs, then one per layer
SPECS = {
    "repeat_permute": (
        {"a": data((3, 4), 1), "b": data((3, 1), 2), "c": data((3, 2, 3), 3), "d": data((3, 2, 3, 4), 4)},
        [
            layer("RepeatVector", [0], n=3),
            layer("RepeatVector", [1], n=1),
            layer("Permute", [2], dims=[2, 1]),
            layer("Permute", [3], dims=[3, 1, 2]),
            layer("Permute", [3], dims=[1, 2, 3]),
        ],
        [4, 5, 6, 7, 8],
    ),
    "masking": (
        {
            "steps": data((4, 5, 3), 5, zero_steps=[(0, 4), (1, 2), (1, 3), (1, 4), (2, 0), (3, 1)]),
            "other": data((4, 4, 2), 6, zero_steps=[(0, 3), (2, 1), (3, 0)], value=1.5),
        },
        [
            layer("Masking", [0], mask_value=0.0),  # 2
            layer("SimpleRNN", [2], units=3, return_sequences=True),
            layer("Masking", [1], mask_value=1.5),  # 4
            layer("GRU", [4], units=2),
            layer("PReLU", [2]),  # 6: passes the mask on
            layer("LSTM", [6], units=2),
            layer("GaussianNoise", [2], stddev=0.5),  # 8: passes the mask on
            layer("GRU", [8], units=2, return_sequences=True),
            layer("Dense", [2], units=3),  # 10: [batch, 5, 3], with the steps' mask
            layer("Concatenate", [10, 2]),  # 11: the AND of the masks
            layer("SimpleRNN", [11], units=2, return_sequences=True),
            layer("Concatenate", [2, 10], axis=1),  # 13: along time, the masks follow each other
            layer("LSTM", [13], units=2, return_sequences=True),
            layer("Concatenate", [2, 0]),  # 15: one input unmasked
            layer("GRU", [15], units=2, return_sequences=True),
        ],
        [2, 3, 5, 7, 9, 12, 14, 16],
    ),
    "elementwise_merges": (
        {"a": data((3, 3), 7), "b": data((3, 3), 8), "c": data((3, 4, 3), 9), "d": data((3, 2, 4, 1), 10)},
        [
            layer("Multiply", [0, 1]),
            layer("Average", [0, 1, 2]),  # [batch, 3] broadcasts over [batch, 4, 3] (axes after the batch)
            layer("Maximum", [0, 1]),
            layer("Minimum", [0, 2]),
            layer("Multiply", [2, 3]),
            layer("Add", [1, 2]),
        ],
        [4, 5, 6, 7, 8, 9],
    ),
    "dot": (
        {
            "a": data((3, 4), 11),
            "b": data((3, 4), 12),
            "c": data((3, 3, 4), 13),
            "d": data((3, 5, 4), 14),
            "e": data((3, 4, 5), 15),
        },
        [
            layer("Dot", [0, 1], axes=1),
            layer("Dot", [0, 1], axes=-1, normalize=True),
            layer("Dot", [2, 3], axes=[2, 2]),
            layer("Dot", [2, 4], axes=[2, 1]),
            layer("Dot", [2, 2], axes=1),
            layer("Dot", [2, 0], axes=[2, 1]),
            layer("Dot", [0, 3], axes=[1, 2], normalize=True),
        ],
        [5, 6, 7, 8, 9, 10, 11],
    ),
    "activations": (
        {"a": data((4, 6), 16), "b": data((4, 3, 4, 2), 17)},
        [
            layer("LeakyReLU", [0], alpha=0.1),
            layer("LeakyReLU", [1]),
            layer("PReLU", [0]),
            layer(
                "PReLU", [1], shared_axes=[1, 2], alpha_initializer={"class_name": "Constant", "config": {"value": 0.2}}
            ),
            layer("ELU", [1]),
            layer("ThresholdedReLU", [0], theta=0.3),
            layer("Softmax", [1], axis=[1, 2]),
            layer("Softmax", [0]),
            layer("ReLU", [1], max_value=0.5),
        ],
        list(range(2, 11)),
    ),
    "noise": (
        {"a": data((3, 5, 3), 18)},
        [
            layer("GaussianNoise", [0], stddev=0.5),
            layer("GaussianDropout", [0], rate=0.3),
            layer("AlphaDropout", [0], rate=0.2),
            layer("SpatialDropout1D", [0], rate=0.4),
        ],
        [1, 2, 3, 4],
    ),
    "image_preprocessing": (
        {"img": data((2, 6, 7, 3), 19), "tall": data((2, 9, 5, 2), 20)},
        [
            layer("Rescaling", [0], scale=1 / 255, offset=-1.0),
            # TF.js's CenterCrop and CategoryEncoding overwrite their input's shape with their output's: each gets
            # its own input (an identity Permute, which makes a new shape), so no model input's shape changes in TF.js.
            layer("Permute", [0], dims=[1, 2, 3]),  # 3
            layer("CenterCrop", [3], height=4, width=5),
            layer("Permute", [0], dims=[1, 2, 3]),  # 5
            layer("CenterCrop", [5], height=6, width=6),  # a width 1 smaller: TF.js starts at column 1
            layer("Permute", [1], dims=[1, 2, 3]),  # 7
            layer("CenterCrop", [7], height=3, width=2),
            layer("Permute", [1], dims=[1, 2, 3]),  # 9
            layer("CenterCrop", [9], height=2, width=3),
        ],
        [2, 4, 6, 8, 10],
    ),
    "category_encoding": (
        {"tokens": ids((4, 5), 6, 21), "token": ids((4, 1), 7, 22)},
        [
            layer("Permute", [0], dims=[1]),  # 2
            layer("CategoryEncoding", [2], num_tokens=6, output_mode="multi_hot"),
            layer("Permute", [0], dims=[1]),  # 4
            layer("CategoryEncoding", [4], num_tokens=8, output_mode="count"),
            layer("Permute", [1], dims=[1]),  # 6
            layer("CategoryEncoding", [6], num_tokens=7, output_mode="one_hot"),
        ],
        [3, 5, 7],
    ),
    "cropping_upsampling": (
        {"img": data((2, 5, 6, 3), 23), "nchw": data((2, 3, 4, 5), 24)},
        [
            layer("Cropping2D", [0], cropping=[[1, 2], [0, 1]]),
            layer("Cropping2D", [0], cropping=1),
            layer("Cropping2D", [1], cropping=[1, 2], data_format="channels_first"),
            layer("UpSampling2D", [0], size=[2, 3]),
            layer("UpSampling2D", [0], size=[3, 2], interpolation="bilinear"),
            layer("UpSampling2D", [1], size=[2, 2], interpolation="bilinear", data_format="channels_first"),
            layer("UpSampling2D", [1], data_format="channels_first"),
        ],
        [2, 3, 4, 5, 6, 7, 8],
    ),
    "pooling": (
        {"seq": data((3, 7, 3), 25), "img": data((3, 5, 4, 3), 26)},
        [
            layer("MaxPooling1D", [0], pool_size=2),
            layer("MaxPooling1D", [0], pool_size=3, strides=2, padding="same"),
            layer("AveragePooling1D", [0], pool_size=3, strides=1, padding="same"),
            layer("AveragePooling1D", [0], pool_size=[2]),
            layer("GlobalMaxPooling1D", [0]),
            layer("GlobalMaxPooling2D", [1]),
            layer("GlobalMaxPooling2D", [1], data_format="channels_first"),
            layer("GlobalAveragePooling2D", [1], data_format="channels_first"),
        ],
        [2, 3, 4, 5, 6, 7, 8, 9],
    ),
}


def spec_json(name):
    inputs, layers, outputs = SPECS[name]
    return {
        "name": name,
        "seed": 100 + list(SPECS).index(name),
        "inputs": [
            {"name": key, "shape": list(x.shape[1:]), "data": {"shape": list(x.shape), "data": x.ravel().tolist()}}
            for key, x in inputs.items()
        ],
        "layers": layers,
        "outputs": outputs,
    }


def array(entry):
    return np.array(entry["data"], np.float32).reshape(entry["shape"])


def max_diffs(ours, theirs):
    ours = [o.numpy() if isinstance(o, pe.Tensor) else o for o in (ours if isinstance(ours, list) else [ours])]
    assert [o.shape for o in ours] == [t.shape for t in theirs]
    return [float(np.abs(o - t).max()) for o, t in zip(ours, theirs)]


@pytest.fixture(scope="module")
def saved_by_tfjs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("layer_specs_by_tfjs")
    (folder / "specs.json").write_text(json.dumps([spec_json(name) for name in SPECS]))
    run_tfjs("layer_specs.mjs", "build", folder / "specs.json", folder)
    return folder


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("name", SPECS)
def test_a_model_saved_by_tfjs_predicts_here_what_it_predicts_in_tfjs(saved_by_tfjs, name):
    inputs = list(SPECS[name][0].values())
    expected = [array(e) for e in json.loads((saved_by_tfjs / name / "io.json").read_text())["outputs"]]
    model = asyncio.run(pe.load_layers_model(saved_by_tfjs / name))
    try:
        predicted = model.predict(inputs if len(inputs) > 1 else inputs[0], batch_size=2)  # in two batches
        assert max(max_diffs(predicted, expected)) <= TOLERANCE, max_diffs(predicted, expected)
        pe.dispose(predicted)
    finally:
        model.dispose()


def built_here(name):
    """The spec's model built with this engine's layers, weights from a seeded numpy generator."""
    inputs, layers, outputs = SPECS[name]
    nodes = [pe.layers.Input(shape=x.shape[1:], name=key) for key, x in inputs.items()]
    for entry in layers:
        args = [nodes[k] for k in entry["inbound"]]
        nodes.append(pe.layers.deserialize(entry)(args if len(args) > 1 else args[0]))
    model = pe.Model(nodes[: len(inputs)], [nodes[k] for k in outputs], name=f"{name}_here")
    for k, w in enumerate(model.weights):
        w.assign(np.random.default_rng(k).uniform(-0.8, 0.8, w.shape).astype(np.float32))
    return model


def sequential_here():
    """A Sequential model (saved as TF.js's Sequential config) of layers that take and pass masks."""
    model = pe.Sequential(
        [
            pe.layers.Masking(input_shape=(5, 3)),
            pe.layers.PReLU(shared_axes=[1]),
            pe.layers.GaussianDropout(0.2),
            pe.layers.LSTM(3),
            pe.layers.RepeatVector(2),
            pe.layers.Permute([2, 1]),
            pe.layers.GlobalMaxPooling1D(),
        ],
        name="sequential_here",
    )
    for k, w in enumerate(model.weights):
        w.assign(np.random.default_rng(k).uniform(-0.8, 0.8, w.shape).astype(np.float32))
    return model


SEQUENTIAL_INPUT = data((3, 5, 3), 60, zero_steps=[(0, 4), (1, 0), (1, 3)])


def test_models_saved_here_predict_in_tfjs_what_they_predict_here(tmp_path):
    models = {name: built_here(name) for name in SPECS}
    models["sequential_here"] = sequential_here()
    try:
        ours = {}
        for name, model in models.items():
            model.save(tmp_path / name)
            inputs = list(SPECS[name][0].values()) if name in SPECS else [SEQUENTIAL_INPUT]
            entries = [{"shape": list(x.shape), "data": x.ravel().tolist()} for x in inputs]
            (tmp_path / name / "inputs.json").write_text(json.dumps(entries))
            ours[name] = model.predict(inputs if len(inputs) > 1 else inputs[0])
        run_tfjs("layer_specs.mjs", "predict", tmp_path)
        for name in models:
            theirs = [array(e) for e in json.loads((tmp_path / name / "outputs.json").read_text())]
            assert max(max_diffs(ours[name], theirs)) <= TOLERANCE, (name, max_diffs(ours[name], theirs))
            pe.dispose(ours[name])
    finally:
        for model in models.values():
            model.dispose()


# Layers TF.js 4.22 can only call on a tensor (inside a model their output shape loses the batch axis, or the call
# fails): (class name, config, input)
APPLIED = [
    ("Resizing", {"height": 7, "width": 3}, data((2, 4, 6, 3), 30)),
    ("Resizing", {"height": 3, "width": 8, "interpolation": "nearest"}, data((2, 5, 4, 2), 31)),
    ("Resizing", {"height": 9, "width": 9}, data((1, 2, 3, 1), 32)),
    ("CenterCrop", {"height": 9, "width": 5}, data((2, 4, 3, 2), 33)),  # larger: the whole image is resized
    ("CenterCrop", {"height": 5, "width": 2}, data((2, 4, 6, 2), 34)),  # taller: resized too
]


@pytest.mark.usefixtures("each_backend")
def test_layers_tfjs_only_calls_on_tensors_compute_here_what_they_compute_there(tmp_path):
    specs = [
        {"class_name": c, "config": config, "input": {"shape": list(x.shape), "data": x.ravel().tolist()}}
        for c, config, x in APPLIED
    ]
    (tmp_path / "applied.json").write_text(json.dumps(specs))
    run_tfjs("layer_specs.mjs", "apply", tmp_path / "applied.json", tmp_path / "outputs.json")
    theirs = [array(e) for e in json.loads((tmp_path / "outputs.json").read_text())]
    for (class_name, config, x), want in zip(APPLIED, theirs):
        t = pe.tensor(x)
        out = pe.layers.deserialize({"class_name": class_name, "config": config})(t)
        assert max_diffs(out, [want])[0] <= TOLERANCE, (class_name, config, max_diffs(out, [want]))
        pe.dispose([t, out])


# Training through the layers: (inputs, layers, output node); TF.js fits each with SGD on mean squared error
TRAINED = {
    "fit_sequence": (
        {"steps": data((10, 6, 3), 40, zero_steps=[(0, 5), (1, 4), (1, 5), (3, 0)])},
        [
            layer("Masking", [0]),  # 1
            layer("PReLU", [1], shared_axes=[1]),  # 2: passes the mask to the GRU
            layer("GRU", [2], units=3, return_sequences=True),  # 3
            layer("MaxPooling1D", [3], pool_size=2),  # 4
            # "valid": TF.js 4.22's average-pool gradient divides a window hanging over the edge by its full size
            layer("AveragePooling1D", [4], pool_size=2, strides=1),  # 5
            layer("GlobalMaxPooling1D", [5]),  # 6
            layer("Dense", [6], units=2),
        ],
        7,
    ),
    "fit_image": (
        {"img": data((10, 4, 5, 2), 41)},
        [
            layer("UpSampling2D", [0], size=[2, 1], interpolation="bilinear"),  # 1
            layer("Cropping2D", [1], cropping=[[1, 2], [1, 0]]),  # 2
            layer("Dense", [2], units=3),  # 3
            layer("PReLU", [3], shared_axes=[1, 2], trainable=False, name="frozen_prelu"),  # 4
            layer("Permute", [4], dims=[3, 1, 2]),  # 5
            layer("GlobalMaxPooling2D", [5], data_format="channels_first"),  # 6
            layer("Dense", [6], units=2),
        ],
        7,
    ),
    "fit_merges": (
        {"a": data((10, 4), 42), "b": data((10, 4), 43)},
        [
            layer("Dense", [0], units=4),  # 2
            layer("Dense", [1], units=4),  # 3
            layer("Multiply", [2, 3]),  # 4
            layer("Maximum", [2, 3]),  # 5
            layer("Average", [2, 3]),  # 6
            layer("Dot", [2, 3], axes=1, normalize=True),  # 7
            layer("LeakyReLU", [4], alpha=0.2),  # 8
            layer("ELU", [5]),  # 9
            layer("Minimum", [2, 3]),  # 10
            layer("RepeatVector", [6], n=2),  # 11
            layer("Flatten", [11]),  # 12
            layer("Concatenate", [8, 9, 7, 10, 12]),  # 13
            layer("PReLU", [13]),  # 14
            layer("Dense", [14], units=1),
        ],
        15,
    ),
}
FIT = {"learningRate": 0.1, "batchSize": 4, "epochs": 3}  # batches of 4, 4 and 2


def fit_spec(name):
    inputs, layers, output = TRAINED[name]
    target = data((10, *({"fit_merges": (1,)}.get(name, (2,)))), 50)
    return {
        "name": name,
        "seed": 200 + list(TRAINED).index(name),
        "inputs": [
            {"name": key, "shape": list(x.shape[1:]), "data": {"shape": list(x.shape), "data": x.ravel().tolist()}}
            for key, x in inputs.items()
        ],
        "layers": layers,
        "outputs": [output],
        "fit": {**FIT, "target": {"shape": list(target.shape), "data": target.ravel().tolist()}},
    }


@pytest.fixture(scope="module")
def trained_by_tfjs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("layer_specs_trained_by_tfjs")
    (folder / "specs.json").write_text(json.dumps([fit_spec(name) for name in TRAINED]))
    run_tfjs("layer_specs.mjs", "fit", folder / "specs.json", folder)
    return folder


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("name", TRAINED)
def test_fit_through_the_layers_follows_tfjs(trained_by_tfjs, name):
    """The same losses per epoch and final weights as TF.js's SGD: the layers' gradients are TF.js's."""
    spec = fit_spec(name)
    result = json.loads((trained_by_tfjs / name / "result.json").read_text())
    inputs = [array(entry["data"]) for entry in spec["inputs"]]
    model = asyncio.run(pe.load_layers_model(trained_by_tfjs / name))
    optimizer = pe.optimizers.SGD(learning_rate=FIT["learningRate"])
    try:
        model.compile(optimizer=optimizer, loss="mse")
        history = model.fit(
            inputs if len(inputs) > 1 else inputs[0],
            array(spec["fit"]["target"]),
            batch_size=FIT["batchSize"],
            epochs=FIT["epochs"],
            shuffle=False,
            verbose=0,
        ).history
        weights = dict(zip(model.weight_names, model.get_weights()))
    finally:
        optimizer.dispose()
        model.dispose()
    loss_diffs = [abs(ours - theirs) / abs(theirs) for ours, theirs in zip(history["loss"], result["loss"])]
    assert len(loss_diffs) == FIT["epochs"] and max(loss_diffs) <= 1e-4, (history["loss"], result["loss"])
    assert sorted(weights) == sorted(result["weights"])
    weight_diffs = {
        key: float(np.max(np.abs(weights[key] - array(entry)) / np.maximum(1, np.abs(array(entry)))))
        for key, entry in result["weights"].items()
    }
    assert max(weight_diffs.values()) <= 1e-4, weight_diffs
    initial = asyncio.run(pe.load_layers_model(trained_by_tfjs / name))
    for key, before in zip(initial.weight_names, initial.get_weights()):
        frozen = key.startswith("frozen_")  # trainable: false, in TF.js and here
        assert frozen == np.array_equal(before, weights[key]), (key, "frozen" if frozen else "trained")
    initial.dispose()
