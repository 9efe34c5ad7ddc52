"""Training parity for the optimizers, regularizers and constraints of TF.js's vocabulary (npm @tensorflow/tfjs 4.22.0).

tests/tfjs/train_vocabulary.mjs trains one small MLP per case with the real TF.js, saving the initial model (its
layers carry the case's regularizers and constraints in their configs) and recording the per-epoch history and final
weights. Here the engine loads each initial model, fits it with the same optimizer, and must follow TF.js's
trajectory (losses within 1e-4 relative, accuracies equal, weights within 1e-4), on numpy and on webgpu:
- adamax: TF.js's AdamaxOptimizer, decay included;
- adadelta: Keras's rule (TF.js's own AdadeltaOptimizer divides by the accumulator from before the step: a bug this
  package does not follow), written in the script as a TF.js optimizer;
- l1, l2, l1l2: TF.js's penalties on kernels and biases, added to the training loss;
- maxNorm, minMaxNorm, nonNeg, unitNorm: applied after every update, as Keras does (TF.js's fit never applies them,
  tfjs#3345): the script projects the weights in a callback after each batch.
"""

import asyncio
import json

import numpy as np
import pytest

import py_engine as pe
from tests.tfjs_node import run_tfjs

CASES = ["adadelta", "adamax", "l1", "l2", "l1l2", "maxNorm", "minMaxNorm", "nonNeg", "unitNorm"]
LOSS_TOLERANCE = 1e-4  # relative
ACCURACY_TOLERANCE = 1e-6
WEIGHT_TOLERANCE = 1e-4  # max |w - w_tfjs| / max(1, |w_tfjs|)

OPTIMIZERS = {
    "momentum": lambda s: pe.optimizers.SGD(learning_rate=s["learningRate"], momentum=s["momentum"]),
    "adam": lambda s: pe.optimizers.Adam(learning_rate=s["learningRate"]),
    "adamax": lambda s: pe.optimizers.Adamax(
        learning_rate=s["learningRate"], beta_1=s["beta1"], beta_2=s["beta2"], decay=s["decay"]
    ),
    "adadelta": lambda s: pe.optimizers.Adadelta(learning_rate=s["learningRate"], rho=s["rho"], epsilon=s["epsilon"]),
}


@pytest.fixture(scope="module")
def trained_by_tfjs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("vocabulary_trained_by_tfjs")
    run_tfjs("train_vocabulary.mjs", folder)
    missing = [case for case in CASES if not (folder / case / "result.json").exists()]
    assert not missing, f"train_vocabulary.mjs wrote no result.json for {missing}"
    return folder


def array(entry):
    return np.array(entry["data"], np.float32).reshape(entry["shape"])


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("case", CASES)
def test_fit_follows_tfjs_with_each_optimizer_regularizer_and_constraint(trained_by_tfjs, case):
    case_dir = trained_by_tfjs / case
    result = json.loads((case_dir / "result.json").read_text())
    data = json.loads((case_dir / "data.json").read_text())
    x, y = array(data["x"]), array(data["y"])
    tensors_before = pe.memory().num_tensors

    model = asyncio.run(pe.load_layers_model(case_dir / "initial"))
    optimizer = OPTIMIZERS[result["optimizer"]["name"]](result["optimizer"])
    try:
        model.compile(optimizer=optimizer, loss="categorical_crossentropy", metrics=["accuracy"])
        history = model.fit(x, y, batch_size=result["batchSize"], epochs=result["epochs"], shuffle=False, verbose=0)
        history = history.history
        weights = dict(zip(model.weight_names, model.get_weights()))
    finally:
        optimizer.dispose()
        model.dispose()
    assert pe.memory().num_tensors == tensors_before, f"{case}: tensors outlived model.dispose()"

    expected = {"loss": result["history"]["loss"], "accuracy": result["history"]["acc"]}
    loss_diff = max(abs(got - want) / abs(want) for got, want in zip(history["loss"], expected["loss"]))
    accuracy_diff = max(abs(got - want) for got, want in zip(history["accuracy"], expected["accuracy"]))
    weight_diffs = {
        name: float(np.max(np.abs(weights[name] - array(entry)) / np.maximum(1, np.abs(array(entry)))))
        for name, entry in result["weights"].items()
    }
    details = (
        f"{case}: loss {loss_diff:.1e}, accuracy {accuracy_diff:.1e}, weights {weight_diffs}\n"
        f"engine {history}\nTF.js {expected}"
    )
    print(details.splitlines()[0])
    assert len(history["loss"]) == result["epochs"], details
    assert loss_diff <= LOSS_TOLERANCE, details
    assert accuracy_diff <= ACCURACY_TOLERANCE, details
    assert max(weight_diffs.values()) <= WEIGHT_TOLERANCE, details
