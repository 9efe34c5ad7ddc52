# Train a classifier with live charts: pe.browser.training_progress() posts every batch and epoch to the page
# (the Charts panel draws them while fit runs), and pe.callbacks.LeakMonitor raises if a step leaks a tensor.
# pe.set_seed(0) makes the weights and fit's shuffles the same on every run: run it twice, the same val_loss.
pe.set_seed(0)
rng = np.random.default_rng(0)
labels = rng.integers(0, 3, 192)
x = (rng.normal(0, 3, (3, 8))[labels] + rng.normal(0, 2.5, (192, 8))).astype(np.float32)  # 3 blobs in 8-D

model = pe.Sequential(
    [
        pe.layers.Dense(16, activation="relu", input_shape=(8,)),
        pe.layers.Dense(3, activation="softmax"),
    ]
)
model.compile(
    optimizer=pe.optimizers.Adam(learning_rate=0.03), loss="sparse_categorical_crossentropy", metrics=["accuracy"]
)
history = model.fit(
    x,
    labels,
    batch_size=32,
    epochs=8,
    validation_split=0.25,
    verbose=0,
    callbacks=[pe.browser.training_progress(every="batch"), pe.callbacks.LeakMonitor()],
)
result = {k: round(v[-1], 3) for k, v in history.history.items()}
model.optimizer.dispose()
model.dispose()
print("last epoch:", result, "· tensors left:", pe.memory().num_tensors)
result
