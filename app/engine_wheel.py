"""The engine as a pure-Python wheel (the page's worker unpacks it into site-packages), built from the checkout and
addressed by content.

The wheel is built with pip from a clean copy of the build inputs (no stale build/ folder can leak
removed modules into it), without build isolation (setuptools comes from this environment, so no
network is needed) and with SOURCE_DATE_EPOCH fixed, so the same sources give the same bytes. Its
URL holds the first 16 hex digits of its sha256: a changed engine gets a new URL, and that URL can
be cached forever. Each request for the current wheel (/config.json) checks the build inputs' stat
signatures, and the folders', so an added or removed module counts too (about a hundred stat calls,
no reading); the sources are hashed again only when one changed. So an edit to py_engine/ is picked
up without restarting the server: the next /config.json names the new wheel, built then. A request
for a wheel by its URL looks at the sources only when that URL is not one of the recent builds.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from app.file_cache import FileCache, Watched
from app.http_files import ContentAddressed, file_sha256

PACKAGE = "py_engine"
BUILD_FILES = ("pyproject.toml", "README.md", "setup.py", "setup.cfg", "MANIFEST.in", "LICENSE", "LICENSE.txt")
EPOCH = "315532800"  # 1980-01-01, the oldest time a zip entry can hold
_source_keys: FileCache[str] = FileCache(max_entries=16)


class WheelError(RuntimeError):
    """The engine wheel could not be built."""


def source_files(root: Path) -> list[Path]:
    """The files the wheel is built from, relative to root, in a stable order."""
    files = [Path(name) for name in BUILD_FILES if (root / name).is_file()]
    for path in sorted((root / PACKAGE).rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and "__pycache__" not in rel.parts and path.suffix != ".pyc":
            files.append(rel)
    return files


def source_key(root: Path) -> str:
    """sha256 of the build inputs' names and bytes, computed again only when a file or folder of them changed."""
    return _source_keys.get(root, lambda watched: _hash_sources(root, watched))


def _hash_sources(root: Path, watched: Watched) -> str:
    for name in BUILD_FILES:  # present or not: one that appears changes the key
        watched.add(root / name)
    package = root / PACKAGE
    for folder in [package, *sorted(p for p in package.rglob("*") if p.is_dir() and "__pycache__" not in p.parts)]:
        watched.add(folder)  # a module added, removed or renamed changes its folder's mtime
    h = hashlib.sha256()
    for rel in source_files(root):
        watched.add(root / rel)
        h.update(rel.as_posix().encode() + b"\0" + (root / rel).read_bytes() + b"\0")
    return h.hexdigest()


def build_wheel(root: Path, out_dir: Path) -> Path:
    """Build the wheel of the project at root into out_dir and return its path."""
    with tempfile.TemporaryDirectory(prefix="engine-build-") as tmp:
        src, dist = Path(tmp) / "src", Path(tmp) / "dist"
        for rel in source_files(root):
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / rel, src / rel)
        cmd = [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "--no-index"]
        cmd += ["--disable-pip-version-check", "-q", "-w", str(dist)]
        done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "SOURCE_DATE_EPOCH": EPOCH})
        if done.returncode != 0:
            raise WheelError(
                f"building the engine wheel failed (exit {done.returncode}); it needs setuptools>=77 in this "
                f"environment (pip install -c constraints.txt -e '.[server]'):\n{done.stderr.strip()}"
            )
        wheels = list(dist.glob("*.whl"))
        if len(wheels) != 1 or not wheels[0].name.endswith("-py3-none-any.whl"):
            raise WheelError(f"expected one pure-Python (py3-none-any) wheel, got {[w.name for w in wheels]}")
        out_dir.mkdir(parents=True, exist_ok=True)
        return Path(shutil.move(wheels[0], out_dir / wheels[0].name))


@dataclass(frozen=True)
class Wheel(ContentAddressed):
    ROUTE = "engine"


class EngineWheel:
    """The wheel of the checkout at `root` as it is now, cached in `cache_dir` by source hash.

    The last KEEP builds stay servable by their URL: a page that read /config.json just before an
    edit still gets the wheel its URL names (content-addressed, so never a stale one), while its file is there.
    """

    KEEP = 8

    def __init__(self, root: Path, cache_dir: Path):
        self.root, self.cache_dir = root, cache_dir
        self._lock = threading.Lock()
        self._key: str | None = None
        self._builds: dict[str, tuple[str, Wheel]] = {}  # digest -> (source key, wheel), oldest first

    def current(self) -> Wheel:
        with self._lock:
            key = source_key(self.root)[:16]
            latest = next(reversed(self._builds.values()))[1] if self._builds else None
            if key != self._key or not latest.path.is_file():  # new sources, or its file pruned by another process
                wheel = self._load_or_build(key)
                self._builds.pop(wheel.digest, None)
                self._builds[wheel.digest] = (key, wheel)
                while len(self._builds) > self.KEEP:
                    self._builds.pop(next(iter(self._builds)))
                self._key = key
                self._prune()
            return next(reversed(self._builds.values()))[1]

    def find(self, digest: str, filename: str) -> Wheel | None:
        """The current or a recent build whose URL has this digest and file name."""
        if digest not in self._builds:  # e.g. the first request after a restart: look at the sources
            self.current()
        _, wheel = self._builds.get(digest, (None, None))
        # another process building from the same checkout into the same cache (a test run, a benchmark) prunes what
        # it does not list: a build whose file is gone is not served (the current one is built again by current())
        return wheel if wheel is not None and wheel.path.name == filename and wheel.path.is_file() else None

    def _load_or_build(self, key: str) -> Wheel:
        folder = self.cache_dir / key
        found = sorted(folder.glob("*.whl")) if folder.is_dir() else []
        if not found:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            stage = Path(tempfile.mkdtemp(dir=self.cache_dir, prefix=".build-"))
            try:
                stage.chmod(0o755)
                build_wheel(self.root, stage)
                shutil.rmtree(folder, ignore_errors=True)
                os.replace(stage, folder)
            finally:
                shutil.rmtree(stage, ignore_errors=True)
            found = sorted(folder.glob("*.whl"))
        return Wheel(found[0], file_sha256(found[0]))

    def _prune(self) -> None:
        """Delete builds that are no longer servable (builds in progress start with '.')."""
        kept = {key for key, _ in self._builds.values()}
        for old in self.cache_dir.iterdir():
            if old.name not in kept and not old.name.startswith("."):
                shutil.rmtree(old, ignore_errors=True)
