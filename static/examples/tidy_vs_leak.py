# Tidy vs a leak: watch the tensor counter. Tensors made inside pe.tidy() are released when it returns; tensors
# made outside it stay alive until they are disposed, even when Python no longer refers to them.
pe.set_debug(True)  # record the line that makes each tensor: the Memory lab's "Find leaks" names it
w = pe.random_normal((32, 32), seed=0)

start = pe.memory().num_tensors


def step():
    (w @ w).relu().sum()  # returns nothing: tidy releases the product, the relu and the sum


with_tidy = []
for _ in range(30):
    pe.tidy(step)
    with_tidy.append(pe.memory().num_tensors - start)
without_tidy = []
for _ in range(30):
    total = (w @ w).relu().sum()  # 3 tensors a step stay alive: this line leaks
    without_tidy.append(pe.memory().num_tensors - start)

pe.browser.plot({"with tidy": with_tidy, "without tidy": without_tidy}, title="New tensors per step", x_label="step")
print(f"30 steps with tidy: {with_tidy[-1]} new tensors; without: {without_tidy[-1]}")
print("'Find leaks' in the Memory lab shows the line; 'Clear namespace' frees them.")
result = {"with_tidy": with_tidy[-1], "without_tidy": without_tidy[-1]}
result
