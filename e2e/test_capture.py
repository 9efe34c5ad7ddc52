"""pe.capture in the page: the classifier's captured forward pass replays through one bridge call, with little
Python per replay, and computes what the uncaptured forward pass computes."""

REPLAYS = 20
PYTHON_MS_BOUND = 5.0  # generous: a replay is one bridge call (measured well under a millisecond)

MEASURE = f"""
import time
import numpy as np
import playground

await playground.load_classifier()
c = playground._classifier
tensors = pe.memory().num_tensors
x = pe.zeros((1, 224, 224, 3))
for _ in range(2):  # records the forward pass (unless an earlier classification did), then replays it
    pe.dispose(c.forward(x))

def python_ms(forward):
    with pe.scope():  # the uncaptured forward's intermediates go with it
        start = time.perf_counter()
        forward(x)
        return (time.perf_counter() - start) * 1e3

stats = pe.stats()
replays = [python_ms(c.forward) for _ in range({REPLAYS})]
after = pe.stats()
uncaptured = [python_ms(c.logits) for _ in range(3)]
with pe.scope():
    same = bool(np.array_equal(await c.forward(x).data(), await c.logits(x).data()))
x.dispose()
{{
    "replay_ms": sorted(replays),
    "uncaptured_ms": sorted(uncaptured),
    "moved": {{k: after[k] - stats[k] for k in ("dispatches", "submits", "uploads", "readbacks", "capture_replays")}},
    "programs": after["capture_programs"],
    "capture_bytes": after["capture_bytes"],
    "new_tensors": pe.memory().num_tensors - tensors,
    "same": same,
}}
"""


def test_the_captured_forward_replays_in_one_bridge_call_with_little_python(gpu_page):
    result = gpu_page.run(MEASURE, timeout_s=600)
    median = result["replay_ms"][REPLAYS // 2]
    print(
        f"\ncaptured forward, Python per replay: median {median:.3f} ms (min {result['replay_ms'][0]:.3f}, "
        f"max {result['replay_ms'][-1]:.3f}); uncaptured forward: median {result['uncaptured_ms'][1]:.1f} ms; "
        f"{result['moved']['dispatches'] // REPLAYS} dispatches per replay, {result['capture_bytes']} bytes held"
    )
    assert median < PYTHON_MS_BOUND, result
    assert result["same"], result
    moved = result["moved"]
    assert moved["capture_replays"] == REPLAYS and moved["submits"] == REPLAYS  # one submit each ...
    assert moved["dispatches"] % REPLAYS == 0 and moved["dispatches"] // REPLAYS > 50  # ... with every dispatch
    assert (moved["uploads"], moved["readbacks"]) == (0, 0)
    assert result["programs"] == 1 and result["capture_bytes"] > 0
    assert result["new_tensors"] == 0
