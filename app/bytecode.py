"""Bytecode for a page's first visit, compiled ahead of time by the Pyodide the server serves.

A first visit compiled numpy's, the engine's, the page's and the standard library's modules from source in the page:
Pyodide's wheels and its standard library's zip carry only .py files, and the bytecode a visit stores for the next one
(static/worker/startup_cache.js) does not exist yet. The server's Python is not Pyodide's (bytecode is only valid for the
interpreter version that wrote it), so app/precompile.mjs runs the served Pyodide in Node, imports what the page's
worker imports and writes checked hash-based .pyc files: an import compares each with its source's hash and compiles
from source on a mismatch, so bytecode that does not match the sources a page got is slower, never wrong.

The archive is cached on disk under a key of everything it is compiled from (the Pyodide install, the engine wheel,
the page's modules, the compiler's two scripts). `serve` builds it before it serves; after an edit, /config.json starts a
build in the background and names the archive only once it is built, so a page never waits for it. Without Node or
the local Pyodide there is none, and the page compiles from source as before.
"""

import hashlib
import itertools
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from app.assets import MANIFEST, PYODIDE_VERSION
from app.builds import KeyedBuilds
from app.engine_wheel import Wheel
from app.http_files import ContentAddressed, file_sha256

COMPILER = Path(__file__).with_name("precompile.mjs")
COMPILER_PY = Path(__file__).with_name("precompile_pyodide.py")  # its Python half, which it reads
BUILD_TIMEOUT_S = 600  # a Pyodide boot, numpy's load and the imports: 8 s of CPU here, minutes on a loaded machine


def page_modules(static_dir: Path) -> list[Path]:
    """The page's Python modules: the worker's (static/worker/*.py) and each panel's (static/panels/NAME/*.py). The
    worker writes them all into /home/pyodide (config.json's python_modules), so they import each other by name."""
    modules = sorted([*static_dir.glob("worker/*.py"), *static_dir.glob("panels/*/*.py")], key=lambda path: path.name)
    for first, second in itertools.pairwise(modules):
        if first.name == second.name:
            rel = [str(module.relative_to(static_dir)) for module in (first, second)]
            raise ValueError(
                f"two page modules are named {first.name} ({rel[0]}, {rel[1]}): the worker puts them in one folder"
            )
    return modules


@dataclass(frozen=True)
class Bytecode(ContentAddressed):
    ROUTE = "bytecode"

    def config(self) -> dict:
        """What /config.json says of it: where, its SHA-256 (the page checks it) and for which Pyodide."""
        return {"url": self.url, "sha256": self.sha256, "pyodide_version": PYODIDE_VERSION}


class FirstVisitBytecode:
    """The archive for the current engine wheel and page modules, built by app/precompile.mjs and kept by key."""

    def __init__(self, pyodide_folder: Path, static_dir: Path, cache_dir: Path):
        self.pyodide_folder, self.static_dir = pyodide_folder, static_dir
        self.node = shutil.which("node")
        failed = "first-visit bytecode not built ({error}); pages compile from source"
        self.builds = KeyedBuilds(cache_dir, Bytecode, ".bin", BUILD_TIMEOUT_S, failed)

    def current(self, wheel: Wheel, *, wait: bool = False) -> Bytecode | None:
        """The archive for `wheel` and the page's modules as they are now; None while it is built (in the
        background, unless `wait`) or when it cannot be (the reason is printed once)."""
        if self.node is None or not (self.pyodide_folder / MANIFEST).is_file():
            self.builds.fail_once("unbuildable", "no first-visit bytecode: it needs Node.js and the local Pyodide")
            return None
        modules = page_modules(self.static_dir)
        parts = [
            PYODIDE_VERSION,
            file_sha256(self.pyodide_folder / MANIFEST),
            wheel.sha256,
            file_sha256(COMPILER),
            file_sha256(COMPILER_PY),
        ]
        parts += [[module.name, file_sha256(module)] for module in modules]
        key = hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]

        def command(stage):
            return [self.node, str(COMPILER), str(self.pyodide_folder), str(wheel.path), stage, *map(str, modules)]

        return self.builds.built(key, command, wait=wait)

    def find(self, digest: str, filename: str) -> Bytecode | None:
        return self.builds.find(digest, filename)
