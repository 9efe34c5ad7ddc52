"""The README is a front door: its benchmark table is the newest bench/compare.py result, and its links lead somewhere."""

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"


def test_the_benchmark_table_is_made_from_the_committed_results():
    printed = subprocess.run(
        [sys.executable, str(REPO / "bench" / "readme_table.py")], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert printed in README.read_text(), (
        "README.md's benchmark table differs from bench/results/compare.json: "
        "run .venv/bin/python bench/readme_table.py --write"
    )


def test_every_relative_link_and_image_exists():
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text())
    relative = [link for link in links if "://" not in link]
    assert relative, "the README links to its docs"
    missing = [link for link in relative if not (REPO / link).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"
