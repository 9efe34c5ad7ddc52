#!/usr/bin/env bash
# Set up .venv and tests/tfjs's npm packages from their pinned files, then run every check: lint, format, tests.
# Extra arguments go to pytest (e.g. scripts/test.sh -k scope).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-system.sh
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
# The real TensorFlow.js for the interop tests (test-only), reinstalled only when the lockfile is newer.
[ tests/tfjs/node_modules/.package-lock.json -nt tests/tfjs/package-lock.json ] ||
  npm ci --prefix tests/tfjs --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
# The page's code editor (CodeMirror) for the e2e tests, bundled from static/src/'s pinned npm packages when missing
# or stale.
static/src/build.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m pytest "$@"
