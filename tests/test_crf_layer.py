"""pe.layers.CRF as a tagger's last layer: fit trains it through its loss, predict decodes, nothing leaks."""

import asyncio

import numpy as np
import pytest

import py_engine as pe

L = pe.layers
STEPS = 12


@pytest.fixture(autouse=True)
def seeded_weights():
    """The weights' initial values from a fixed seed: a model that learns must learn on every run."""
    pe.set_seed(0)


def tagging_grammar(n, seed):
    """Words 1-9, padded with 0. Tags: 0 outside, 1 begins an entity (words 1-3), 2 continues one (words 4-6, only
    right after a 1 or 2; elsewhere they are 0), so a word's tag depends on the tag before it."""
    rng = np.random.default_rng(seed)
    x, y = np.zeros((n, STEPS), np.int32), np.zeros((n, STEPS), np.int32)
    for i in range(n):
        previous = 0
        for t in range(rng.integers(4, STEPS + 1)):
            word = rng.integers(1, 10)
            tag = 1 if word <= 3 else (2 if previous in (1, 2) else 0) if word <= 6 else 0
            x[i, t], y[i, t], previous = word, tag, tag
    return x, y


def bilstm_crf():
    ids = L.Input(shape=(STEPS,))
    h = L.Embedding(10, 16, mask_zero=True)(ids)
    h = L.Bidirectional(L.LSTM(16, return_sequences=True))(h)
    crf = L.CRF(3)
    model = pe.Model(ids, crf(L.Dense(3)(h)))
    model.compile(pe.optimizers.Adam(0.02), loss=crf.loss, metrics=[crf.accuracy])
    return model, crf


@pytest.mark.usefixtures("each_backend")
def test_a_bilstm_crf_learns_a_tagging_grammar_and_predict_decodes():
    x, y = tagging_grammar(256, 0)
    test_x, test_y = tagging_grammar(64, 1)
    model, _ = bilstm_crf()
    try:
        counts = []
        track = pe.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: counts.append(pe.memory().num_tensors))
        history = model.fit(
            x,
            y,
            batch_size=32,
            epochs=8,
            verbose=0,
            seed=0,
            validation_data=(test_x, test_y),
            callbacks=[track, pe.callbacks.LeakMonitor()],
        ).history
        assert history["loss"][-1] < 0.1 * history["loss"][0]
        assert history["val_crf_accuracy"][-1] >= 0.95
        assert len(set(counts[1:])) == 1
        tags = model.predict(test_x)
        assert tags.dtype == pe.int32 and tags.shape == (64, STEPS)
        got = tags.numpy()
        words = test_x > 0
        assert (got[words] == test_y[words]).mean() >= 0.95
        assert (got[~words] == 0).all()  # 0 past each sequence's length
        tags.dispose()
    finally:
        model.optimizer.dispose()
        model.dispose()


def test_the_crf_loss_is_the_mean_negative_log_likelihood():
    rng = np.random.default_rng(2)
    emissions = rng.normal(size=(3, 4, 2)).astype(np.float32)
    tags = rng.integers(0, 2, (3, 4)).astype(np.int32)
    inputs = L.Input(shape=(4, 2))
    crf = L.CRF(2)
    model = pe.Model(inputs, crf(inputs))
    try:
        model.compile("sgd", loss=crf.loss)
        want = -np.mean(pe.crf_log_likelihood(emissions, tags, crf.transitions).numpy())
        assert model.evaluate(emissions, tags) == pytest.approx(want, rel=1e-5)
    finally:
        model.optimizer.dispose()
        model.dispose()


def test_bad_tags_and_shapes_get_clear_errors():
    x, y = tagging_grammar(8, 3)
    model, _ = bilstm_crf()
    try:
        bad = y.copy()
        bad[2, 1] = 3
        with pytest.raises(ValueError, match=r"tag 3 at y_true\[2, 1\] is outside \[0, 3\)"):
            model.fit(x, bad, verbose=0)
        with pytest.raises(pe.ShapeError, match=r"tags must be \[batch, steps\]"):
            model.fit(x, y[:, :5], verbose=0)
        with pytest.raises(pe.ShapeError, match=r"needs emissions \[batch, steps, 4\]"):
            L.CRF(4)(L.Input(shape=(5, 3)))
        assert pe.memory().num_tensors == len(model.weights)
    finally:
        model.dispose()


def test_a_crf_model_saves_and_loads(tmp_path):
    x, _ = tagging_grammar(4, 4)
    model, _ = bilstm_crf()
    try:
        model.save(tmp_path)  # uncompiled: the CRF's loss is an object, not a name another loader could rebuild
        loaded = asyncio.run(pe.load_layers_model(tmp_path))
        try:
            want, got = model.predict(x), loaded.predict(x)
            np.testing.assert_array_equal(got.numpy(), want.numpy())
            pe.dispose([want, got])
        finally:
            loaded.dispose()
    finally:
        model.optimizer.dispose()
        model.dispose()
