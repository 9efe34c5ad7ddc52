#!/usr/bin/env bash
# Install the Debian packages the project needs, only those that are missing:
# Mesa's OpenGL/EGL drivers let wgpu-py find a WebGPU adapter (llvmpipe) on machines without a GPU;
# Chromium runs the e2e tests (its WebGPU runs on SwiftShader there). Never `playwright install`.
# Node.js and npm run the real TensorFlow.js in the interop tests (any node/npm on PATH will do).
set -euo pipefail
packages=(libgl1-mesa-dri libegl1 libegl-mesa0 chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "missing system packages: ${missing[*]} (install them with: sudo apt-get install -y ${missing[*]})" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
