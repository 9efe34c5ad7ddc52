"""Issue 39's convolution and recurrent layers and the real TensorFlow.js 4.22 (npm, test-only, pure JS in Node).

Both ways, for each layer: tests/tfjs/save_layer_models.mjs builds a model using it in TF.js (seeded weights),
saves it and records TF.js's predictions on inputs of several shapes; here the engine loads it and must predict
the same within 1e-5 (relative to the outputs' scale), on numpy and on webgpu. The other way, a model built here
is saved, loaded by TF.js (tests/tfjs/predict_saved_model.mjs), and must predict there what it predicts here.
Gradients are checked against finite differences.
"""

import asyncio
import json

import numpy as np
import pytest

import py_engine as pe
from py_engine.layers.convolutional_variants import conv2d_transpose
from tests.gradcheck import check_gradients
from tests.tfjs_node import run_tfjs

TOLERANCE = 1e-5
L = pe.layers
MODELS = [
    "conv1d",
    "conv2d_transpose",
    "separable_conv2d",
    "rnn_cells",
    "rnn_activations",
    "time_distributed",
    "conv3d",
    "conv3d_transpose",
    "pooling3d",
    "conv_lstm2d",
]


def array(entry):
    return np.array(entry["data"], np.float32).reshape(entry["shape"])


def assert_close(got, want, what):
    """Equal within TOLERANCE, scaled by the output's magnitude where that exceeds 1 (float32 sums of many terms)."""
    got = got.numpy() if isinstance(got, pe.Tensor) else got
    assert got.shape == want.shape, (what, got.shape, want.shape)
    scale = max(1.0, float(np.abs(want).max()))
    diff = float(np.abs(got - want).max())
    assert diff <= TOLERANCE * scale, f"{what}: differs by {diff} (outputs up to {scale})"


@pytest.fixture(scope="module")
def saved_by_tfjs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("layer_models_by_tfjs")
    run_tfjs("save_layer_models.mjs", folder, *MODELS)
    return folder


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("name", MODELS)
def test_a_model_saved_by_tfjs_predicts_here_what_it_predicts_in_tfjs(saved_by_tfjs, name):
    cases = json.loads((saved_by_tfjs / name / "io.json").read_text())["cases"]
    model = asyncio.run(pe.load_layers_model(saved_by_tfjs / name))
    try:
        for k, case in enumerate(cases):
            inputs = [pe.tensor(array(entry)) for entry in case["inputs"]]
            outputs = model(inputs if len(inputs) > 1 else inputs[0])
            outputs = outputs if isinstance(outputs, list) else [outputs]
            assert len(outputs) == len(case["outputs"])
            for j, (got, want) in enumerate(zip(outputs, case["outputs"])):
                assert_close(got, array(want), f"{name} input {k} output {j}")
            pe.dispose([inputs, outputs])
    finally:
        model.dispose()


def predicted_by_tfjs(model_dir, x, folder):
    (folder / "input.json").write_text(json.dumps({"shape": list(x.shape), "data": x.ravel().tolist()}))
    run_tfjs("predict_saved_model.mjs", model_dir, folder / "input.json", folder / "output.json")
    return [array(entry) for entry in json.loads((folder / "output.json").read_text())]


def randomize(model):
    """Weights larger than the initializers' and biases that are not zero, so every term matters."""
    for k, w in enumerate(model.weights):
        w.assign(np.random.default_rng(k).uniform(-0.7, 0.7, w.shape).astype(np.float32))


def conv1d_here():
    x = L.Input(shape=(10, 3), name="x")
    a = L.Conv1D(4, 3, padding="same", activation="softplus", name="same")(x)
    b = L.Conv1D(3, 2, strides=2, dilation_rate=1, activation="tanh", name="strided")(a)
    c = L.Conv1D(2, 2, dilation_rate=3, use_bias=False, name="dilated")(a)
    return pe.Model(x, [b, c], name="conv1d_here"), np.random.default_rng(1).normal(size=(3, 10, 3))


def conv2d_transpose_here():
    x = L.Input(shape=(4, 3, 2), name="x")
    a = L.Conv2DTranspose(3, (3, 2), strides=(2, 3), padding="same", activation="relu", name="same")(x)
    b = L.Conv2DTranspose(2, 2, strides=3, name="sparse")(a)
    c = L.Conv2DTranspose(2, 4, padding="valid", activation="sigmoid", use_bias=False, name="wide")(a)
    return pe.Model(x, [b, c], name="conv2d_transpose_here"), np.random.default_rng(2).normal(size=(2, 4, 3, 2))


def separable_conv2d_here():
    x = L.Input(shape=(8, 7, 3), name="x")
    a = L.SeparableConv2D(4, 3, padding="same", depth_multiplier=3, activation="elu", name="same")(x)
    b = L.SeparableConv2D(2, (2, 3), strides=2, use_bias=False, name="strided")(a)
    c = L.SeparableConv2D(3, 2, dilation_rate=2, activation="relu6", name="dilated")(a)
    return pe.Model(x, [b, c], name="separable_conv2d_here"), np.random.default_rng(3).normal(size=(2, 8, 7, 3))


IDS = np.array([[3, 1, 4, 1, 5, 9], [6, 5, 3, 0, 0, 0], [0, 2, 7, 0, 1, 8], [11, 0, 0, 0, 0, 0]])


def rnn_cells_here():
    ids = L.Input(shape=(6,), name="ids")
    x = L.Embedding(12, 4, mask_zero=True, name="emb")(ids)
    cells = [L.LSTMCell(3, recurrent_activation="hard_sigmoid"), L.GRUCell(2), L.SimpleRNNCell(3, activation="relu")]
    stacked = L.RNN(cells, return_sequences=True, return_state=True, name="stack")(x)
    single = L.RNN(L.SimpleRNNCell(2), go_backwards=True, name="single")(stacked[0])
    return pe.Model(ids, [*stacked, single], name="rnn_cells_here"), IDS


def time_distributed_here():
    ids = L.Input(shape=(6,), name="ids")
    x = L.Embedding(12, 4, mask_zero=True, name="emb")(ids)
    dense = L.TimeDistributed(L.Dense(3, activation="sigmoid", name="inner"), name="td")(x)
    seq = L.LSTM(2, return_sequences=True, name="lstm")(dense)  # the mask passes through TimeDistributed
    out = L.TimeDistributed(L.Dense(1), name="td_out")(seq)
    return pe.Model(ids, [dense, out], name="time_distributed_here"), IDS


def conv3d_here():
    x = L.Input(shape=(5, 4, 6, 2), name="x")
    a = L.Conv3D(3, (2, 3, 3), padding="same", activation="softplus", name="same")(x)
    b = L.Conv3D(2, 2, strides=(1, 2, 2), dilation_rate=1, name="strided")(a)
    c = L.Conv3D(2, (3, 1, 2), dilation_rate=(2, 1, 1), use_bias=False, name="dilated")(a)
    return pe.Model(x, [b, c], name="conv3d_here"), np.random.default_rng(4).normal(size=(2, 5, 4, 6, 2))


def conv3d_transpose_here():
    x = L.Input(shape=(3, 2, 4, 2), name="x")
    a = L.Conv3DTranspose(3, (3, 2, 2), strides=(2, 1, 2), padding="same", activation="tanh", name="same")(x)
    b = L.Conv3DTranspose(2, 2, strides=3, name="sparse")(a)
    return pe.Model(x, [a, b], name="conv3d_transpose_here"), np.random.default_rng(5).normal(size=(2, 3, 2, 4, 2))


def pooling3d_here():
    x = L.Input(shape=(5, 6, 4, 2), name="x")
    a = L.MaxPooling3D((2, 3, 2), strides=(1, 2, 2), padding="same", name="max")(x)
    b = L.AveragePooling3D(3, strides=(2, 1, 1), padding="same", name="avg")(x)
    c = L.AveragePooling3D((1, 2, 2), name="avg_valid")(a)
    return pe.Model(x, [a, b, c], name="pooling3d_here"), np.random.default_rng(6).normal(size=(2, 5, 6, 4, 2))


def conv_lstm2d_here():
    x = L.Input(shape=(3, 5, 4, 2), name="x")
    a = L.ConvLSTM2D(3, (3, 2), padding="same", return_sequences=True, go_backwards=True, name="same")(x)
    b = L.ConvLSTM2D(2, 2, strides=(1, 2), recurrent_activation="sigmoid", return_state=True, name="strided")(a)
    return pe.Model(x, [a, *b], name="conv_lstm2d_here"), np.random.default_rng(7).normal(size=(2, 3, 5, 4, 2))


@pytest.mark.parametrize(
    "build",
    [
        conv_lstm2d_here,
        conv1d_here,
        conv2d_transpose_here,
        separable_conv2d_here,
        rnn_cells_here,
        time_distributed_here,
        conv3d_here,
        conv3d_transpose_here,
        pooling3d_here,
    ],
)
def test_a_model_saved_here_predicts_in_tfjs_what_it_predicts_here(tmp_path, build):
    model, x = build()
    x = x.astype(np.float32)
    try:
        randomize(model)
        model.save(tmp_path / model.name)
        ours = model.predict(x)
        theirs = predicted_by_tfjs(tmp_path / model.name, x, tmp_path)
        assert len(ours) == len(theirs)
        for k, (got, want) in enumerate(zip(ours, theirs)):
            assert_close(got, want, f"{model.name} output {k}")
        pe.dispose(ours)
    finally:
        model.dispose()


def test_rnn_with_one_cell_computes_what_its_layer_computes():
    x = pe.tensor(np.random.default_rng(0).normal(size=(2, 5, 3)).astype(np.float32))
    for layer, cell in [(L.LSTM(4), L.LSTMCell(4)), (L.GRU(3), L.GRUCell(3)), (L.SimpleRNN(2), L.SimpleRNNCell(2))]:
        expected = layer(x)
        rnn = L.RNN(cell)
        rnn(x).dispose()
        rnn.set_weights(layer.get_weights())
        np.testing.assert_array_equal(rnn(x).numpy(), expected.numpy())
        # one step of the cell on its own: [output, *states] from [x, *states]
        zeros = [pe.zeros((2, cell.units)) for _ in range(cell.state_count)]
        step = cell([x[:, 0], *zeros])
        np.testing.assert_allclose(step[0].numpy(), L.RNN(cell)(x[:, :1]).numpy(), atol=1e-6)
        pe.dispose([expected, step, zeros])
        layer.dispose()
        rnn.dispose()
    x.dispose()


class MinimalCell(L.RNNCell):
    """A custom cell: h = x @ kernel + h @ recurrent_kernel (SimpleRNN with a linear activation and no bias)."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = self.state_size = units

    def build(self, input_shape):
        features = input_shape[0][-1]
        self.kernel = self.add_weight("kernel", (features, self.units), "glorot_uniform")
        self.recurrent_kernel = self.add_weight("recurrent_kernel", (self.units, self.units), "glorot_uniform")

    def call(self, inputs, training=False):
        x, h = inputs
        output = pe.matmul(x, self.kernel) + pe.matmul(h, self.recurrent_kernel)
        return [output, output]


def test_rnn_runs_a_custom_cell_step_by_step_masks_included():
    ids = np.array([[3, 1, 4, 1, 5], [6, 5, 0, 0, 0], [0, 0, 7, 2, 9], [2, 0, 0, 1, 8]], np.float32)
    embedding = L.Embedding(10, 3, mask_zero=True)
    x = embedding(pe.tensor(ids))
    mask = embedding.compute_mask(pe.tensor(ids))
    reference = L.SimpleRNN(4, activation="linear", use_bias=False, return_sequences=True, return_state=True)
    custom = L.RNN(MinimalCell(4), return_sequences=True, return_state=True, go_backwards=False)
    expected = reference(x, mask=mask)
    custom(x, mask=mask)
    custom.set_weights(reference.get_weights())
    got = custom(x, mask=mask)
    assert custom.weight_names == [f"{custom.name}/kernel", f"{custom.name}/recurrent_kernel"]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.numpy(), e.numpy(), atol=1e-5)
    stacked = L.RNN([MinimalCell(3), L.GRUCell(2)], return_state=True)
    assert [tuple(o.shape) for o in stacked(x, mask=mask)] == [(4, 2), (4, 2), (4, 3)]
    pe.dispose([x, mask, expected, got])
    for layer in (embedding, reference, custom, stacked):
        layer.dispose()


def test_rnn_refuses_what_it_cannot_run():
    with pytest.raises(TypeError, match="a cell must be"):
        L.RNN(L.Dense(2))
    with pytest.raises(TypeError, match="return_sequences is an RNN argument"):
        L.LSTMCell(2, return_sequences=True)
    with pytest.raises(ValueError, match="stateful"):
        L.RNN(L.GRUCell(2), stateful=True)


def test_time_distributed_is_as_trainable_as_the_layer_it_wraps():
    frozen = L.TimeDistributed(L.Dense(2, trainable=False))
    frozen(pe.zeros((1, 3, 4))).dispose()
    assert not frozen.trainable and frozen.trainable_weights == [] and len(frozen.non_trainable_weights) == 2
    assert frozen.get_config()["trainable"] is False
    wrapper = L.TimeDistributed(L.Dense(2), trainable=False)
    assert not wrapper.layer.trainable
    wrapper.trainable = True
    assert wrapper.layer.trainable
    frozen.dispose()


def test_conv_lstm2d_drops_out_in_training_only():
    layer = L.ConvLSTM2D(2, 3, padding="same", dropout=0.5, recurrent_dropout=0.3, return_sequences=True)
    x = pe.tensor(np.random.default_rng(0).uniform(0.5, 1, (2, 3, 5, 4, 2)).astype(np.float32))
    inference = layer(x).numpy()
    np.testing.assert_array_equal(layer(x).numpy(), inference)
    trained = layer(x, training=True).numpy()
    assert np.isfinite(trained).all() and np.abs(trained - inference).max() > 1e-3
    gradients = pe.grads(lambda x: layer.call(x, training=True).sum())(x)
    assert np.isfinite(gradients[0].numpy()).all() and np.abs(gradients[0].numpy()).max() > 0
    pe.dispose([x, gradients])
    layer.dispose()


def test_conv_lstm2d_cell_steps_as_the_layer_does():
    """Two steps of ConvLSTM2DCell, each from the last one's states, give what ConvLSTM2D gives over two steps."""
    x = pe.tensor(np.random.default_rng(0).normal(size=(2, 2, 5, 4, 3)).astype(np.float32))
    layer = L.ConvLSTM2D(2, 3, strides=(2, 1), padding="same", return_sequences=True, return_state=True)
    expected = layer(x)
    cell = L.ConvLSTM2DCell(2, 3, strides=(2, 1), padding="same")
    h = c = pe.zeros((2, 3, 4, 2))
    cell([x[:, 0], h, c])
    cell.set_weights(layer.get_weights())
    first, h1, c1 = cell([x[:, 0], h, c])
    second, h2, c2 = cell([x[:, 1], h1, c1])
    np.testing.assert_allclose(first.numpy(), expected[0].numpy()[:, 0], atol=1e-6)
    np.testing.assert_allclose(second.numpy(), expected[0].numpy()[:, 1], atol=1e-6)
    np.testing.assert_allclose(c2.numpy(), expected[2].numpy(), atol=1e-6)
    assert "return_sequences" not in cell.get_config()
    with pytest.raises(pe.ShapeError, match="h and c of shape"):
        cell([x[:, 0], pe.zeros((2, 5, 4, 2)), c])
    pe.dispose([x, expected, h, first, h1, c1, second, h2, c2])
    layer.dispose()
    cell.dispose()


def test_conv1d_causal_padding_sees_only_the_past():
    """Keras's "causal" (TF.js 4.22 refuses it when it runs): output t depends on inputs <= t only."""
    layer = L.Conv1D(2, 3, padding="causal", dilation_rate=2)
    x = np.random.default_rng(0).normal(size=(1, 9, 2)).astype(np.float32)
    later = x.copy()
    later[:, 5:] += 1.0
    a, b = layer(pe.tensor(x)).numpy(), layer(pe.tensor(later)).numpy()
    assert a.shape == (1, 9, 2)
    np.testing.assert_array_equal(a[:, :5], b[:, :5])
    assert np.abs(a[:, 5:] - b[:, 5:]).min() > 0
    layer.dispose()


def test_conv2d_transpose_is_the_adjoint_of_conv2d():
    """<conv2d(y, k), x> == <conv2d_transpose(x, k), y>, the definition TF.js's conv2dTranspose follows."""
    rng = np.random.default_rng(0)
    for strides, padding, out_hw in [(2, "same", (8, 6)), ((2, 3), "valid", (9, 11)), (1, "valid", (6, 5))]:
        k = rng.normal(size=(3, 3, 4, 2)).astype(np.float32)
        y = rng.normal(size=(2, *out_hw, 4)).astype(np.float32)
        forward = pe.conv2d(pe.tensor(y), pe.tensor(k), strides, padding).numpy()
        x = rng.normal(size=forward.shape[:3] + (2,)).astype(np.float32)
        back = conv2d_transpose(pe.tensor(x), pe.tensor(k), out_hw, strides, padding).numpy()
        np.testing.assert_allclose((forward * x).sum(), (back * y).sum(), rtol=1e-4)


def test_conv2d_transpose_refuses_an_output_that_does_not_convolve_back_to_its_input():
    with pytest.raises(pe.ShapeError, match="convolves back"):
        conv2d_transpose(np.zeros((1, 3, 3, 2)), np.zeros((3, 3, 4, 2)), (9, 9), 2, "same")


def with_weights(layer, names, owner=None):
    """f(x, *weights) calling layer with the given tensors as its weights (those of `owner`, a wrapped layer, if
    given), for finite differences."""
    owner = owner or layer

    def f(x, *weights):
        originals = [getattr(owner, n) for n in names]
        for n, w in zip(names, weights):
            setattr(owner, n, w)
        try:
            return layer.call(x)
        finally:
            for n, w in zip(names, originals):
                setattr(owner, n, w)

    return f


@pytest.mark.parametrize(
    ("make", "x_shape", "names"),
    [
        (lambda: L.Conv1D(2, 3, padding="causal", dilation_rate=2, activation="tanh"), (2, 6, 3), ["kernel", "bias"]),
        (lambda: L.Conv1D(2, 2, strides=2, padding="same"), (1, 5, 2), ["kernel", "bias"]),
        (
            lambda: L.Conv2DTranspose(2, 3, strides=2, padding="same", activation="tanh"),
            (1, 3, 2, 2),
            ["kernel", "bias"],
        ),
        (lambda: L.Conv2DTranspose(3, (2, 3), strides=(1, 2)), (2, 2, 3, 2), ["kernel", "bias"]),
        (
            lambda: L.SeparableConv2D(2, 2, depth_multiplier=2, activation="sigmoid"),
            (1, 4, 3, 2),
            ["depthwise_kernel", "pointwise_kernel", "bias"],
        ),
        (lambda: L.Conv3D(2, (2, 2, 1), strides=(2, 1, 1), padding="same"), (1, 3, 3, 2, 2), ["kernel", "bias"]),
        (lambda: L.Conv3D(1, 2, dilation_rate=(2, 1, 1), activation="tanh"), (1, 4, 3, 3, 2), ["kernel", "bias"]),
        (lambda: L.Conv3DTranspose(2, 2, strides=(2, 1, 2), padding="same"), (1, 2, 2, 2, 2), ["kernel", "bias"]),
        (lambda: L.Conv3DTranspose(1, (3, 1, 2), strides=(2, 2, 1)), (1, 2, 2, 1, 2), ["kernel", "bias"]),
        (lambda: L.MaxPooling3D(2, strides=1, padding="same"), (1, 3, 3, 2, 2), []),
        (
            lambda: L.ConvLSTM2D(2, 2, padding="same", return_sequences=True, recurrent_activation="sigmoid"),
            (1, 3, 3, 2, 2),
            ["kernel", "recurrent_kernel", "bias"],
        ),
        (lambda: L.AveragePooling3D((3, 2, 2), strides=(2, 1, 2), padding="same"), (1, 4, 3, 3, 2), []),
        *[
            (
                lambda a=a, r=r, kind=kind: kind(2, activation=a, recurrent_activation=r, return_sequences=True),
                (2, 3, 2),
                ["kernel", "recurrent_kernel", "bias"],
            )
            for kind, a, r in [(L.LSTM, "softsign", "selu"), (L.GRU, "elu", "softplus"), (L.LSTM, "relu6", "softsign")]
        ],
    ],
)
def test_gradients_match_finite_differences(make, x_shape, names):
    layer = make()
    rng = np.random.default_rng(0)
    x = rng.normal(size=x_shape).astype(np.float32)
    layer(pe.tensor(x)).dispose()  # builds it
    weights = [rng.uniform(-1, 1, getattr(layer, n).shape).astype(np.float32) for n in names]
    check_gradients(with_weights(layer, names), x, *weights)
    layer.dispose()


def test_stacked_cells_gradients_match_finite_differences():
    layer = L.RNN([L.LSTMCell(2), L.GRUCell(2), L.SimpleRNNCell(2)], return_sequences=True)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 2)).astype(np.float32)
    layer(pe.tensor(x)).dispose()
    names = ["kernel", "recurrent_kernel", "bias"]
    weights = [rng.uniform(-1, 1, w.shape).astype(np.float32) for w in layer.weights]

    def run(x, *ws):
        originals = [[getattr(c, n) for n in names] for c in layer.cells]
        for k, cell in enumerate(layer.cells):
            for n, w in zip(names, ws[3 * k : 3 * k + 3]):
                setattr(cell, n, w)
        try:
            return layer.call(x)
        finally:
            for cell, values in zip(layer.cells, originals):
                for n, w in zip(names, values):
                    setattr(cell, n, w)

    check_gradients(run, x, *weights)
    layer.dispose()


def test_time_distributed_gradients_match_finite_differences():
    layer = L.TimeDistributed(L.Conv2D(2, 2, activation="tanh"))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 3, 3, 2)).astype(np.float32)
    layer(pe.tensor(x)).dispose()
    weights = [rng.uniform(-1, 1, w.shape).astype(np.float32) for w in layer.weights]
    check_gradients(with_weights(layer, ["kernel", "bias"], owner=layer.layer), x, *weights)
    layer.dispose()


@pytest.mark.usefixtures("each_backend")
def test_layers_on_each_backend_match_numpy_gradients_included():
    """Each layer's output and input/weight gradients on this backend equal numpy's."""
    rng = np.random.default_rng(5)
    rnn = L.RNN(L.LSTMCell(5), return_sequences=True, go_backwards=True)
    distributed = L.TimeDistributed(L.Conv2D(3, 2, activation="tanh"))
    layers = [
        (L.Conv1D(3, 3, padding="causal", activation="relu"), (2, 7, 4), None),
        (L.Conv2DTranspose(3, 3, strides=2, padding="valid"), (2, 4, 5, 3), None),
        (L.SeparableConv2D(4, 3, strides=2, padding="same", depth_multiplier=2), (2, 9, 8, 3), None),
        (rnn, (3, 6, 4), rnn.cell),
        (distributed, (2, 3, 5, 4, 2), distributed.layer),
        (L.Conv3D(3, 3, strides=(2, 1, 1), padding="same", activation="relu"), (2, 5, 4, 6, 3), None),
        (L.Conv3DTranspose(2, (2, 3, 2), strides=2, padding="valid"), (2, 3, 4, 2, 3), None),
        (L.MaxPooling3D((2, 3, 2), strides=(2, 1, 2), padding="same"), (2, 5, 6, 5, 3), None),
        (L.AveragePooling3D(3, strides=2, padding="same"), (2, 5, 6, 5, 3), None),
        (L.ConvLSTM2D(3, 3, padding="same", return_sequences=True), (2, 4, 5, 6, 2), None),
        (L.LSTM(3, activation="softsign", recurrent_activation="elu", return_sequences=True), (2, 5, 3), None),
        (L.GRU(3, activation="selu", recurrent_activation="softplus"), (2, 5, 3), None),
    ]
    for layer, shape, owner in layers:
        x_host = rng.normal(size=shape).astype(np.float32)
        layer(pe.tensor(x_host)).dispose()
        weights_host = [w.numpy() for w in layer.weights]
        results = {}
        for backend in ("numpy", pe.get_backend()):
            asyncio.run(pe.set_backend(backend))
            x = pe.tensor(x_host)
            weights = [pe.tensor(w) for w in weights_host]
            names = [name.rsplit("/", 1)[1] for name in layer.weight_names]
            f = with_weights(layer, names, owner)
            value = f(x, *weights)
            gradients = pe.grads(lambda *ts, f=f: (f(*ts) * f(*ts)).sum())(x, *weights)
            results[backend] = [value.numpy()] + [g.numpy() for g in gradients]
            pe.dispose([x, weights, value, gradients])
        for got, want in zip(results[pe.get_backend()], results["numpy"]):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        layer.dispose()


@pytest.mark.usefixtures("each_backend")
def test_a_model_of_these_layers_trains():
    """fit runs through every layer's gradients on this backend, and the loss falls."""
    x = L.Input(shape=(8, 3))
    a = L.Conv1D(4, 3, padding="causal", activation="relu")(x)
    b = L.TimeDistributed(L.Dense(4, activation="tanh"))(a)
    c = L.RNN([L.LSTMCell(3), L.GRUCell(2)])(b)
    frames = L.Input(shape=(2, 4, 4, 1))
    d = L.ConvLSTM2D(2, 2)(frames)
    e = L.Flatten()(L.Conv2DTranspose(2, 2, strides=2)(L.SeparableConv2D(2, 2, padding="same")(d)))
    f = L.Flatten()(L.AveragePooling3D(2)(L.Conv3DTranspose(2, (1, 2, 2))(L.Conv3D(2, (1, 2, 2))(frames))))
    out = L.Dense(1)(L.Concatenate()([c, e, f]))
    model = pe.Model([x, frames], out)
    model.compile(optimizer="adam", loss="mse")
    rng = np.random.default_rng(0)
    inputs = [rng.normal(size=(16, 8, 3)).astype(np.float32), rng.normal(size=(16, 2, 4, 4, 1)).astype(np.float32)]
    y = rng.normal(size=(16, 1)).astype(np.float32)
    try:
        losses = model.fit(inputs, y, epochs=6, batch_size=8, verbose=0).history["loss"]
        assert all(np.isfinite(losses)) and losses[-1] < losses[0], losses
    finally:
        model.dispose()
