"""The README's benchmark table, made from the newest bench/compare.py results (bench/results/compare.json).

    .venv/bin/python bench/readme_table.py            # print it
    .venv/bin/python bench/readme_table.py --write    # replace the table in README.md

tests/test_readme.py fails when README.md's table is not what this prints, so a new compare.json and the README
move together.
"""

import argparse
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "compare.json"
README = REPO / "README.md"
BEGIN = "<!-- the benchmark table: bench/readme_table.py --write -->"
END = "<!-- end of the benchmark table -->"
COLUMNS = (("warm_ms", "warm forward"), ("load_ms", "load"), ("warmup_ms", "warm-up"), ("first_ms", "first run"))
COLUMNS += (("cold_ms", "cold"),)
# The ratios a reader compares (each engine against its nearest TF.js backend), in this order.
HEADLINE = (
    ("ours-wasm / TF.js-wasm", "ours on wasm against TF.js-wasm"),
    ("ours-wasm / TF.js-wasm-threaded", "against TF.js-wasm with threads"),
    ("ours-webgpu / TF.js-webgpu", "ours on webgpu against TF.js-webgpu"),
)


def table(report):
    """Markdown: the machine and date, one row per engine and backend (ms), and the headline ratios."""
    machine, results = report["machine"], report["results"]
    adapter = machine["adapter"] or {}
    gpu = adapter.get("architecture") or adapter.get("description") or adapter.get("vendor") or "none"
    lines = [
        f"`bench/compare.py` on {machine['date']}: {machine['cpu']}, {machine['cpu_cores']} cores, Chromium "
        f"{machine['chromium']}, WebGPU adapter: {gpu}. EfficientNet-Lite0, batch 1, ms; warm is a median, cold is "
        "load + warm-up + first run.",
        "",
        "| | " + " | ".join(name for _, name in COLUMNS) + " |",
        "|---|" + "---:|" * len(COLUMNS),
    ]
    for label, r in results.items():
        lines.append(f"| {label} | " + " | ".join(f"{r[key]:.0f}" for key, _ in COLUMNS) + " |")
    ratios = report["ratios"]
    said = [
        f"{words}: {ratios[f'{pair}, warm forward']:.2f}x warm, {ratios[f'{pair}, cold']:.2f}x cold"
        for pair, words in HEADLINE
        if f"{pair}, warm forward" in ratios
    ]
    if said:
        lines += ["", "Below 1 we are faster: " + "; ".join(said) + "."]
    return "\n".join(lines)


def readme_with(readme, new_table):
    head, found, rest = readme.partition(BEGIN)
    _, found_end, tail = rest.partition(END)
    if not (found and found_end):
        raise SystemExit(f"README.md has no {BEGIN} ... {END} block to replace")
    return f"{head}{BEGIN}\n{new_table}\n{END}{tail}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="replace the table in README.md")
    args = parser.parse_args()
    text = table(json.loads(RESULTS.read_text()))
    if args.write:
        README.write_text(readme_with(README.read_text(), text))
    else:
        print(text)


if __name__ == "__main__":
    main()
