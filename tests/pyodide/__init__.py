"""The served Pyodide run in Node (run.mjs): Python for tests of what only runs there, without a browser."""

import json
import shutil
import subprocess
import textwrap
from pathlib import Path

RUNNER = Path(__file__).with_name("run.mjs")


class NodePyodide:
    """One Pyodide process with numpy and the engine wheel; run(code) returns its last expression (JSON values)."""

    def __init__(self, pyodide_dir: Path, wheel: Path, node_flags: tuple[str, ...] = ()):
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("these tests run Pyodide in Node.js: install nodejs (scripts/setup-system.sh does)")
        self.process = subprocess.Popen(
            [node, *node_flags, str(RUNNER), str(pyodide_dir), str(wheel)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        first = self.process.stdout.readline()
        if not first:
            raise RuntimeError(f"Pyodide did not start in Node (exit code {self.process.wait()})")

    def run(self, code: str):
        self.process.stdin.write(json.dumps({"code": textwrap.dedent(code)}) + "\n")
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"Pyodide in Node exited (code {self.process.wait()})")
        answer = json.loads(line)
        if "error" in answer:
            raise AssertionError(f"Python in Pyodide raised:\n{answer['error']}")
        return answer["value"]

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=30)
        self.process.stdout.close()


def start_node_pyodide(node_flags: tuple[str, ...] = ()) -> NodePyodide:
    """Pyodide in Node with the current engine wheel (the local Pyodide is fetched and verified when missing).

    node_flags go to node itself (e.g. "--no-liftoff" to time V8's optimized code only)."""
    from app.assets import ensure_pyodide
    from app.engine_wheel import EngineWheel
    from app.settings import Settings

    settings = Settings()
    folder = ensure_pyodide(settings.assets_dir)
    wheel = EngineWheel(settings.engine_source, settings.assets_dir / "engine").current()
    return NodePyodide(folder, wheel.path, node_flags)
