# A small Transformer language model: a causal TransformerEncoder learns which character comes next in a synthetic
# language of the words "ab", "cde" and "fghi" (inside a word the next character is certain, after a space it is
# one of three: the best possible loss is about ln(3)/4 = 0.27 nats per character).
L = pe.layers
WORDS, T, CHARS = ["ab", "cde", "fghi"], 12, " abcdefghi"
rng = np.random.default_rng(0)
rows = []
for _ in range(64):
    text = ""
    while len(text) <= T:
        text += WORDS[rng.integers(3)] + " "
    rows.append([CHARS.index(c) for c in text[: T + 1]])
rows = np.array(rows, np.int32)
x, y = rows[:, :-1], rows[:, 1:]  # predict each next character

ids = L.Input(shape=(T,))
h = L.TokenAndPositionEmbedding(len(CHARS), T, 16)(ids)
h = L.TransformerEncoder(32, 2, causal=True)(h)  # each position attends only to the characters before it
model = pe.Model(ids, L.Dense(len(CHARS), activation="softmax")(h))
model.compile(pe.optimizers.Adam(0.02), "sparse_categorical_crossentropy", metrics=["accuracy"])
history = model.fit(x, y, batch_size=32, epochs=6, verbose=0, seed=0, callbacks=[pe.browser.training_progress()])
result = {"loss": [round(v, 3) for v in history.history["loss"]], "accuracy": round(history.history["accuracy"][-1], 3)}
model.optimizer.dispose()
model.dispose()
result
