"""Running the test-only scripts in tests/tfjs with the real TensorFlow.js (npm @tensorflow/tfjs, pinned there)."""

import shutil
import subprocess
from pathlib import Path

TFJS = Path(__file__).resolve().parent / "tfjs"
INSTALL = "npm ci --prefix tests/tfjs --ignore-scripts (in the repo root; scripts/test.sh does it)"


def run_tfjs(script, *args):
    """node tests/tfjs/<script> args...; fails the test with the script's output, or with how to install node/TF.js."""
    node = shutil.which("node")
    assert node, f"node is not installed: apt-get install -y nodejs npm (scripts/setup-system.sh), then {INSTALL}"
    assert (TFJS / "node_modules" / "@tensorflow" / "tfjs").is_dir(), (
        f"@tensorflow/tfjs is not installed in tests/tfjs/node_modules: {INSTALL}"
    )
    run = subprocess.run([node, str(TFJS / script), *map(str, args)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"{script} failed:\n{run.stdout}\n{run.stderr}"
