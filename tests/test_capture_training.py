"""Training under pe.capture on wgpu-py: fit records its step once per batch shape and replays it, with the same
losses and weights as running every op from Python (bit for bit: the same kernels run on the same data); the
numbers that change per step (a schedule's learning rate, Adam's bias corrections, dropout's draws) are
ENGINE.fresh_tensors values (engine/fresh_values.py) made anew per replay; a hand-written training step
captures the same way."""

import gc
import itertools

import numpy as np
import pytest

import py_engine as pe
from py_engine.engine import ENGINE

L = pe.layers


def blobs(n, seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    x = (rng.normal(0, 2, (3, 6))[labels] + rng.normal(0, 0.5, (n, 6))).astype(np.float32)
    return x, labels.astype(np.int32)


OPTIMIZERS = {
    "momentum-schedule": lambda: pe.optimizers.SGD(
        pe.train.schedules.ExponentialDecay(0.1, decay_steps=2, decay_rate=0.5), momentum=0.9
    ),
    "adam": lambda: pe.optimizers.Adam(0.02),
    "rmsprop": lambda: pe.optimizers.RMSprop(0.01, momentum=0.5, centered=True),
}


def train(optimizer, capture, epochs=3):
    """(history, weights, replays, stats) of a dropout + batch-norm MLP trained with a partial last batch and
    validation data (four batch shapes: two programs per step kind)."""
    pe.set_seed(0)
    model = pe.Sequential(
        [L.Dense(16, activation="relu", input_shape=(6,)), L.BatchNormalization(), L.Dropout(0.25), L.Dense(3)]
    )
    model.compile(OPTIMIZERS[optimizer](), pe.losses.SparseCategoricalCrossentropy(from_logits=True), ["accuracy"])
    x, y = blobs(70, 1)  # batches of 16: four full, one of 6
    before = pe.stats()["capture_replays"]
    try:
        history = model.fit(
            x, y, batch_size=16, epochs=epochs, verbose=0, seed=0, validation_data=blobs(20, 2), capture=capture
        )
        return history.history, [w.numpy() for w in model.weights], pe.stats()["capture_replays"] - before
    finally:
        model.optimizer.dispose()
        model.dispose()


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_fit_with_capture_gives_the_same_losses_and_weights_as_without(gpu, optimizer):
    plain, plain_weights, plain_replays = train(optimizer, capture=False)
    captured, captured_weights, replays = train(optimizer, capture=True)
    assert captured == plain
    for a, b in zip(captured_weights, plain_weights):
        np.testing.assert_array_equal(a, b)
    # per epoch 5 training batches and 2 validation ones; the first training batch of the first epoch makes the
    # optimizer's slots (not recorded), then each new batch shape is recorded once: 4 recordings in all
    assert plain_replays == 0 and replays == 3 * (5 + 2) - 1 - 4
    assert plain["loss"][-1] < plain["loss"][0]


def test_fit_with_capture_keeps_memory_flat_and_its_programs_for_the_next_fit_until_dispose(gpu):
    x, y = blobs(64, 3)
    pe.set_seed(0)
    model = pe.Sequential([L.Dense(8, activation="relu", input_shape=(6,)), L.Dense(3, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy")
    before = pe.memory()
    counts = []
    track = pe.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: counts.append(pe.memory().num_tensors))
    model.fit(x, y, batch_size=16, epochs=4, verbose=0, callbacks=[track, pe.callbacks.LeakMonitor()])
    after = pe.memory()
    assert counts[1:] == counts[:1] * 3
    slots = len(model.optimizer.variables)
    assert after.num_tensors == before.num_tensors + slots
    kept = pe.stats()
    assert kept["capture_programs"] == 1 and kept["capture_bytes"] > 0  # the training step's, for the next fit
    allocated = []
    for _ in range(3):  # every batch a replay: nothing recorded again, nothing more held
        model.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[pe.callbacks.LeakMonitor()])
        stats = pe.stats()
        assert (stats["capture_programs"], stats["capture_bytes"]) == (1, kept["capture_bytes"])
        allocated.append((pe.memory().num_tensors, pe.memory().num_bytes_in_gpu_allocated))
    assert allocated == allocated[:1] * 3
    assert pe.stats()["capture_replays"] - kept["capture_replays"] == 3 * 4
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)  # other batch shapes: the old program goes
    assert pe.stats()["capture_programs"] == 1 and pe.stats()["capture_bytes"] != kept["capture_bytes"]
    model.optimizer.dispose()  # the program binds Adam's slots: it can never replay, so it goes now
    assert pe.stats()["capture_programs"] == 0 and pe.stats()["capture_bytes"] == 0
    prediction = model.predict(x[:2])
    assert prediction.shape == (2, 3)
    prediction.dispose()
    model.dispose()


def test_a_model_that_goes_frees_the_programs_fit_kept(gpu):
    x, y = blobs(64, 3)
    model = pe.Sequential([L.Dense(8, activation="relu", input_shape=(6,)), L.Dense(3)])
    model.compile(pe.optimizers.SGD(0.1), pe.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    assert pe.stats()["capture_programs"] == 1
    model.compile(pe.optimizers.SGD(0.1), pe.losses.SparseCategoricalCrossentropy(from_logits=True))
    assert pe.stats()["capture_programs"] == 0  # compiled again: another step
    model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    assert pe.stats()["capture_programs"] == 1
    weights = model.weights
    del model
    gc.collect()
    assert pe.stats()["capture_programs"] == 0 and pe.stats()["capture_bytes"] == 0
    pe.dispose(weights)


def test_fits_with_a_new_learning_rate_or_a_frozen_layer_between_them_train_as_uncaptured(gpu):
    """The kept step reads the learning rate per replay (a fresh value); freezing a layer changes the trainable
    weights, so the next fit records a step that leaves them alone (the old program is freed)."""

    def train(capture):
        x, y = blobs(64, 5)
        pe.set_seed(0)
        model = pe.Sequential([L.Dense(8, activation="relu", input_shape=(6,)), L.Dense(3)])
        model.compile(pe.optimizers.SGD(0.1), pe.losses.SparseCategoricalCrossentropy(from_logits=True))
        losses = model.fit(x, y, batch_size=16, epochs=2, verbose=0, capture=capture).history["loss"]
        model.optimizer.learning_rate = 0.5
        losses += model.fit(x, y, batch_size=16, epochs=2, verbose=0, capture=capture).history["loss"]
        model.layers[0].trainable = False
        frozen = model.layers[0].get_weights()
        recorded = pe.stats()["capture_replays"]
        losses += model.fit(x, y, batch_size=16, epochs=2, verbose=0, capture=capture).history["loss"]
        replays, programs = pe.stats()["capture_replays"] - recorded, pe.stats()["capture_programs"]
        kept = all(np.array_equal(a, b) for a, b in zip(frozen, model.layers[0].get_weights()))
        weights = [w.numpy() for w in model.weights]
        model.dispose()
        return losses, weights, kept, replays, programs

    plain, captured = train(False), train(True)
    assert captured[0] == plain[0]
    for a, b in zip(captured[1], plain[1]):
        np.testing.assert_array_equal(a, b)
    assert plain[2] and captured[2]  # the frozen layer's weights are unchanged
    assert captured[3:] == (8 - 1, 1)  # the frozen fit's first batch records, the other 7 replay; one program held
    assert pe.stats()["capture_programs"] == 0


def test_a_replayed_step_is_one_submit_and_one_upload_per_fresh_value_it_reads(gpu):
    x, y = blobs(64, 4)
    pe.set_seed(0)
    model = pe.Sequential([L.Dense(8, activation="relu", input_shape=(6,)), L.Dense(3)])
    model.compile(pe.optimizers.Adam(0.01), pe.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False)  # slots made; fit's own scopes warmed
    stats = []

    def sample(batch, logs):
        stats.append(pe.stats())

    track = pe.callbacks.LambdaCallback(on_batch_begin=sample)  # a hook without logs: no readback per batch
    model.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False, callbacks=[track])
    assert len(stats) == 4
    for a, b in itertools.pairwise(stats[1:]):  # batch 1 was recorded; batches 2 -> 3 and 3 -> 4 are replays
        assert b["capture_replays"] - a["capture_replays"] == 1
        # the program's submit, plus the batch's row of the epoch table (pad, add) flushed with it
        assert b["submits"] - a["submits"] <= 2
        # the batch's rows of x and y are kernels; the one upload is the fresh vector of Adam's numbers for the step
        # (its -lr and bias corrections change per step), which every variable's fused update reads
        assert b["uploads"] - a["uploads"] == 1
    model.optimizer.dispose()
    model.dispose()


def test_a_hand_written_training_step_captures_and_follows_learning_rate_changes(gpu):
    rng = np.random.default_rng(5)
    x, y = pe.tensor(rng.normal(size=(8, 4)).astype(np.float32)), pe.tensor(rng.normal(size=(8, 1)).astype(np.float32))

    def run(capture):
        w = pe.variable(np.full((4, 1), 0.5, np.float32), name="w")
        optimizer = pe.optimizers.SGD(0.1)

        def step(x, y):
            loss, grads = pe.variable_grads(lambda: pe.mean(pe.square(x @ w - y)))
            optimizer.apply_gradients(grads)
            pe.dispose(list(grads.values()))
            return loss

        step = pe.capture(step) if capture else step
        losses = []
        for call in range(6):
            if call == 3:
                optimizer.learning_rate = 0.01  # a Python change between calls reaches the replays
            loss = step(x, y)
            losses.append(loss.item())
            loss.dispose()
        result = losses, w.numpy(), optimizer.iterations
        if capture:
            step.dispose()
        pe.dispose(w)
        return result

    plain, captured = run(False), run(True)
    assert captured[0] == plain[0] and captured[2] == plain[2] == 6
    np.testing.assert_array_equal(captured[1], plain[1])
    assert pe.stats()["capture_replays"] == 5
    pe.dispose([x, y])


def test_fresh_values_must_keep_their_shapes_and_dtypes(gpu):
    sizes = iter([2, 3])

    def step(x):
        (noise,) = ENGINE.fresh_tensors(lambda: [np.zeros(next(sizes), np.float32)])
        return x + pe.sum(noise)

    step = pe.capture(step)
    pe.dispose(step(pe.ones((2,))))
    with pytest.raises(ValueError, match=r"fresh values must keep their shapes and dtypes"):
        step(pe.ones((2,)))
    with pytest.raises(TypeError, match="array 0 is float64; make float32 or int32 arrays"):
        ENGINE.fresh_tensors(lambda: [np.zeros(2)])
    step.dispose()


def test_a_fresh_function_that_makes_no_arrays_still_runs_on_every_replay(gpu):
    calls = []

    def step(x):
        ENGINE.fresh_tensors(lambda: calls.append(1) or [])  # only its side effect: it must run once per call
        return x * 2.0

    step = pe.capture(step)
    for _ in range(3):
        pe.dispose(step(pe.ones((2,))))
    assert len(calls) == 3 and pe.stats()["capture_replays"] == 2
    step.dispose()
