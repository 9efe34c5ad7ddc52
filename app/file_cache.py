"""Values computed from files (a parsed model.json, a sha256, a manifest), kept until one of those files changes.

A file's signature is what changes when it is written or replaced: device, inode, size and mtime in
nanoseconds, read with os.stat, which follows symlinks, so a link pointed at another file changes it.
Where a value depends on where a path leads (a shard must lie inside its model's folder), the path's
real path is watched too: a folder moved out and replaced by a link to it keeps its files' inodes, but
not their real paths. Checking an entry costs one stat per file (and one realpath, about 10 us, where
asked). The signatures are taken before the files are read, so a write during the computation leaves
an entry that the next check finds stale, never new bytes filed under an old signature.

A file's mtime has the granularity of the kernel's coarse clock (a few ms; a second or two on some
file systems), so two writes of the same size close together can leave the same signature. A value
computed from a file modified within the last SETTLE_NS is therefore not kept: it is computed again
on the next request, until the file has been left alone that long (git's "racy clean" rule).
"""

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

T = TypeVar("T")
SETTLE_NS = 2_000_000_000


class Signature(NamedTuple):
    device: int
    inode: int
    size: int
    mtime_ns: int


def signature(path: Path | str) -> Signature | None:
    """None when the file is gone or cannot be stat'ed."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None
    return Signature(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def real_path(path: str) -> str | None:
    try:
        return os.path.realpath(path, strict=True)
    except (OSError, ValueError):
        return None


class Watched:
    """The files a value was computed from, with their signatures (and real paths) when they were read."""

    def __init__(self) -> None:
        self.files: list[tuple[str, Signature | None, str | None]] = []

    def add(self, path: Path | str, *, where: bool = False) -> Signature | None:
        """Watch path's signature, and with where=True also where its symlinks lead (its real path)."""
        path = os.fspath(path)
        real = real_path(path) if where else None
        sig = signature(path)
        self.files.append((path, sig, real))
        return sig

    def unchanged(self) -> bool:
        return all(
            signature(path) == sig and (real is None or real_path(path) == real) for path, sig, real in self.files
        )

    def settled(self) -> bool:
        """True when no file was modified so recently that a same-size write could keep its mtime."""
        now = time.time_ns()
        return all(sig is None or now - sig.mtime_ns >= SETTLE_NS for _, sig, _ in self.files)


class FileCache(Generic[T]):
    """key -> value, each entry valid while its watched files are unchanged; at most max_entries (least
    recently used go first), so old versions of edited files do not pile up in a long-running server."""

    def __init__(self, max_entries: int = 256):
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, tuple[Watched, T]] = OrderedDict()
        self._lock = threading.Lock()  # sync routes run in a thread pool

    def get(self, key: Hashable, compute: Callable[[Watched], T]) -> T:
        """The cached value for key, or compute(watched) (which records the files it reads) when any changed."""
        with self._lock:
            entry = self._entries.get(key)
        if entry is not None and entry[0].unchanged():
            with self._lock:
                if key in self._entries:
                    self._entries.move_to_end(key)
            return entry[1]
        watched = Watched()
        value = compute(watched)  # outside the lock: hashing a large file must not stall other requests
        if not watched.settled():
            return value
        with self._lock:
            self._entries[key] = (watched, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._entries)
