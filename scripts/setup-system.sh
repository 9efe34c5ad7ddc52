#!/usr/bin/env bash
# Install the Debian packages the project needs, only those that are missing:
# Mesa's OpenGL/EGL drivers let wgpu-py find a WebGPU adapter (llvmpipe) on machines without a GPU;
# Chromium runs the e2e tests (its WebGPU runs on SwiftShader there). Never `playwright install`.
# Node.js 20 or later and npm run the real TensorFlow.js in the interop tests and the wasm kernels' Node tests (Node 18
# knows only a draft of relaxed SIMD's opcodes).
set -euo pipefail
packages=(libgl1-mesa-dri libegl1 libegl-mesa0 chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if command -v node >/dev/null && [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
  echo "Node.js $(node --version) is too old: the tests need Node.js 20 or later (nodejs.org or your distribution's backports)" >&2
  exit 1
fi
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "missing system packages: ${missing[*]} (install them with: sudo apt-get install -y ${missing[*]})" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
