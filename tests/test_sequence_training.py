"""Training sequence models with Model.fit on numpy and webgpu: an Embedding(mask_zero) + LSTM/GRU + Dense model and a
small Transformer learn whether a padded sequence contains a token, with flat tensor counts across epochs
(pe.callbacks.LeakMonitor); and on webgpu, how many dispatches each time step of a recurrent layer costs."""

import asyncio

import numpy as np
import pytest

import py_engine as pe

L = pe.layers
VOCABULARY, STEPS, TOKEN = 12, 10, 1


def contains_token(n, seed):
    """(ids [n, STEPS] post-padded with 0, labels [n, 1]): whether token 1 is among a row's real steps."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, STEPS + 1, n)
    ids = rng.integers(2, VOCABULARY, (n, STEPS)).astype(np.int32)
    labels = rng.random(n) < 0.5
    for i in range(n):
        if labels[i]:
            ids[i, rng.integers(0, lengths[i])] = TOKEN
        ids[i, lengths[i] :] = 0
    return ids, labels.astype(np.float32)[:, None]


@pytest.fixture(autouse=True)
def seeded_weights():
    """The weights' initial values from a fixed seed: a model that learns must learn on every run."""
    pe.set_seed(0)


def train_and_test(model, epochs):
    model.compile(pe.optimizers.Adam(0.02), "binary_crossentropy", metrics=["accuracy"])
    ids, labels = contains_token(256, 0)
    history = model.fit(
        ids, labels, epochs=epochs, batch_size=32, verbose=0, seed=0, callbacks=[pe.callbacks.LeakMonitor()]
    )
    test_ids, test_labels = contains_token(128, 1)
    _, accuracy = model.evaluate(test_ids, test_labels)
    return history.history, accuracy


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("cell", [L.LSTM, L.GRU], ids=["lstm", "gru"])
def test_a_recurrent_model_learns_whether_a_sequence_holds_a_token(cell):
    model = pe.Sequential([L.Embedding(VOCABULARY, 8, mask_zero=True), cell(16), L.Dense(1, activation="sigmoid")])
    try:
        history, accuracy = train_and_test(model, 8)
        assert history["loss"][-1] < 0.25 * history["loss"][0], history["loss"]
        assert accuracy >= 0.95, (history, accuracy)
    finally:
        model.dispose()


@pytest.mark.usefixtures("each_backend")
def test_a_transformer_learns_whether_a_sequence_holds_a_token():
    ids = L.Input(shape=(STEPS,))
    x = L.TokenAndPositionEmbedding(VOCABULARY, STEPS, 8, mask_zero=True)(ids)
    x = L.TransformerEncoder(intermediate_dim=16, num_heads=2)(x)
    out = L.Dense(1, activation="sigmoid")(L.GlobalAveragePooling1D()(x))
    model = pe.Model(ids, out)
    try:
        history, accuracy = train_and_test(model, 12)
        assert accuracy >= 0.9, (history, accuracy)
    finally:
        model.dispose()


def dispatches(fn):
    before = pe.stats()["dispatches"]
    fn()
    return pe.stats()["dispatches"] - before


@pytest.mark.parametrize("cell, per_step", [(L.LSTM, 1), (L.SimpleRNN, 1), (L.GRU, 2)], ids=["lstm", "rnn", "gru"])
def test_a_recurrent_step_costs_one_or_two_dispatches_on_webgpu(cell, per_step):
    """A time step is one dispatch (GRU: two) forwards and as many backwards, whatever the units; the rest of a
    call does not grow with the sequence. A 100-step LSTM trains in a few hundred dispatches."""
    assert asyncio.run(pe.set_backend("webgpu")), pe.backend_info()
    model = pe.Sequential([L.Embedding(20, 8, mask_zero=True), cell(16), L.Dense(1, activation="sigmoid")])
    model.compile("adam", "binary_crossentropy")
    rng = np.random.default_rng(0)
    counts = {}
    try:
        for steps in (50, 100):
            ids = rng.integers(1, 20, (8, steps)).astype(np.int32)
            ids[:, steps - 10 :] = 0
            labels = rng.integers(0, 2, (8, 1)).astype(np.float32)
            model.train_on_batch(ids, labels)  # the optimizer's slots are made in the first step

            def predict(ids=ids):
                pe.dispose(model.predict(ids))

            counts[steps] = (
                dispatches(predict),
                dispatches(lambda ids=ids, labels=labels: model.train_on_batch(ids, labels)),
            )
        forward = (counts[100][0] - counts[50][0]) / 50
        training = (counts[100][1] - counts[50][1]) / 50
        print(
            f"{cell.__name__}: dispatches per time step: {forward:g} predicting, {training:g} training; 100 steps: {counts[100]}"
        )
        assert forward == per_step, counts
        assert training == 2 * per_step, counts
        assert counts[100][1] <= 100 * 2 * per_step + 200, counts
    finally:
        model.dispose()
