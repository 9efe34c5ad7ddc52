"""Training parity with the real TensorFlow.js (npm @tensorflow/tfjs 4.22.0, test-only, pure JS in Node).

tests/tfjs/train_models.mjs trains three tiny models (an MLP, a conv net with a partial last batch and
validation data, an MLP on integer labels) with TF.js's momentum, Adam and RMSprop, saving each initial model and
recording the per-epoch history and the final weights. Here the engine loads each initial model, fits it on the
same data with the same optimizer and loss, and must follow TF.js's trajectory: losses within 1e-4 relative,
the same accuracies, final weights within 1e-4, on numpy and on webgpu.
"""

import asyncio
import json

import numpy as np
import pytest

import py_engine as pe
from tests.tfjs_node import run_tfjs

CASES = [f"{model}-{optimizer}" for model in ("mlp", "conv", "sparse") for optimizer in ("momentum", "adam", "rmsprop")]
LOSS_TOLERANCE = 1e-4  # relative
ACCURACY_TOLERANCE = 1e-6  # accuracies are k/N: equal up to float32 rounding
WEIGHT_TOLERANCE = 1e-4  # max |w - w_tfjs| / max(1, |w_tfjs|)

OPTIMIZERS = {
    "momentum": lambda s: pe.optimizers.SGD(learning_rate=s["learningRate"], momentum=s["momentum"]),
    "adam": lambda s: pe.optimizers.Adam(learning_rate=s["learningRate"]),
    "rmsprop": lambda s: pe.optimizers.RMSprop(learning_rate=s["learningRate"]),
}
LOSSES = {
    "categoricalCrossentropy": "categorical_crossentropy",
    "binaryCrossentropy": "binary_crossentropy",
    "sparseCategoricalCrossentropy": "sparse_categorical_crossentropy",
}
# TF.js logs metrics=['accuracy'] as "acc"; the engine follows the name as written, as Keras does.
HISTORY_KEYS = {"loss": "loss", "acc": "accuracy", "val_loss": "val_loss", "val_acc": "val_accuracy"}


@pytest.fixture(scope="module")
def trained_by_tfjs(tmp_path_factory):
    """Run train_models.mjs once for this module; returns the folder holding one subfolder per case."""
    folder = tmp_path_factory.mktemp("trained_by_tfjs")
    run_tfjs("train_models.mjs", folder)
    missing = [case for case in CASES if not (folder / case / "result.json").exists()]
    assert not missing, f"train_models.mjs wrote no result.json for {missing}"
    return folder


def array(entry):
    return np.array(entry["data"], np.float32).reshape(entry["shape"])


def training_data(case_dir, loss):
    """(x, y, validation_data or None) as TF.js trained on; sparse labels become the integers they stand for."""
    data = json.loads((case_dir / "data.json").read_text())

    def labels(entry):
        y = array(entry)
        return y.astype(np.int32) if loss == "sparseCategoricalCrossentropy" else y

    validation = data.get("validation")
    validation_data = None if validation is None else (array(validation["x"]), labels(validation["y"]))
    return array(data["x"]), labels(data["y"]), validation_data


def relative_diff(got, want):
    return abs(got - want) / abs(want)


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("case", CASES)
def test_fit_follows_the_training_trajectory_of_tfjs(trained_by_tfjs, case):
    case_dir = trained_by_tfjs / case
    result = json.loads((case_dir / "result.json").read_text())
    x, y, validation_data = training_data(case_dir, result["loss"])
    tensors_before = pe.memory().num_tensors

    model = asyncio.run(pe.load_layers_model(case_dir / "initial"))
    optimizer = OPTIMIZERS[result["optimizer"]["name"]](result["optimizer"])
    try:
        model.compile(optimizer=optimizer, loss=LOSSES[result["loss"]], metrics=["accuracy"])
        history = model.fit(
            x,
            y,
            batch_size=result["batchSize"],
            epochs=result["epochs"],
            shuffle=False,
            validation_data=validation_data,
            verbose=0,
        ).history
        weights = dict(zip(model.weight_names, model.get_weights()))
    finally:
        optimizer.dispose()
        model.dispose()
    assert pe.memory().num_tensors == tensors_before, (
        f"{case}: {pe.memory().num_tensors - tensors_before} tensors outlived model.dispose() and optimizer.dispose()"
    )

    expected = {HISTORY_KEYS[key]: values for key, values in result["history"].items()}
    # The engine may log more than metrics (an epoch's time); the losses and accuracies must be TF.js's.
    logged = {key for key in history if key.endswith(("loss", "accuracy"))}
    assert logged == set(expected), f"{case}: history has {sorted(history)}, TF.js's {sorted(expected)}"
    for key in expected:
        assert len(history[key]) == result["epochs"], f"{case}: {key} has {len(history[key])} epochs: {history[key]}"
    assert sorted(weights) == sorted(result["weights"]), (
        f"{case}: weight names {sorted(weights)}, TF.js's {sorted(result['weights'])}"
    )

    # Every difference is measured before any is asserted, so a failure shows the whole picture.
    loss_diffs = {
        key: max(relative_diff(got, want) for got, want in zip(history[key], values))
        for key, values in expected.items()
        if "loss" in key
    }
    accuracy_diffs = {
        key: max(abs(got - want) for got, want in zip(history[key], values))
        for key, values in expected.items()
        if "accuracy" in key
    }
    weight_diffs = {
        name: float(np.max(np.abs(weights[name] - want) / np.maximum(1, np.abs(want))))
        for name, want in ((name, array(entry)) for name, entry in result["weights"].items())
    }
    measured = {**loss_diffs, **accuracy_diffs, **weight_diffs}
    summary = f"{case}: max diffs " + ", ".join(f"{key} {diff:.1e}" for key, diff in measured.items())
    details = f"{summary}\nengine history {history}\nTF.js history {expected}"
    print(summary)
    assert max(loss_diffs.values()) <= LOSS_TOLERANCE, details
    assert max(accuracy_diffs.values()) <= ACCURACY_TOLERANCE, details
    assert max(weight_diffs.values()) <= WEIGHT_TOLERANCE, details
