"""A plain script that used the webgpu backend through wgpu-py exits cleanly (no abort in the interpreter's
teardown, where wgpu objects released in arbitrary order made the process die with "double free")."""

import subprocess
import sys

SCRIPT = """
import asyncio
import py_engine as pe
assert asyncio.run(pe.set_backend("webgpu")), pe.backend_info()
x = pe.ones((4,))
step = pe.capture(lambda t: t * 2.0 + 1.0)
for _ in range(3):
    print(step(x).tolist())
"""


def test_a_script_on_webgpu_exits_with_status_0():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[3.0, 3.0, 3.0, 3.0]"] * 3
    assert "double free" not in done.stderr
