"""Values computed from files (a parsed model.json, a sha256, a manifest), kept until one of those files changes.

A file's signature is what changes when it is written or replaced: device, inode, size and mtime in
nanoseconds, read with os.stat, which follows symlinks, so a link pointed elsewhere or a folder
swapped for a link also changes it (another inode). Checking an entry costs one stat per file. The
signatures are taken before the files are read, so a write during the computation leaves an entry
that the next check finds stale, never new bytes filed under an old signature.
"""

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

T = TypeVar("T")


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


class Watched:
    """The files a value was computed from, with their signatures at the time they were read."""

    def __init__(self) -> None:
        self.files: list[tuple[str, Signature | None]] = []

    def add(self, path: Path | str) -> Signature | None:
        sig = signature(path)
        self.files.append((os.fspath(path), sig))
        return sig

    def unchanged(self) -> bool:
        return all(signature(path) == sig for path, sig in self.files)


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
        with self._lock:
            self._entries[key] = (watched, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._entries)
