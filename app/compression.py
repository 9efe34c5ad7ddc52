"""gzip copies of the files a first visit downloads, for clients that accept them (Content-Encoding: gzip).

Without them a first visit moved about 22 MB before the page was ready; the Pyodide runtime (pyodide.asm.wasm,
10.1 MB) gzips to 3.2 MB and the first-visit bytecode (4.4 MB) to 1.7 MB. A host behind a compressing proxy or CDN
gets this from the proxy; `python -m app serve` on its own now does it too.

A copy is made once per content, never per request: it is filed under the sha256 of the bytes it holds the
gzip of, so an edited file gets a new copy and a stale one is never served. `serve` makes the Pyodide runtime's and
the bytecode's before it serves; any other file's copy is made in the background at its first request, which gets
the plain file meanwhile. A file that gzip does not shrink by a tenth (a zip, a wheel) keeps no copy: a
marker records that, so it is tried once.
"""

import gzip
import hashlib
import os
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# What gzip shrinks: text and WebAssembly. Shards (.bin float32 weights) shrink 8% and are never compressed here;
# the bytecode route asks for its .bin archive explicitly.
COMPRESSIBLE = {".wasm", ".js", ".mjs", ".json", ".map", ".css", ".html", ".txt", ".md", ".ts", ".py", ".svg"}
KEEP = 256  # copies kept (the oldest go first): each edit of a page file or the bytecode makes a new one
WORTH = 0.9  # a copy is kept when it is at most this fraction of the file
LEVEL = 6  # zlib's default: level 9 made pyodide.asm.wasm 0.7% smaller in 3x the time (1.6 s)


def compressible(name: str) -> bool:
    return os.path.splitext(name)[1].lower() in COMPRESSIBLE


def accepts_gzip(header: str | None) -> bool:
    """Whether an Accept-Encoding header (RFC 9110 12.5.3) allows gzip: named, or `*`, with a q above 0."""
    if not header:
        return False
    weights = {}
    for part in header.split(","):
        name, _, params = part.partition(";")
        weight = 1.0
        for param in params.split(";"):
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    weight = float(value.strip()[:8])
                except ValueError:
                    weight = 0.0
        weights[name.strip().lower()] = weight
    return weights.get("gzip", weights.get("x-gzip", weights.get("*", 0.0))) > 0


def gzip_of(data: bytes) -> bytes | None:
    """The gzip of data, or None where it is not worth it (over WORTH of the bytes)."""
    packed = gzip.compress(data, LEVEL, mtime=0)
    return packed if len(packed) <= WORTH * len(data) else None


class GzipCopies:
    """gzip copies of files, in `folder` as <sha256 of the file>.gz (or .plain where gzip did not pay)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._lock = threading.Lock()
        self._pending: set[str] = set()
        self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gzip")  # one core at most

    def copy(self, path: Path, sha256: str) -> Path | None:
        """The gzip copy of `path` (whose bytes hash to `sha256`) if made; else None, and it is made in the
        background unless gzip is known not to pay for it."""
        tried, made = self._settled(sha256)
        if tried:
            return made
        with self._lock:
            if sha256 in self._pending:
                return None
            self._pending.add(sha256)
        self._background.submit(self._make_reporting, path, sha256)
        return None

    def make(self, path: Path, sha256: str) -> Path | None:
        """Make the copy now (if not made yet); the copy, or None where gzip does not pay."""
        tried, made = self._settled(sha256)
        if tried:
            return made
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != sha256:  # changed since it was hashed: its next request asks again
            return None
        packed = gzip_of(data)
        self.folder.mkdir(parents=True, exist_ok=True)
        if packed is None:
            (self.folder / f"{sha256}.plain").touch()
            return None
        # written whole, then renamed: a request never finds half a copy, and two processes may race harmlessly
        with tempfile.NamedTemporaryFile(dir=self.folder, suffix=".part", delete=False) as f:
            f.write(packed)
        os.chmod(f.name, 0o644)  # as the files it copies
        made = self.folder / f"{sha256}.gz"
        os.replace(f.name, made)
        self._prune()
        return made

    def _settled(self, sha256: str) -> tuple[bool, Path | None]:
        """(whether gzip was tried on these bytes, its copy if it paid)."""
        made = self.folder / f"{sha256}.gz"
        if made.is_file():
            return True, made
        return (self.folder / f"{sha256}.plain").is_file(), None

    def _prune(self) -> None:
        copies = []
        for copy in self.folder.glob("*.gz"):
            try:
                copies.append((copy.stat().st_mtime_ns, copy))
            except FileNotFoundError:  # pruned meanwhile by another server process
                continue
        for _, old in sorted(copies)[:-KEEP]:
            old.unlink(missing_ok=True)

    def _make_reporting(self, path: Path, sha256: str) -> None:
        try:
            self.make(path, sha256)
        except OSError as e:  # stays pending, so not tried again: the plain file is served, and why is said once
            print(f"gzip copy of {path} not made: {e}", flush=True)
            return
        with self._lock:
            self._pending.discard(sha256)
