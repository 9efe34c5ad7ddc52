"""Sequence models and the real TensorFlow.js (npm @tensorflow/tfjs 4.22.0, test-only, pure JS in Node), both ways.

tests/tfjs/save_sequence_models.mjs builds models with Embedding(mask_zero), LSTM, GRU, SimpleRNN, Bidirectional,
LayerNormalization and GlobalAveragePooling1D, saves them as TF.js writes them and records TF.js's predictions on a
padded batch; here the engine loads each one and must predict the same within 1e-4, every step of the sequence
outputs included (masked steps repeat the last real output), on numpy and on webgpu. The other way,
tests/tfjs/predict_saved_model.mjs loads what model.save wrote and predicts with TF.js.
"""

import asyncio
import json

import numpy as np
import pytest

import py_engine as pe
from tests.tfjs_node import run_tfjs

TOLERANCE = 1e-4
MODELS = ["masked_lstm_gru", "bidirectional", "unmasked", "sequential_gru"]
L = pe.layers


def array(entry):
    return np.array(entry["data"], np.float32).reshape(entry["shape"])


@pytest.fixture(scope="module")
def saved_by_tfjs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sequence_models_by_tfjs")
    run_tfjs("save_sequence_models.mjs", folder)
    return folder


def tfjs_io(folder):
    io = json.loads((folder / "io.json").read_text())
    return array(io["input"]), [array(out) for out in io["outputs"]]


def max_diffs(outputs, expected):
    outputs = outputs if isinstance(outputs, list) else [outputs]
    assert [o.shape for o in outputs] == [e.shape for e in expected]
    return [float(np.abs(o.numpy() - e).max()) for o, e in zip(outputs, expected)]


def test_tfjs_outputs_depend_on_the_masks(saved_by_tfjs):
    """What the comparison below rests on: in TF.js, a masked step repeats the output of the last real one."""
    ids, (gru_sequence, _) = tfjs_io(saved_by_tfjs / "masked_lstm_gru")
    assert ids[1].tolist() == [6, 5, 3, 5, 0, 0, 0]
    np.testing.assert_array_equal(gru_sequence[1, 4:], np.repeat(gru_sequence[1, 3:4], 3, axis=0))
    assert ids[4].tolist() == [2, 7, 0, 0, 1, 8, 3]
    np.testing.assert_array_equal(gru_sequence[4, 2], gru_sequence[4, 1])
    assert np.abs(gru_sequence[4, 4] - gru_sequence[4, 3]).max() > 1e-3


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("name", MODELS)
def test_a_sequence_model_saved_by_tfjs_predicts_here_what_it_predicts_in_tfjs(saved_by_tfjs, name):
    x, expected = tfjs_io(saved_by_tfjs / name)
    model = asyncio.run(pe.load_layers_model(saved_by_tfjs / name))
    try:
        predicted = model.predict(x, batch_size=3)  # two batches
        assert max(max_diffs(predicted, expected)) <= TOLERANCE, max_diffs(predicted, expected)
        called = model(pe.tensor(x))
        assert max(max_diffs(called, expected)) <= TOLERANCE, max_diffs(called, expected)
        pe.dispose([predicted, called])
    finally:
        model.dispose()


def predicted_by_tfjs(model_dir, x, folder):
    (folder / "input.json").write_text(json.dumps({"shape": list(x.shape), "data": x.ravel().tolist()}))
    run_tfjs("predict_saved_model.mjs", model_dir, folder / "input.json", folder / "output.json")
    return [array(entry) for entry in json.loads((folder / "output.json").read_text())]


def built_here():
    """A model of every layer TF.js has, with weights from this engine's initializers and TF.js's defaults changed."""
    ids = L.Input(shape=(6,), name="ids")
    x = L.Embedding(12, 5, mask_zero=True, name="emb")(ids)
    both = L.Bidirectional(L.LSTM(4, return_sequences=True, recurrent_activation="hard_sigmoid"), merge_mode="sum")(x)
    g = L.GRU(3, return_sequences=True, go_backwards=True, name="gru")(both)
    n = L.LayerNormalization(name="norm")(g)
    last = L.SimpleRNN(2, activation="relu", name="rnn")(n)
    out = L.Dense(2, activation="softmax", name="fc")(last)
    model = pe.Model(ids, [g, out], name="built_here")
    for k, w in enumerate(model.weights):  # larger than the initializers', so every gate matters
        w.assign(np.random.default_rng(k).uniform(-0.8, 0.8, w.shape).astype(np.float32))
    return model


def test_a_sequence_model_saved_here_predicts_in_tfjs_what_it_predicts_here(tmp_path):
    ids = np.array([[3, 1, 4, 1, 5, 9], [6, 5, 3, 0, 0, 0], [0, 2, 7, 0, 1, 8], [11, 0, 0, 0, 0, 0]], np.float32)
    model = built_here()
    sequential = pe.Sequential([L.Embedding(12, 3, mask_zero=True), L.LSTM(3), L.Dense(1)], name="stack")
    try:
        for m in (model, sequential):
            m.save(tmp_path / m.name)
            ours = m.predict(ids)
            theirs = predicted_by_tfjs(tmp_path / m.name, ids, tmp_path)
            assert max(max_diffs(ours, theirs)) <= TOLERANCE, (m.name, max_diffs(ours, theirs))
            pe.dispose(ours)
    finally:
        model.dispose()
        sequential.dispose()
