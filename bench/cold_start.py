"""A cold classification in the page on webgpu, on a first and a repeat visit, in rounds: bench/compare.py's
measurement of ours alone (no TF.js), for comparing two page folders quickly.

    .venv/bin/python bench/cold_start.py                  # 3 rounds, 5 warm runs each
    .venv/bin/python bench/cold_start.py --static DIR     # another page folder, e.g. an older commit's static/

Each round: a first visit in a fresh browser context and a repeat visit in a profile kept from a visit that loaded
the classifier (bench/compare.py, `ours` and `ours_repeat_visit`), each measured right after the page is ready:
load, first run, cold (load + warm-up + first run, as the clock sees it) and the median warm run. Prints each visit
and the medians of cold / warm per kind of visit. Timings are for reading, never asserted.
"""

import argparse
import statistics
from pathlib import Path

from compare import ours, ours_repeat_visit
from harness import launch, playground_server
from playwright.sync_api import sync_playwright


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of a first and a repeat visit (default 3)")
    parser.add_argument("--runs", type=int, default=5, help="warm runs per visit (default 5)")
    parser.add_argument("--static", type=Path, help="the page folder to serve (default: static/)")
    args = parser.parse_args()
    ratios = {"first": [], "repeat": []}
    with playground_server(static=args.static) as url, sync_playwright() as p:
        browser = launch(p)
        try:
            for round_ in range(1, args.rounds + 1):
                for visit in ratios:
                    r = (
                        ours(browser, url, "webgpu", args.runs)
                        if visit == "first"
                        else ours_repeat_visit(p, url, args.runs)
                    )
                    ratios[visit].append(r["cold_ms"] / r["warm_ms"])
                    print(
                        f"round {round_} {visit:6} load {r['load_ms']:4.0f}  first run {r['first_ms']:4.0f}  "
                        f"cold {r['cold_ms']:4.0f}  warm {r['warm_ms']:4.0f} ms  cold/warm {ratios[visit][-1]:.2f}",
                        flush=True,
                    )
        finally:
            browser.close()
    for visit, values in ratios.items():
        print(
            f"{visit} visit: cold/warm median {statistics.median(values):.2f} ({', '.join(f'{v:.2f}' for v in values)})"
        )


if __name__ == "__main__":
    main()
