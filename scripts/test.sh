#!/usr/bin/env bash
# Set up .venv from the project's pinned files, then run every check: lint, format, tests.
# Extra arguments go to pytest (e.g. scripts/test.sh -k scope).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-system.sh
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m pytest "$@"
