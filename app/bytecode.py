"""Bytecode for a page's first visit, compiled ahead of time by the Pyodide the server serves.

A first visit compiled numpy's, the engine's, the page's and the standard library's modules from source in the page:
Pyodide's wheels and its standard library's zip carry only .py files, and the bytecode a visit stores for the next one
(static/startup_cache.js) does not exist yet. The server's Python is not Pyodide's (bytecode is only valid for the
interpreter version that wrote it), so app/precompile.mjs runs the served Pyodide in Node, imports what the page's
worker imports and writes checked hash-based .pyc files: an import compares each with its source's hash and compiles
from source on a mismatch, so bytecode that does not match the sources a page got is slower, never wrong.

The archive is cached on disk under a key of everything it is compiled from (the Pyodide install, the engine wheel,
the page's modules, the compiler script). `serve` builds it before it serves; after an edit, /config.json starts a
build in the background and names the archive only once it is built, so a page never waits for it. Without Node or
the local Pyodide there is none, and the page compiles from source as before.
"""

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from app.assets import MANIFEST, PYODIDE_VERSION
from app.engine_wheel import Wheel
from app.http_files import ContentAddressed, file_sha256

COMPILER = Path(__file__).with_name("precompile.mjs")
BUILD_TIMEOUT_S = 600  # a Pyodide boot, numpy's load and the imports: 8 s of CPU here, minutes on a loaded machine


@dataclass(frozen=True)
class Bytecode(ContentAddressed):
    ROUTE = "bytecode"

    def config(self) -> dict:
        """What /config.json says of it: where, its SHA-256 (the page checks it) and for which Pyodide."""
        return {"url": self.url, "sha256": self.sha256, "pyodide_version": PYODIDE_VERSION}


class FirstVisitBytecode:
    """The archive for the current engine wheel and page modules, built by app/precompile.mjs and kept by key."""

    KEEP = 4  # archives kept on disk and servable: a page that read /config.json before an edit still gets its own

    def __init__(self, pyodide_folder: Path, static_dir: Path, cache_dir: Path):
        self.pyodide_folder, self.static_dir, self.cache_dir = pyodide_folder, static_dir, cache_dir
        self.node = shutil.which("node")
        self._lock = threading.Lock()
        self._servable: dict[str, Bytecode] = {}  # file name (its key) -> archive, oldest first
        self._building: set[str] = set()
        self._failed: set[str] = set()  # keys whose build failed: not retried until the server restarts

    def current(self, wheel: Wheel, *, wait: bool = False) -> Bytecode | None:
        """The archive for `wheel` and the page's modules as they are now; None while it is built (in the
        background, unless `wait`) or when it cannot be (the reason is printed once)."""
        if self.node is None or not (self.pyodide_folder / MANIFEST).is_file():
            self._fail_once("unbuildable", "no first-visit bytecode: it needs Node.js and the local Pyodide")
            return None
        modules = sorted(self.static_dir.glob("*.py"))
        key = self._key(wheel, modules)
        path = self.cache_dir / f"{key}.bin"
        with self._lock:
            if path.is_file():
                return self._keep(path)
            if key in self._building or key in self._failed:
                return None
            self._building.add(key)
        build = functools.partial(self._build, key, wheel, modules, path)
        if wait:
            return build()
        threading.Thread(target=build, name="first-visit-bytecode", daemon=True).start()
        return None

    def find(self, digest: str, filename: str) -> Bytecode | None:
        found = self._servable.get(filename)
        return found if found is not None and found.digest == digest else None

    def _key(self, wheel: Wheel, modules: list[Path]) -> str:
        parts = [PYODIDE_VERSION, file_sha256(self.pyodide_folder / MANIFEST), wheel.sha256, file_sha256(COMPILER)]
        parts += [[module.name, file_sha256(module)] for module in modules]
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]

    def _keep(self, path: Path) -> Bytecode:
        """Registers a built archive as servable (the lock is held)."""
        found = Bytecode(path, file_sha256(path))
        self._servable.pop(path.name, None)
        self._servable[path.name] = found
        while len(self._servable) > self.KEEP:
            self._servable.pop(next(iter(self._servable)))
        return found

    def _build(self, key: str, wheel: Wheel, modules: list[Path], path: Path) -> Bytecode | None:
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        fd, stage = tempfile.mkstemp(dir=self.cache_dir, prefix=".build-", suffix=".bin")
        os.close(fd)
        os.chmod(stage, 0o644)  # mkstemp's file is the owner's only; the archive is public
        try:
            cmd = [self.node, str(COMPILER), str(self.pyodide_folder), str(wheel.path), stage, *map(str, modules)]
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
            if done.returncode != 0:
                raise RuntimeError(f"exit {done.returncode}: {done.stderr.strip()[-2000:]}")
            os.replace(stage, path)
        except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
            with self._lock:
                self._building.discard(key)
                self._failed.add(key)
            print(f"first-visit bytecode not built ({e}); pages compile from source", file=sys.stderr, flush=True)
            return None
        finally:
            Path(stage).unlink(missing_ok=True)
        with self._lock:
            self._building.discard(key)
            found = self._keep(path)
            self._prune()
        return found

    def _prune(self) -> None:
        """Delete archives no longer servable (builds in progress start with '.'; the lock is held)."""
        for old in self.cache_dir.glob("*.bin"):
            if old.name not in self._servable:
                old.unlink(missing_ok=True)

    def _fail_once(self, key: str, message: str) -> None:
        with self._lock:
            if key in self._failed:
                return
            self._failed.add(key)
        print(message, file=sys.stderr, flush=True)
