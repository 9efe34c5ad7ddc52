"""Model.compile / fit / evaluate: learning, leak-free loops (counts asserted), callbacks, LeakMonitor, bad input."""

import json

import numpy as np
import pytest

import py_engine as pe
from py_engine.engine import ENGINE

L = pe.layers


@pytest.fixture(autouse=True)
def seeded_weights():
    """The weights' initial values from a fixed seed: a model that learns must learn on every run."""
    pe.set_seed(0)


def blobs(n=64, classes=3, features=4, seed=0):
    """Separable clusters: x [n, features] float32, integer labels [n], one-hot labels [n, classes]."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, n)
    centers = rng.normal(0, 3, (classes, features))
    x = (centers[labels] + rng.normal(0, 0.5, (n, features))).astype(np.float32)
    return x, labels.astype(np.int32), np.eye(classes, dtype=np.float32)[labels]


def mlp(features=4, classes=3, batch_norm=False, dropout=0.0):
    layers = [L.Dense(16, activation="relu", input_shape=(features,))]
    if batch_norm:
        layers.append(L.BatchNormalization())
    if dropout:
        layers.append(L.Dropout(dropout, seed=1))
    return pe.Sequential([*layers, L.Dense(classes, activation="softmax")])


def counts():
    m = pe.memory()
    return m.num_tensors, m.num_bytes, m.num_bytes_in_gpu


@pytest.fixture
def trained_parts():
    """Models and optimizers a test makes; disposed at the end even when the test fails."""
    made = []
    yield made
    for thing in made:
        thing.dispose()


@pytest.mark.usefixtures("each_backend")
def test_fit_learns_and_history_holds_floats_per_epoch(trained_parts):
    x, _, y = blobs()
    model = mlp()
    opt = pe.optimizers.Adam(learning_rate=0.05)
    trained_parts += [model, opt]
    model.compile(optimizer=opt, loss="categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(x, y, batch_size=16, epochs=8, verbose=0, seed=0)
    assert set(history.history) == {"loss", "accuracy"}
    losses = history.history["loss"]
    assert len(losses) == 8 and all(isinstance(v, float) for v in losses)
    assert losses[-1] < 0.5 * losses[0], losses
    assert history.history["accuracy"][-1] >= 0.9
    assert history.epoch == list(range(8))
    loss, accuracy = model.evaluate(x, y)
    assert accuracy >= 0.9 and loss < losses[0]


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("batch_norm", [False, True])
def test_memory_is_identical_at_every_epoch_end_and_back_after_dispose(batch_norm):
    x, labels, _ = blobs(n=50)
    start = counts()
    model = mlp(batch_norm=batch_norm, dropout=0.2)
    opt = pe.optimizers.RMSprop(learning_rate=0.01)
    model.compile(optimizer=opt, loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    seen, logged = [], []

    def on_epoch_end(epoch, logs):
        logged.append(logs["loss"] + logs["val_loss"])  # callbacks read floats; nothing to keep
        seen.append(counts())

    reader = pe.callbacks.LambdaCallback(on_epoch_end=on_epoch_end)
    model.fit(
        x[:40],
        labels[:40],
        batch_size=8,
        epochs=4,
        verbose=0,
        validation_data=(x[40:], labels[40:]),
        callbacks=[reader, pe.callbacks.LeakMonitor()],
    )
    assert len(set(seen[1:])) == 1, seen  # after the first epoch (optimizer slots now exist), nothing grows
    assert seen[0] == seen[1]
    slots = len(opt.variables)
    assert slots == 2 * len(model.trainable_weights)  # RMSprop: rms and momentum per weight
    assert pe.memory().num_tensors == start[0] + len(model.weights) + slots
    if batch_norm:
        moving_mean = model.get_layer(model.layers[1].name).moving_mean.numpy()
        assert np.abs(moving_mean).max() > 0  # moving statistics follow the batches during fit
    opt.dispose()
    model.dispose()
    assert counts() == start


@pytest.mark.usefixtures("each_backend")
def test_one_readback_per_epoch_unless_a_callback_wants_batch_logs():
    x, labels, _ = blobs(n=40)
    model = mlp()
    opt = pe.optimizers.SGD(learning_rate=0.1, momentum=0.9)
    model.compile(optimizer=opt, loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    try:
        model.fit(x, labels, batch_size=8, epochs=1, verbose=0)  # uploads and first-use work out of the way
        before = pe.stats()["readbacks"]
        model.fit(x, labels, batch_size=8, epochs=3, verbose=0, validation_data=(x[:10], labels[:10]))
        assert pe.stats()["readbacks"] - before == 3  # train and validation totals in one readback per epoch

        batches = []
        per_batch = pe.callbacks.LambdaCallback(on_batch_end=lambda batch, logs: batches.append(logs))
        before = pe.stats()["readbacks"]
        model.fit(x, labels, batch_size=8, epochs=2, verbose=0, callbacks=[per_batch])
        assert pe.stats()["readbacks"] - before == 2 * 5 + 2
        assert [b["batch"] for b in batches] == [0, 1, 2, 3, 4] * 2
        assert all(isinstance(b["loss"], float) and isinstance(b["accuracy"], float) for b in batches)
    finally:
        opt.dispose()
        model.dispose()


def test_a_callback_that_keeps_a_tensor_per_batch_is_named_by_leak_monitor():
    x, labels, _ = blobs(n=32)
    start = counts()
    model = mlp()
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    kept = []

    class Hoarder(pe.callbacks.Callback):
        wants_batch_logs = False

        def on_batch_end(self, batch, logs=None):
            kept.append(pe.keep(pe.zeros((3,))))  # the leak

    try:
        with pytest.raises(pe.LeakError) as info:
            model.fit(x, labels, batch_size=8, epochs=3, verbose=0, callbacks=[Hoarder(), pe.callbacks.LeakMonitor()])
        message = str(info.value)
        assert f"test_training.py:{Hoarder.on_batch_end.__code__.co_firstlineno + 1}" in message, message
        assert "1 more tensors" in message and "batch 2 of epoch 2" in message, message
        assert not ENGINE.debug  # the monitor restores the debug setting
    finally:
        pe.dispose(kept)
        model.optimizer.dispose()
        model.dispose()
    assert counts() == start


def test_leak_monitor_can_warn_instead():
    x, labels, _ = blobs(n=16)
    model = mlp()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    kept = []
    hoard = pe.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: kept.append(pe.keep(pe.ones((2, 2)))))
    monitor = pe.callbacks.LeakMonitor(action="warn")
    try:
        with pytest.warns(pe.callbacks.LeakWarning, match="test_training.py"):
            model.fit(x, labels, batch_size=8, epochs=3, verbose=0, callbacks=[hoard, monitor])
        assert len(monitor.leaks) == 2  # epochs 2 and 3 each hold one more tensor than epoch 1
    finally:
        pe.dispose(kept)
        model.optimizer.dispose()
        model.dispose()


def test_per_batch_losses_and_validation_split_follow_keras():
    x, labels, _ = blobs(n=20)
    model = mlp()
    model.compile(optimizer=pe.optimizers.SGD(learning_rate=0.0), loss="sparse_categorical_crossentropy")
    try:
        history = model.fit(x, labels, batch_size=6, epochs=1, verbose=0, shuffle=False, validation_split=0.25)
        # learning rate 0: the weights never move, so fit's numbers equal evaluate's on the same rows
        assert history.history["loss"][0] == pytest.approx(model.evaluate(x[:15], labels[:15], batch_size=4), rel=1e-5)
        assert history.history["val_loss"][0] == pytest.approx(model.evaluate(x[15:], labels[15:]), rel=1e-5)
    finally:
        model.optimizer.dispose()
        model.dispose()


def test_shuffle_with_a_seed_is_reproducible_and_differs_from_no_shuffle():
    x, labels, _ = blobs(n=24)
    results = []
    for shuffle, seed in ((True, 3), (True, 3), (False, None)):
        model = mlp()
        model.set_weights([np.full(w.shape, 0.1 * (k + 1), np.float32) for k, w in enumerate(model.weights)])
        model.compile(optimizer=pe.optimizers.SGD(learning_rate=0.05), loss="sparse_categorical_crossentropy")
        results.append(model.fit(x, labels, batch_size=5, epochs=2, verbose=0, shuffle=shuffle, seed=seed).history)
        model.optimizer.dispose()
        model.dispose()
    assert results[0]["loss"] == results[1]["loss"]
    assert results[0]["loss"] != results[2]["loss"]


def test_set_seed_makes_weights_dropout_and_shuffles_repeat_like_keras_set_random_seed():
    """One global seed: the same program after pe.set_seed(n) gives the same val_loss, with unseeded initializers
    (an LSTM's orthogonal one too), an unseeded Dropout and fit's shuffles; another seed gives another."""

    def train(seed):
        pe.set_seed(seed)
        x, labels, _ = blobs(n=48)
        model = pe.Sequential(
            [
                L.Reshape((2, 2), input_shape=(4,)),
                L.LSTM(6),
                L.Dense(16, activation="relu"),
                L.Dropout(0.3),
                L.Dense(3, activation="softmax"),
            ]
        )
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        history = model.fit(x, labels, batch_size=8, epochs=3, validation_split=0.25, verbose=0)
        model.dispose()
        return history.history["loss"] + history.history["val_loss"]

    first = train(5)
    assert train(5) == first
    assert train(6) != first


def test_set_seed_refuses_what_is_no_seed():
    for bad in (-1, 1.5, "3", True):
        with pytest.raises(ValueError, match="set_seed: seed must be an int >= 0 or None"):
            pe.set_seed(bad)


def test_early_stopping_stops_and_restores_the_best_weights():
    x, labels, _ = blobs(n=32)
    model = mlp()
    model.compile(optimizer=pe.optimizers.SGD(learning_rate=0.0), loss="sparse_categorical_crossentropy")
    stopper = pe.callbacks.EarlyStopping(monitor="loss", patience=1, restore_best_weights=True)
    best = model.get_weights()
    spoil = pe.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: epoch == 1 and model.set_weights([w * 0 for w in best])
    )
    try:
        history = model.fit(x, labels, batch_size=8, epochs=10, verbose=0, shuffle=False, callbacks=[stopper, spoil])
        assert len(history.history["loss"]) == 2  # Keras: no improvement in epoch 2 with patience 1 stops there
        assert model.stop_training
        for got, want in zip(model.get_weights(), best):
            np.testing.assert_array_equal(got, want)  # the weights of epoch 1, not the zeros set after epoch 2
    finally:
        model.optimizer.dispose()
        model.dispose()


def test_nan_loss_names_the_batch_and_terminate_on_nan_stops_there():
    x, labels, _ = blobs(n=32)
    x[19] = np.nan  # batch 3 of 4 (batch size 8)
    model = mlp()
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    try:
        start = counts()
        with pytest.raises(pe.TrainingError, match="epoch 1, batch 3"):
            model.fit(x, labels, batch_size=8, epochs=2, verbose=0, shuffle=False)
        slots = len(model.optimizer.variables)
        assert counts()[0] == start[0] + slots
        model.set_weights([np.full(w.shape, 0.1, np.float32) for w in model.weights])
        history = model.fit(
            x, labels, batch_size=8, epochs=2, verbose=0, shuffle=False, callbacks=[pe.callbacks.TerminateOnNaN()]
        )
        assert len(history.history["loss"]) == 1 and np.isnan(history.history["loss"][0])
    finally:
        model.optimizer.dispose()
        model.dispose()


def test_bad_input_gets_a_clear_error_and_leaves_memory_as_it_was():
    x, labels, onehot = blobs(n=16)
    model = mlp()
    with pytest.raises(RuntimeError, match=r"not compiled.*compile"):
        model.fit(x, onehot, verbose=0)
    model.compile(optimizer="adam", loss="categorical_crossentropy")
    start = counts()
    try:
        with pytest.raises(pe.ShapeError, match="same number of examples"):
            model.fit(x, onehot[:10], verbose=0)
        with pytest.raises(pe.ShapeError):
            model.fit(x, onehot[:, :2], verbose=0)  # 2 classes of labels for 3 outputs
        with pytest.raises(pe.ShapeError):
            model.fit(x[:, :3], onehot, verbose=0)  # the model takes 4 features
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        bad = labels.copy()
        bad[5] = 7
        with pytest.raises(ValueError, match="7"):
            model.fit(x, bad, verbose=0)
        with pytest.raises(ValueError, match="batch_size"):
            model.fit(x, labels, batch_size=0, verbose=0)
        assert counts() == start
        assert model.optimizer.variables == []
    finally:
        model.dispose()


def test_train_on_batch_and_test_on_batch_return_floats():
    x, _, y = blobs(n=12)
    model = mlp()
    model.compile(optimizer=pe.optimizers.Adam(0.01), loss="categorical_crossentropy", metrics=["accuracy"])
    try:
        loss, accuracy = model.train_on_batch(x, y)
        assert isinstance(loss, float) and 0 <= accuracy <= 1
        after = model.test_on_batch(x, y, return_dict=True)
        assert set(after) == {"loss", "accuracy"} and after["loss"] < loss
    finally:
        model.optimizer.dispose()
        model.dispose()


def test_a_functional_model_with_two_outputs_trains_with_a_loss_each():
    inputs = L.Input(shape=(4,))
    hidden = L.Dense(8, activation="relu", name="hidden")(inputs)
    classes = L.Dense(3, activation="softmax", name="classes")(hidden)
    value = L.Dense(1, name="value")(hidden)
    model = pe.Model(inputs, [classes, value])
    model.compile(
        optimizer=pe.optimizers.Adam(0.02),
        loss={"classes": "sparse_categorical_crossentropy", "value": "mse"},
        metrics={"classes": ["accuracy"]},
    )
    x, labels, _ = blobs(n=32)
    target = x[:, :1] * 0.5
    try:
        history = model.fit(x, [labels, target], batch_size=8, epochs=6, verbose=0).history
        assert {"loss", "classes_loss", "value_loss", "classes_accuracy"} <= set(history)
        assert history["loss"][-1] < history["loss"][0]
        total = np.array(history["classes_loss"]) + np.array(history["value_loss"])
        np.testing.assert_allclose(history["loss"], total, rtol=1e-5)
    finally:
        model.optimizer.dispose()
        model.dispose()


def test_l2_regularizers_from_the_config_add_to_the_loss():
    x, labels, _ = blobs(n=8)
    plain = pe.Sequential([L.Dense(3, input_shape=(4,), kernel_initializer="ones")])
    regular = pe.Sequential(
        [
            L.Dense(
                3,
                input_shape=(4,),
                kernel_initializer="ones",
                kernel_regularizer={"class_name": "L2", "config": {"l2": 0.5}},
            )
        ]
    )
    try:
        for model in (plain, regular):
            model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
        extra = regular.evaluate(x, labels) - plain.evaluate(x, labels)
        assert extra == pytest.approx(0.5 * 12, rel=1e-5)  # l2 * sum(w^2) over a 4x3 kernel of ones
    finally:
        for model in (plain, regular):
            model.optimizer.dispose()
            model.dispose()


def test_a_compiled_model_saves_its_training_config_and_loads_compiled(tmp_path):
    import asyncio

    model = mlp()
    model.compile(
        optimizer=pe.optimizers.Adam(learning_rate=0.003), loss="categorical_crossentropy", metrics=["accuracy"]
    )
    try:
        model.save(tmp_path)
        saved = json.loads((tmp_path / "model.json").read_text())["trainingConfig"]
        assert saved["loss"] == "categorical_crossentropy" and saved["metrics"] == ["accuracy"]
        assert saved["optimizer_config"]["class_name"] == "Adam"
        assert saved["optimizer_config"]["config"]["learningRate"] == pytest.approx(0.003)
        loaded = asyncio.run(pe.load_layers_model(tmp_path))
        try:
            assert loaded.optimizer.learning_rate == pytest.approx(0.003)
            x, _, y = blobs(n=8)
            assert loaded.evaluate(x, y) == pytest.approx(model.evaluate(x, y), rel=1e-6)
        finally:
            loaded.dispose()
    finally:
        model.dispose()


def test_a_device_lost_during_fit_raises_and_leaves_the_engine_on_numpy():
    import asyncio

    ENGINE.forget_backend("webgpu")  # a device of this test's own, since it is destroyed
    assert asyncio.run(pe.set_backend("webgpu")), ENGINE.fallback_reason
    x, labels, _ = blobs(n=32)
    model = mlp()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    device = ENGINE.backend.device
    lose = pe.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: epoch == 0 and device.destroy())
    try:
        with pytest.raises(pe.DeviceLostError, match="lost"):
            model.fit(x, labels, batch_size=8, epochs=3, verbose=0, callbacks=[lose])
        info = pe.backend_info()
        assert info["name"] == "numpy" and "lost its device" in info["fallback_reason"]
        assert pe.memory().num_bytes_in_gpu == sum(w.size * 4 for w in model.weights + model.optimizer.variables)
    finally:
        model.optimizer.dispose()
        model.dispose()
    assert pe.memory().num_tensors == 0 and pe.memory().num_bytes_in_gpu == 0
