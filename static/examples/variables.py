# Variables outlive scopes: a scope releases the tensors made inside it, never a variable. Here gradient descent
# fits y = x @ [1, 2, 3] with a variable made inside a scope and updated in place inside a scope per step.
if "w" in pe.ENGINE.variables:  # this example ran before: its variable is still alive
    pe.ENGINE.variables["w"].dispose()
before = pe.memory().num_tensors
with pe.scope():
    w = pe.variable(pe.zeros((3, 1)), name="w")  # the zeros go with the scope, the variable stays
xs = pe.tensor([[1.0, 2.0, 3.0], [0.0, 1.0, 0.0], [2.0, 0.0, 1.0], [1.0, 1.0, 1.0]])
ys = pe.tensor([[14.0], [2.0], [5.0], [6.0]])  # xs @ [1, 2, 3]

losses = []
for _ in range(60):
    with pe.scope():  # the loss, the gradient and the update's temporaries go at the end of each step
        loss, grads = pe.variable_grads(lambda: pe.mean(pe.square(xs @ w - ys)))
        w.assign(w - 0.1 * grads["w"])
        losses.append(float((await loss.data())[0]))

pe.browser.plot({"loss": losses}, title="Fitting a variable", x_label="step")
result = {"w": (await w.data()).round(2).tolist(), "loss": losses[-1], "new_tensors": pe.memory().num_tensors - before}
print("w =", result["w"], "after 60 steps; new tensors:", result["new_tensors"], "(w, xs and ys)")
result
