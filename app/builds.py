"""Files the server builds from other files and serves by content (the first-visit bytecode, the pipeline list).

Each is built once per key (a digest of everything it is made from) by a subprocess, into a folder of its own; the
last KEEP are servable, so a page that read /config.json before an edit still gets the one it was told about.
"""

import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from app.http_files import ContentAddressed, file_sha256


class KeyedBuilds:
    KEEP = 4  # builds kept on disk and servable

    def __init__(self, cache_dir: Path, kind: type[ContentAddressed], suffix: str, timeout_s: float, failed: str):
        """kind: the ContentAddressed class of a build; suffix: its files' ending; failed: the message printed when a
        build fails, with {error} where the error goes (it says what is missing, and what happens without it)."""
        self.cache_dir, self.kind, self.suffix, self.timeout_s, self.failed = cache_dir, kind, suffix, timeout_s, failed
        self._lock = threading.Lock()
        self._servable: dict[str, ContentAddressed] = {}  # file name (its key) -> build, oldest first
        self._building: set[str] = set()
        self._failed: set[str] = set()  # keys whose build failed: not retried until the server restarts

    def built(self, key: str, command: Callable[[str], list[str]], *, wait: bool, env=None):
        """The build of `key`; None while it is built (in the background, unless `wait`) or if it failed.

        command(stage): the subprocess that writes the build into the file `stage`; env: its environment."""
        path = self.cache_dir / f"{key}{self.suffix}"
        with self._lock:
            if path.is_file():
                return self._keep(path)
            if key in self._building or key in self._failed:
                return None
            self._building.add(key)
        if wait:
            return self._build(key, command, path, env)
        build = threading.Thread(target=self._build, args=(key, command, path, env), name=self.kind.ROUTE, daemon=True)
        build.start()
        return None

    def find(self, digest: str, filename: str):
        found = self._servable.get(filename)
        return found if found is not None and found.digest == digest else None

    def fail_once(self, key: str, message: str) -> None:
        """Print `message` the first time `key` fails."""
        with self._lock:
            if key in self._failed:
                return
            self._failed.add(key)
        print(message, file=sys.stderr, flush=True)

    def _keep(self, path: Path):
        """Registers a build as servable (the lock is held)."""
        found = self.kind(path, file_sha256(path))
        self._servable.pop(path.name, None)
        self._servable[path.name] = found
        while len(self._servable) > self.KEEP:
            self._servable.pop(next(iter(self._servable)))
        return found

    def _build(self, key: str, command, path: Path, env):
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        fd, stage = tempfile.mkstemp(dir=self.cache_dir, prefix=".build-", suffix=self.suffix)
        os.close(fd)
        os.chmod(stage, 0o644)  # mkstemp's file is the owner's only; builds are public
        try:
            done = subprocess.run(command(stage), capture_output=True, text=True, timeout=self.timeout_s, env=env)
            if done.returncode != 0:
                raise RuntimeError(f"exit {done.returncode}: {done.stderr.strip()[-2000:]}")
            os.replace(stage, path)
        except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
            with self._lock:
                self._building.discard(key)
                self._failed.add(key)
            print(self.failed.format(error=e), file=sys.stderr, flush=True)
            return None
        finally:
            Path(stage).unlink(missing_ok=True)
        with self._lock:
            self._building.discard(key)
            found = self._keep(path)
            for old in self.cache_dir.glob(f"*{self.suffix}"):  # no longer servable (builds in progress start with '.')
                if old.name not in self._servable:
                    old.unlink(missing_ok=True)
        return found
