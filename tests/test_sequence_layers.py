"""Sequence layers against independent numpy computations (TF.js's semantics), on numpy and webgpu: Embedding, SimpleRNN,
LSTM, GRU, Bidirectional, LayerNormalization, MultiHeadAttention, positions, TransformerEncoder, GlobalAveragePooling1D;
Keras masks through layers and graphs; configs; errors; finite-difference gradients for inputs and weights."""

import asyncio

import numpy as np
import pytest

import py_engine as pe
from py_engine.errors import ShapeError
from tests.gradcheck import check_gradients

L = pe.layers


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


NP_ACTIVATIONS = {
    "tanh": np.tanh,
    "sigmoid": sigmoid,
    "hard_sigmoid": lambda x: np.clip(0.2 * x + 0.5, 0, 1),
    "relu": lambda x: np.maximum(x, 0),
    "linear": lambda x: x,
}


def ref_rnn(kind, x, weights, mask=None, activation="tanh", recurrent_activation="sigmoid", go_backwards=False):
    """(outputs [batch, time, units], h, c) of TF.js's rnn(): a masked step keeps the state and repeats the output."""
    kernel, rk, bias = (np.asarray(w, np.float64) for w in weights)
    x = np.asarray(x, np.float64)
    mask = np.ones(x.shape[:2], bool) if mask is None else np.asarray(mask, bool)
    if go_backwards:
        x, mask = x[:, ::-1], mask[:, ::-1]
    act, ract = NP_ACTIVATIONS[activation], NP_ACTIVATIONS[recurrent_activation]
    units = rk.shape[0]
    h = c = np.zeros((x.shape[0], units))
    outputs = []
    for t in range(x.shape[1]):
        xt = x[:, t] @ kernel + bias
        if kind == "lstm":
            zi, zf, zg, zo = np.split(xt + h @ rk, 4, axis=1)
            c_new = ract(zf) * c + ract(zi) * act(zg)
            h_new = ract(zo) * act(c_new)
        elif kind == "gru":
            xz, xr, xh = np.split(xt, 3, axis=1)
            z = ract(xz + h @ rk[:, :units])
            r = ract(xr + h @ rk[:, units : 2 * units])
            h_new = z * h + (1 - z) * act(xh + (r * h) @ rk[:, 2 * units :])
            c_new = c
        else:
            h_new, c_new = act(xt + h @ rk), c
        keep = mask[:, t, None]
        h, c = np.where(keep, h_new, h), np.where(keep, c_new, c)
        outputs.append(h)
    return np.stack(outputs, 1), h, c


def call(layer, *xs, **kwargs):
    """The layer's output(s) on numpy inputs, as numpy arrays (tensors released)."""
    ts = [pe.tensor(x) for x in xs]
    mask = kwargs.pop("mask", None)
    m = None if mask is None else pe.tensor(np.asarray(mask, bool))
    try:
        out = layer(ts if len(ts) > 1 else ts[0], mask=m, **kwargs) if m is not None else layer(*ts, **kwargs)
        return [o.numpy() for o in out] if isinstance(out, list) else out.numpy()
    finally:
        pe.dispose([ts, m, locals().get("out")])


def check_weight_gradients(layer, inputs, mask=None, eps=1e-3, rtol=2e-2, atol=5e-3, **kwargs):
    """pe.variable_grads of sum(layer(inputs) * w) for every trainable weight against central differences, as
    tests/gradcheck.py does for op inputs."""
    xs = [pe.tensor(x) for x in inputs]
    m = None if mask is None else pe.tensor(np.asarray(mask, bool))

    def output():
        arg = xs if len(xs) > 1 else xs[0]
        return layer(arg, mask=m, **kwargs) if m is not None else layer(*xs, **kwargs)

    probe = output()
    w = pe.tensor(np.random.default_rng(1).normal(size=probe.shape).astype(np.float32))
    pe.dispose(probe)

    def loss():
        return (output() * w).sum()

    variables = layer.trainable_weights
    assert variables, f"{layer.name} has no trainable weights"
    value, analytic = pe.variable_grads(loss, variables)
    pe.dispose(value)
    try:
        for v in variables:
            base = v.numpy().astype(np.float32)
            numeric = np.zeros(base.shape, np.float64)
            for idx in np.ndindex(base.shape):
                values = []
                for step in (eps, -eps):
                    moved = base.copy()
                    moved[idx] += step
                    v.assign(moved)
                    values.append(np.float64(pe.tidy(loss).item()))
                numeric[idx] = (values[0] - values[1]) / (2 * eps)
            v.assign(base)
            np.testing.assert_allclose(analytic[v.var_name].numpy(), numeric, rtol=rtol, atol=atol, err_msg=v.var_name)
    finally:
        pe.dispose([xs, m, w, analytic])


def set_seeded_weights(layer, seed, scale=0.6):
    rng = np.random.default_rng(seed)
    layer.set_weights([rng.uniform(-scale, scale, w.shape).astype(np.float32) for w in layer.weights])


PADDED_IDS = np.array([[3, 1, 4, 1, 5], [6, 5, 3, 0, 0], [0, 0, 7, 2, 9], [2, 0, 0, 1, 8]], np.int32)

# ---- Embedding ----------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("each_backend")
def test_embedding_gathers_rows_and_masks_padding():
    layer = L.Embedding(10, 4, mask_zero=True, name="emb")
    ids = pe.tensor(PADDED_IDS)
    try:
        out = layer(ids)
        (table,) = layer.get_weights()
        np.testing.assert_array_equal(out.numpy(), table[PADDED_IDS])
        assert layer.weight_names == ["emb/embeddings"] and table.shape == (10, 4)
        assert np.abs(table).max() <= 0.05  # Keras's uniform(-0.05, 0.05)
        mask = layer.compute_mask(ids)
        np.testing.assert_array_equal(mask.numpy(), PADDED_IDS != 0)
        as_floats = call(layer, PADDED_IDS.astype(np.float32))  # predict feeds float32: ids are cast
        np.testing.assert_array_equal(as_floats, table[PADDED_IDS])
        assert L.Embedding(10, 4).compute_mask(ids) is None
        pe.dispose([out, mask])
    finally:
        pe.dispose(ids)
        layer.dispose()


def test_embedding_config_and_sequential_start():
    layer = L.Embedding(7, 3, mask_zero=True, input_length=5, name="emb")
    config = layer.get_config()
    assert config["batch_input_shape"] == [None, 5] and config["mask_zero"] and config["input_length"] == 5
    model = pe.Sequential([L.Embedding(7, 3), L.GlobalAveragePooling1D()])  # TF.js: the input shape is [None, None]
    out = model.predict(np.array([[1, 2, 3, 4, 5, 6]]))
    assert out.shape == (1, 3)
    with pytest.raises(ShapeError, match="input_length is 5"):
        layer.compute_output_shape((None, 6))
    with pytest.raises(ValueError, match="input_dim must be a positive int"):
        L.Embedding(0, 3)
    pe.dispose(out)
    model.dispose()


# ---- SimpleRNN, LSTM, GRU ------------------------------------------------------------------------------------

RNN_CASES = [
    ("lstm", L.LSTM, {}),
    ("lstm", L.LSTM, {"activation": "relu", "recurrent_activation": "hard_sigmoid", "go_backwards": True}),
    ("gru", L.GRU, {}),
    ("gru", L.GRU, {"activation": "linear", "recurrent_activation": "hard_sigmoid", "go_backwards": True}),
    ("simple", L.SimpleRNN, {}),
    ("simple", L.SimpleRNN, {"activation": "relu", "go_backwards": True}),
]


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("kind, cls, kwargs", RNN_CASES, ids=lambda v: v if isinstance(v, str) else None)
@pytest.mark.parametrize("masked", [False, True], ids=["no-mask", "mask"])
def test_recurrent_layers_match_numpy(rng, kind, cls, kwargs, masked):
    x = rng.normal(size=(4, 5, 3)).astype(np.float32)
    mask = PADDED_IDS != 0 if masked else None
    sequences = cls(6, return_sequences=True, **kwargs)
    final = cls(6, return_state=True, **kwargs)
    try:
        got = call(sequences, x, mask=mask)
        set_seeded_weights(sequences, 0)
        got = call(sequences, x, mask=mask)
        activations = {k: v for k, v in kwargs.items() if k != "go_backwards"}
        want, h, c = ref_rnn(
            kind, x, sequences.get_weights(), mask, go_backwards=kwargs.get("go_backwards", False), **activations
        )
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        call(final, x)  # builds it
        final.set_weights(sequences.get_weights())
        outputs = call(final, x, mask=mask)
        assert len(outputs) == (3 if kind == "lstm" else 2)
        np.testing.assert_allclose(outputs[0], want[:, -1], rtol=1e-4, atol=1e-5)  # the output is the last h
        np.testing.assert_allclose(outputs[1], h, rtol=1e-4, atol=1e-5)
        if kind == "lstm":
            np.testing.assert_allclose(outputs[2], c, rtol=1e-4, atol=1e-5)
    finally:
        sequences.dispose()
        final.dispose()


def test_masked_steps_carry_the_state(rng):
    """A padded sequence ends in the state of its real steps, and a masked step repeats the previous output."""
    layer = L.LSTM(5, return_sequences=True)
    x = rng.normal(size=(2, 6, 3)).astype(np.float32)
    mask = np.array([[1, 1, 1, 0, 0, 0], [1, 0, 1, 1, 0, 1]], bool)
    try:
        padded = call(layer, x, mask=mask)
        np.testing.assert_array_equal(padded[0, 3:], np.repeat(padded[0, 2:3], 3, axis=0))
        np.testing.assert_array_equal(padded[1, 1], padded[1, 0])
        short = call(layer, x[:1, :3])
        np.testing.assert_allclose(padded[0, :3], short[0], rtol=1e-5, atol=1e-6)
        unmasked = call(layer, x)
        assert np.abs(unmasked[0, 3:] - padded[0, 3:]).max() > 1e-3  # the mask changed something
    finally:
        layer.dispose()


def test_recurrent_weights_configs_and_initializers():
    lstm = L.LSTM(4, name="lstm")
    out = call(lstm, np.zeros((1, 2, 3), np.float32))
    assert out.shape == (1, 4)
    kernel, rk, bias = lstm.get_weights()
    assert lstm.weight_names == ["lstm/kernel", "lstm/recurrent_kernel", "lstm/bias"]
    assert kernel.shape == (3, 16) and rk.shape == (4, 16) and bias.shape == (16,)
    np.testing.assert_array_equal(bias, np.r_[np.zeros(4), np.ones(4), np.zeros(8)])  # unit_forget_bias
    np.testing.assert_allclose(rk @ rk.T, np.eye(4), atol=1e-5)  # orthogonal rows
    config = lstm.get_config()
    assert config["recurrent_initializer"]["class_name"] == "Orthogonal"
    assert (config["activation"], config["recurrent_activation"]) == ("tanh", "sigmoid")
    again = L.LSTM.from_config({**config, "name": "lstm_again"})
    assert again.get_config() == {**config, "name": "lstm_again"}
    gru = L.GRU(2)
    assert gru.get_config()["reset_after"] is False
    lstm.dispose()


def test_recurrent_errors_say_what_to_do(rng):
    with pytest.raises(ValueError, match=r"reset_after=True is not supported; TF\.js 4\.22"):
        L.GRU(3, reset_after=True)
    with pytest.raises(ValueError, match="stateful and time_major layers are not supported"):
        L.LSTM(3, stateful=True)
    with pytest.raises(ValueError, match="'swish' is not supported in recurrent layers"):
        L.SimpleRNN(3, activation="swish")
    layer = L.LSTM(3, recurrent_dropout=0.5)
    x = pe.tensor(rng.normal(size=(2, 4, 3)).astype(np.float32))
    try:
        pe.dispose(layer(x))  # inference ignores recurrent dropout, as TF.js
        with pytest.raises(ValueError, match="training with recurrent_dropout is not supported"):
            layer(x, training=True)
        with pytest.raises(ShapeError, match=r"inputs have 5 features .* built for 3"):
            layer(pe.zeros((2, 4, 5)))
        with pytest.raises(ShapeError, match="needs inputs \\[batch, time, features\\]"):
            L.GRU(2)(pe.zeros((2, 3)))
        with pytest.raises(TypeError, match="does not support masking"):
            L.Flatten()(x, mask=pe.ones((2, 4), "bool"))
    finally:
        pe.dispose(x)
        layer.dispose()


# ---- Bidirectional -------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("merge_mode", ["concat", "sum", "ave", "mul", None])
def test_bidirectional_runs_both_directions_and_merges(rng, merge_mode):
    x = rng.normal(size=(4, 5, 3)).astype(np.float32)
    layer = L.Bidirectional(L.GRU(3, return_sequences=True, name="gru"), merge_mode=merge_mode, name="bi")
    try:
        call(layer, x)
        assert layer.weight_names == [
            f"bi/{d}_gru/{w}" for d in ("forward", "backward") for w in ("kernel", "recurrent_kernel", "bias")
        ]
        set_seeded_weights(layer, 3)
        weights = layer.get_weights()
        got = call(layer, x, mask=PADDED_IDS != 0)
        forward, _, _ = ref_rnn("gru", x, weights[:3], PADDED_IDS != 0)
        backward, _, _ = ref_rnn("gru", x, weights[3:], PADDED_IDS != 0, go_backwards=True)
        backward = backward[:, ::-1]  # back in time order
        want = {
            "concat": np.concatenate([forward, backward], -1),
            "sum": forward + backward,
            "ave": (forward + backward) / 2,
            "mul": forward * backward,
            None: [forward, backward],
        }[merge_mode]
        for g, w in zip(got if merge_mode is None else [got], want if merge_mode is None else [want]):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    finally:
        layer.dispose()


def test_bidirectional_states_and_config(rng):
    layer = L.Bidirectional(L.LSTM(2, return_state=True, name="lstm"), name="bi")
    outputs = call(layer, rng.normal(size=(3, 4, 2)).astype(np.float32))
    assert [o.shape for o in outputs] == [(3, 4), (3, 2), (3, 2), (3, 2), (3, 2)]  # merged, h, c forward, backward
    np.testing.assert_allclose(outputs[0], np.concatenate([outputs[1], outputs[3]], -1), rtol=1e-6)
    config = layer.get_config()
    assert config["layer"]["class_name"] == "LSTM" and config["layer"]["config"]["name"] == "lstm"
    again = L.Bidirectional.from_config(config)
    assert again.backward_layer.go_backwards and not again.forward_layer.go_backwards
    with pytest.raises(TypeError, match="wraps a recurrent layer"):
        L.Bidirectional(L.Dense(3))
    layer.dispose()


# ---- LayerNormalization, GlobalAveragePooling1D, positions ---------------------------------------------------


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("axis", [-1, [1, 2]])
def test_layer_normalization_matches_numpy(rng, axis):
    x = rng.normal(2, 3, size=(3, 4, 5)).astype(np.float32)
    layer = L.LayerNormalization(axis=axis, epsilon=1e-3, name="norm")
    try:
        call(layer, x)
        set_seeded_weights(layer, 4)
        gamma, beta = layer.get_weights()
        assert layer.weight_names == ["norm/gamma", "norm/beta"]
        axes = (2,) if axis == -1 else (1, 2)
        mean, var = x.mean(axes, keepdims=True), x.var(axes, keepdims=True)
        want = (x - mean) / np.sqrt(var + 1e-3) * gamma + beta
        np.testing.assert_allclose(call(layer, x), want, rtol=1e-4, atol=1e-4)
        assert L.LayerNormalization.from_config(layer.get_config()).get_config() == layer.get_config()
    finally:
        layer.dispose()


@pytest.mark.usefixtures("each_backend")
def test_global_average_pooling1d_averages_the_real_steps(rng):
    x = rng.normal(size=(4, 5, 3)).astype(np.float32)
    mask = PADDED_IDS != 0
    layer = L.GlobalAveragePooling1D(keepdims=True)
    want = (x * mask[..., None]).sum(1, keepdims=True) / mask.sum(1)[:, None, None]
    np.testing.assert_allclose(call(layer, x, mask=mask), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(call(L.GlobalAveragePooling1D(), x), x.mean(1), rtol=1e-5, atol=1e-6)
    assert layer.compute_mask(None, pe.ones((4, 5), "bool")) is None


@pytest.mark.usefixtures("each_backend")
def test_position_embeddings(rng):
    x = rng.normal(size=(2, 4, 6)).astype(np.float32)
    learned = L.PositionEmbedding(sequence_length=7, name="pos")
    sine = L.SinePositionEncoding()
    tokens = L.TokenAndPositionEmbedding(10, 5, 6, mask_zero=True, name="tp")
    try:
        out = call(learned, x)
        (table,) = learned.get_weights()
        assert table.shape == (7, 6) and learned.weight_names == ["pos/embeddings"]
        np.testing.assert_array_equal(out, np.broadcast_to(table[:4], x.shape))
        encoding = call(sine, x)[0]
        angles = np.arange(4)[:, None] / 10000 ** ((2 * (np.arange(6) // 2)) / 6)
        np.testing.assert_allclose(encoding[:, 0::2], np.sin(angles[:, 0::2]), atol=1e-6)
        np.testing.assert_allclose(encoding[:, 1::2], np.cos(angles[:, 1::2]), atol=1e-6)
        ids = PADDED_IDS[:2]
        got = call(tokens, ids.astype(np.float32))
        token_table, position_table = tokens.get_weights()
        assert tokens.weight_names == ["tp/token_embedding/embeddings", "tp/position_embedding/embeddings"]
        np.testing.assert_allclose(got, token_table[ids] + position_table[:5], rtol=1e-6)
        with pytest.raises(ShapeError, match="longer than sequence_length 7"):
            learned.compute_output_shape((None, 8, 6))
    finally:
        learned.dispose()
        tokens.dispose()


# ---- MultiHeadAttention and TransformerEncoder -------------------------------------------------------------


def ref_attention(layer, query, value, allowed=None):
    """Keras's MultiHeadAttention in float64 einsums: (output, attention weights)."""
    wq, bq, wk, bk, wv, bv, wo, bo = (w.astype(np.float64) for w in layer.get_weights())
    q = np.einsum("btd,dhk->bhtk", query, wq) + bq[None, :, None]
    k = np.einsum("btd,dhk->bhtk", value, wk) + bk[None, :, None]
    v = np.einsum("btd,dhk->bhtk", value, wv) + bv[None, :, None]
    scores = np.einsum("bhqk,bhsk->bhqs", q / np.sqrt(wq.shape[-1]), k)
    if allowed is not None:
        scores = np.where(allowed[:, None], scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    mixed = np.einsum("bhqs,bhsv->bqhv", weights, v)
    return np.einsum("bqhv,hvo->bqo", mixed, wo) + bo, weights


@pytest.mark.usefixtures("each_backend")
def test_multi_head_attention_matches_numpy_with_padding_masks(rng):
    query = rng.normal(size=(4, 3, 6)).astype(np.float32)
    value = rng.normal(size=(4, 5, 4)).astype(np.float32)
    layer = L.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=2, name="mha")
    q, v = pe.tensor(query), pe.tensor(value)
    value_mask = pe.tensor(PADDED_IDS != 0)
    try:
        pe.dispose(layer(q, v))
        assert layer.weight_names == [
            f"mha/{p}/{w}" for p in ("query", "key", "value", "attention_output") for w in ("kernel", "bias")
        ]
        assert [w.shape for w in layer.weights][::2] == [(6, 2, 3), (4, 2, 3), (4, 2, 2), (2, 2, 6)]
        set_seeded_weights(layer, 5)
        out, weights = layer(q, v, value_mask=value_mask, return_attention_scores=True)
        allowed = np.broadcast_to((PADDED_IDS != 0)[:, None, :], (4, 3, 5))
        want, want_weights = ref_attention(layer, query, value, allowed)
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(weights.numpy(), want_weights, rtol=1e-4, atol=1e-6)
        assert (weights.numpy()[np.broadcast_to(~allowed[:, None], weights.shape)] == 0).all()  # exactly zero
        pe.dispose([out, weights])
    finally:
        pe.dispose([q, v, value_mask])
        layer.dispose()


@pytest.mark.usefixtures("each_backend")
def test_causal_attention_gives_future_positions_exactly_zero_weight(rng):
    x = pe.tensor(rng.normal(size=(3, 6, 8)).astype(np.float32))
    layer = L.MultiHeadAttention(num_heads=4, key_dim=2)
    try:
        out, weights = layer(x, x, use_causal_mask=True, return_attention_scores=True)
        w = weights.numpy()
        future = np.triu(np.ones((6, 6), bool), 1)
        assert (w[..., future] == 0).all(), "a position attended to a later one"
        assert (w[..., ~future] > 0).all()
        np.testing.assert_allclose(w.sum(-1), 1, rtol=1e-5)
        # the output at step t depends only on steps <= t: changing the last step leaves the others alone
        x2 = pe.tensor(np.concatenate([x.numpy()[:, :5], rng.normal(size=(3, 1, 8))], 1).astype(np.float32))
        out2 = layer(x2, x2, use_causal_mask=True)
        np.testing.assert_allclose(out2.numpy()[:, :5], out.numpy()[:, :5], rtol=1e-5, atol=1e-6)
        pe.dispose([out, weights, x2, out2])
    finally:
        pe.dispose(x)
        layer.dispose()


@pytest.mark.usefixtures("each_backend")
def test_transformer_encoder_ignores_padding_and_keeps_the_mask(rng):
    ids = np.array([[4, 2, 7, 0, 0], [1, 3, 0, 0, 0]], np.float32)
    inputs = L.Input(shape=(5,))
    embed = L.TokenAndPositionEmbedding(10, 5, 8, mask_zero=True)
    x = L.TransformerEncoder(intermediate_dim=12, num_heads=2)(embed(inputs))
    pooled = L.GlobalAveragePooling1D()(x)
    model = pe.Model(inputs, [x, pooled])
    try:
        encoded, mean = model.predict(ids)
        real = ids != 0
        np.testing.assert_allclose(  # the pooled mean covers the real steps only: the mask reached it
            mean.numpy(), (encoded.numpy() * real[..., None]).sum(1) / real.sum(1, keepdims=True), rtol=1e-4, atol=1e-5
        )
        tokens, positions = embed.get_weights()
        tokens[0] = rng.normal(size=8)  # what the padding looks like: no real position may notice
        embed.set_weights([tokens, positions])
        again, _ = model.predict(ids)
        np.testing.assert_allclose(again.numpy()[real], encoded.numpy()[real], rtol=1e-4, atol=1e-5)
        assert np.abs(again.numpy()[~real] - encoded.numpy()[~real]).max() > 1e-3  # the padding itself changed
        pe.dispose([encoded, mean, again, _])
    finally:
        model.dispose()


def test_transformer_encoder_blocks_and_causal_option(rng):
    x = rng.normal(size=(2, 4, 6)).astype(np.float32)
    for normalize_first in (False, True):
        layer = L.TransformerEncoder(8, 3, normalize_first=normalize_first, name="enc")
        out = call(layer, x)
        a, norm1, d1, d2, norm2 = (
            layer.attention,
            layer.attention_norm,
            layer.intermediate,
            layer.output_dense,
            layer.feedforward_norm,
        )
        t = pe.tensor(x)
        h = norm1.call(t) if normalize_first else t
        h = a.attend(h, h, None, None, False, False) + t
        h = h if normalize_first else norm1.call(h)
        f = norm2.call(h) if normalize_first else h
        f = d2.call(d1.call(f)) + h
        want = f if normalize_first else norm2.call(f)
        np.testing.assert_allclose(out, want.numpy(), rtol=1e-5, atol=1e-6)
        assert layer.weight_names[0] == "enc/self_attention_layer/query/kernel"
        assert layer.weight_names[-1] == "enc/feedforward_layer_norm/beta"
        pe.dispose([t, h, f, want])
        layer.dispose()
    causal = L.TransformerEncoder(8, 2, causal=True)
    first = call(causal, x)
    changed = x.copy()
    changed[:, -1] += 1
    np.testing.assert_allclose(call(causal, changed)[:, :3], first[:, :3], rtol=1e-5, atol=1e-6)
    causal.dispose()
    with pytest.raises(ShapeError, match="do not split into 4 heads"):
        call(L.TransformerEncoder(8, 4), x)


# ---- graphs: masks through layers, several outputs, configs --------------------------------------------------


def test_masks_flow_through_a_graph_and_are_released(rng):
    inputs = L.Input(shape=(None,))
    x = L.Embedding(10, 4, mask_zero=True)(inputs)
    x = L.LayerNormalization()(x)  # passes the mask on
    seq = L.GRU(3, return_sequences=True)(x)  # the mask goes on with the sequence
    out, h = L.SimpleRNN(2, return_state=True)(seq)
    model = pe.Model(inputs, [out, h])
    weights = len(model.weights)
    try:
        got_out, got_h = model.predict(PADDED_IDS)
        np.testing.assert_array_equal(got_out.numpy(), got_h.numpy())
        short, short_h = model.predict(np.array([[6, 5, 3]]))
        # row 1 is [6, 5, 3, 0, 0]: the padded steps change nothing, though the model's input length is 5
        np.testing.assert_allclose(got_out.numpy()[1], short.numpy()[0], rtol=1e-5, atol=1e-6)
        pe.dispose([got_out, got_h, short, short_h])
        assert pe.memory().num_tensors == weights, pe.leaks()  # masks and intermediates are released
        ids = pe.tensor(PADDED_IDS)
        pe.dispose([model(ids), ids])
        assert pe.memory().num_tensors == weights, pe.leaks()
    finally:
        model.dispose()


def test_a_layer_without_masking_drops_the_mask(rng):
    inputs = L.Input(shape=(5,))
    x = L.Embedding(10, 4, mask_zero=True)(inputs)
    x = L.Reshape((5, 4))(x)  # does not support masking: its output carries none (as in TF.js)
    model = pe.Model(inputs, L.LSTM(3, return_sequences=True)(x))
    try:
        out = model.predict(PADDED_IDS[1:2])
        padded = out.numpy()
        assert np.abs(padded[0, 4] - padded[0, 2]).max() > 1e-4  # the padded steps ran
        pe.dispose(out)
    finally:
        model.dispose()


def test_save_and_load_every_sequence_layer(tmp_path, rng):
    inputs = L.Input(shape=(5,))
    x = L.TokenAndPositionEmbedding(10, 5, 8, mask_zero=True)(inputs)
    x = L.TransformerEncoder(16, 2, normalize_first=True)(x)
    mha = L.MultiHeadAttention(2, 4, name="cross")(x, x)
    x = L.LayerNormalization()(mha)
    x = L.Bidirectional(L.LSTM(3, return_sequences=True, go_backwards=True), merge_mode="sum")(x)
    x = L.GRU(3, return_sequences=True)(x)
    seq = L.SimpleRNN(4, return_sequences=True, activation="relu")(x)
    emb = L.Embedding(10, 4, mask_zero=True)(inputs)
    pooled = L.GlobalAveragePooling1D()(L.SinePositionEncoding()(emb))
    positions = L.PositionEmbedding(5)(emb)
    model = pe.Model(inputs, [seq, pooled, positions])
    for k, w in enumerate(model.weights):
        w.assign(np.random.default_rng(k).uniform(-0.5, 0.5, w.shape).astype(np.float32))
    want = model.predict(PADDED_IDS)
    model.save(tmp_path)
    loaded = asyncio.run(pe.load_layers_model(tmp_path))
    try:
        assert loaded.weight_names == model.weight_names
        got = loaded.predict(PADDED_IDS)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
        pe.dispose([got, want])
    finally:
        model.dispose()
        loaded.dispose()


def test_attention_in_a_graph_refuses_call_options():
    x = L.Input(shape=(4, 6))
    with pytest.raises(TypeError, match="use_causal_mask and return_attention_scores work on tensors"):
        L.MultiHeadAttention(2, 3)(x, x, use_causal_mask=True)


# ---- gradients (finite differences, numpy) -----------------------------------------------------------------


@pytest.mark.parametrize("kind, cls, kwargs", RNN_CASES, ids=lambda v: v if isinstance(v, str) else None)
def test_recurrent_layer_gradients(rng, kind, cls, kwargs):
    x = rng.normal(size=(2, 4, 3)).astype(np.float32)
    mask = np.array([[1, 1, 0, 1], [1, 0, 0, 0]], bool)
    layer = cls(3, return_sequences=True, **kwargs)
    try:
        pe.dispose(layer(pe.tensor(x)))
        set_seeded_weights(layer, 6)
        m = pe.tensor(mask)
        check_gradients(lambda t: layer(t, mask=m), x)
        check_gradients(lambda t: layer(t), x)
        check_weight_gradients(layer, [x], mask)
        pe.dispose(m)
    finally:
        layer.dispose()


def test_bidirectional_and_embedding_gradients(rng):
    ids = PADDED_IDS[:2, :4]
    emb = L.Embedding(10, 3, mask_zero=True)
    bi = L.Bidirectional(L.LSTM(2, return_sequences=True), merge_mode="concat")
    x = rng.normal(size=(2, 4, 3)).astype(np.float32)
    try:
        pe.dispose(bi(pe.tensor(x)))
        set_seeded_weights(bi, 7)
        check_gradients(lambda t: bi(t), x)
        check_weight_gradients(bi, [x], ids != 0)
        pe.dispose(emb(pe.tensor(ids)))
        set_seeded_weights(emb, 8, scale=1.0)
        check_weight_gradients(emb, [ids])
    finally:
        emb.dispose()
        bi.dispose()


def test_normalization_pooling_and_position_gradients(rng):
    x = rng.normal(size=(2, 4, 3)).astype(np.float32)
    norm, pos = L.LayerNormalization(), L.PositionEmbedding(5)
    tokens = L.TokenAndPositionEmbedding(10, 4, 3, mask_zero=True)
    mask = pe.tensor(PADDED_IDS[:2, :4] != 0)
    try:
        pe.dispose([norm(pe.tensor(x)), pos(pe.tensor(x)), tokens(pe.tensor(PADDED_IDS[:2, :4]))])
        set_seeded_weights(norm, 9)
        check_gradients(lambda t: norm(t), x)
        check_weight_gradients(norm, [x])
        check_weight_gradients(pos, [x])
        check_weight_gradients(tokens, [PADDED_IDS[:2, :4]])
        check_gradients(lambda t: L.GlobalAveragePooling1D()(t, mask=mask), x)
    finally:
        pe.dispose(mask)
        norm.dispose()
        pos.dispose()
        tokens.dispose()


def test_attention_and_transformer_gradients(rng):
    query = rng.normal(size=(2, 3, 4)).astype(np.float32)
    value = rng.normal(size=(2, 4, 4)).astype(np.float32)
    mha = L.MultiHeadAttention(2, 2)
    encoder = L.TransformerEncoder(5, 2, normalize_first=True)
    mask = pe.tensor(PADDED_IDS[:2, :4] != 0)
    try:
        pe.dispose([mha(pe.tensor(query), pe.tensor(value)), encoder(pe.tensor(value))])
        set_seeded_weights(mha, 10)
        check_gradients(lambda q, v: mha(q, v, value_mask=mask), query, value)
        check_weight_gradients(mha, [query, value], use_causal_mask=True)
        set_seeded_weights(encoder, 11, scale=0.4)
        check_gradients(lambda t: encoder(t, mask=mask), value)
        check_weight_gradients(encoder, [value], PADDED_IDS[:2, :4] != 0)
    finally:
        pe.dispose(mask)
        mha.dispose()
        encoder.dispose()
