#!/usr/bin/env bash
# Build the page's editor and chart bundles (static/vendor/) when missing or older than their sources: installs the
# pinned npm packages (static/src/package-lock.json; needs the npm registry once) and runs build.mjs. scripts/run.sh
# and scripts/test.sh call it; it does nothing when the bundle is up to date.
set -euo pipefail
cd "$(dirname "$0")"
stamp=$(cat package.json package-lock.json editor.js python_completion.js line_chart.js build.mjs | sha256sum | cut -d' ' -f1)
if [ -f ../vendor/editor.json ] && [ "$(cat ../vendor/.stamp 2>/dev/null)" = "$stamp" ]; then exit 0; fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "static/src/build.sh: bundling the editor needs node and npm (apt-get install -y nodejs npm)" >&2
  exit 1
fi
[ node_modules/.package-lock.json -nt package-lock.json ] ||
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
node build.mjs
echo "$stamp" > ../vendor/.stamp
