"""The Teach panel on wasm against webgpu (SwiftShader where there is no GPU): 20 images embedded, the head trained.

    .venv/bin/python bench/teach.py                      # 2 rounds; --rounds N, --epochs N
    .venv/bin/python bench/teach.py --kind pose --examples 50    # pose classes: 50 poses, then the head on 51 features
    .venv/bin/python bench/teach.py --url http://127.0.0.1:8000/     # a running playground server

Each round, for each backend in turn (wasm, then webgpu), a fresh browser context opens the playground page on it
(?backend=NAME), waits until the page has stored its startup cache (it would take a core meanwhile) and loads the
classifier (untimed: the body the features come from). Then, through the Teach panel's API (playground.teach, what
its buttons call): 20 images added, 10 to each of two classes, the bundled samples in turn (each decoded by the
browser, its pixels embedded in the worker by EfficientNet-Lite0 up to its 1280 pooled features; the first also
moves the model's weights to the backend), then the head trained (Adam, --epochs epochs of batch 16, the panel's).
With --kind pose the classes are of poses: MoveNet finds the 17 keypoints of each example (the astronaut photo and
the cat in turns, as recorded frames would come) and the head trains on their 51 features.
Prints the medians over the rounds (per image: the median of all but the first) and wasm / webgpu. Timings are for
reading, never asserted in tests.
"""

import argparse
import statistics
import sys

from harness import launch, open_settled_playground, playground_server
from playwright.sync_api import sync_playwright

BACKENDS = ("wasm", "webgpu")
SAMPLES = {
    "image": ["samples/chelsea.png", "samples/coffee.webp", "samples/rocket.jpg"],
    "pose": ["samples/astronaut.png", "samples/chelsea.png"],
}

# Runs in the page: ms per image added (in order) and for the training, after loading the classifier.
TEACH = """async ([kind, samples, images, epochs]) => {
  await playground.teach.setKind(kind);
  if (kind === "image") await playground.loadClassifier();
  const added = [];
  for (let i = 0; i < images; i++) {
    const start = performance.now();
    await playground.teach.addExample(i % 2, samples[i % samples.length]);
    added.push(performance.now() - start);
  }
  const start = performance.now();
  const trained = await playground.teach.train({ epochs });
  return { added, train_ms: performance.now() - start, examples: trained.examples };
}"""


def teach(browser, url, backend, kind, examples, epochs):
    context = browser.new_context()
    try:
        page, _ = open_settled_playground(context, url, backend)
        result = page.evaluate(TEACH, [kind, SAMPLES[kind], examples, epochs])
    finally:
        context.close()
    added = result["added"]
    return {
        "embed_ms": sum(added),
        "first_ms": added[0],
        "per_image_ms": statistics.median(added[1:]),
        "train_ms": result["train_ms"],
        "total_ms": sum(added) + result["train_ms"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running playground server (default: start python -m app serve)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of wasm and webgpu in turns (default 2)")
    parser.add_argument("--epochs", type=int, default=30, help="the head's training epochs (default 30, the panel's)")
    parser.add_argument("--kind", choices=sorted(SAMPLES), default="image", help="classes of images or poses")
    parser.add_argument("--examples", type=int, default=20, help="examples added, half to each class (default 20)")
    args = parser.parse_args()
    if min(args.rounds, args.epochs) < 1 or args.examples < 2:
        parser.error("--rounds and --epochs must be >= 1, --examples >= 2")
    runs = {backend: [] for backend in BACKENDS}
    with playground_server(args.url, graph_models=args.kind == "pose") as url, sync_playwright() as p:
        browser = launch(p)
        chromium = browser.version
        for round_ in range(args.rounds):
            for backend in BACKENDS:  # in turns, so a change of load on the machine touches both alike
                r = teach(browser, url, backend, args.kind, args.examples, args.epochs)
                runs[backend].append(r)
                print(
                    f"round {round_ + 1} {backend:6s} embed {r['embed_ms']:6.0f} ms, train {r['train_ms']:6.0f} ms",
                    file=sys.stderr,
                    flush=True,
                )
        browser.close()
    keys = ("embed_ms", "first_ms", "per_image_ms", "train_ms", "total_ms")
    medians = {backend: {k: statistics.median(r[k] for r in rs) for k in keys} for backend, rs in runs.items()}
    print(
        f"\nTeach: {args.examples} {args.kind} examples added to 2 classes, then the head trained {args.epochs} epochs; "
        f"Chromium {chromium}; ms, medians of {args.rounds} rounds (per image: the 2nd to the last)"
    )
    print(f"  {'':8s}{'embed all':>10s}{'1st image':>11s}{'per image':>11s}{'train':>9s}{'total':>9s}")
    for backend, m in medians.items():
        print(f"  {backend:8s}" + "".join(f"{m[k]:{w}.0f}" for k, w in zip(keys, (10, 11, 11, 9, 9), strict=True)))
    wasm, gpu = medians["wasm"], medians["webgpu"]
    print(
        f"\nwasm / webgpu: embedding {wasm['embed_ms'] / gpu['embed_ms']:.2f}x, training "
        f"{wasm['train_ms'] / gpu['train_ms']:.2f}x, both {wasm['total_ms'] / gpu['total_ms']:.2f}x"
    )


if __name__ == "__main__":
    main()
