# A BiLSTM-CRF tagger (pe.layers.CRF): tags depend on the tag before them, which a CRF layer learns. Words 1-9
# (0 pads); words 1-3 begin an entity (tag 1), words 4-6 continue one (tag 2) only right after tag 1 or 2.
L = pe.layers
STEPS = 8


def grammar(n, seed):
    rng = np.random.default_rng(seed)
    x, y = np.zeros((n, STEPS), np.int32), np.zeros((n, STEPS), np.int32)
    for i in range(n):
        previous = 0
        for t in range(rng.integers(3, STEPS + 1)):
            word = rng.integers(1, 10)
            tag = 1 if word <= 3 else (2 if previous in (1, 2) else 0) if word <= 6 else 0
            x[i, t], y[i, t], previous = word, tag, tag
    return x, y


x, y = grammar(128, 0)
test_x, test_y = grammar(32, 1)
ids = L.Input(shape=(STEPS,))
h = L.Embedding(10, 8, mask_zero=True)(ids)  # mask_zero: the LSTMs and the CRF skip the padding
h = L.Bidirectional(L.LSTM(8, return_sequences=True))(h)
crf = L.CRF(3)
model = pe.Model(ids, crf(L.Dense(3)(h)))
model.compile(pe.optimizers.Adam(0.03), loss=crf.loss, metrics=[crf.accuracy])
history = model.fit(x, y, batch_size=32, epochs=6, verbose=0, seed=0, callbacks=[pe.browser.training_progress()])
with pe.scope():
    tags = (await model.predict(test_x).data()).reshape(test_x.shape)  # predict decodes the best tags (Viterbi)
words = test_x > 0
result = {
    "loss": [round(v, 3) for v in history.history["loss"]],
    "token_accuracy": float((tags == test_y)[words].mean()),
}
print("words:", test_x[0].tolist(), "\ntags: ", tags[0].astype(int).tolist(), "\ntrue: ", test_y[0].tolist())
model.optimizer.dispose()
model.dispose()
result
