"""Map a URL path onto a file inside one folder, and refuse everything that could leave it."""

from pathlib import Path

from app.errors import HTTPError, clip


def check_relative(rel: str) -> list[str]:
    """The segments of a relative URL path; a 400 for anything that is not a plain relative path.

    The path arrives percent-decoded (so %2e%2e and %2f are already '..' and '/'): refused are absolute
    paths, backslashes (another OS's separator), NUL and other control characters, and empty, '.' or '..'
    segments.
    """
    if not rel:
        raise HTTPError(400, "empty file path")
    if rel.startswith("/"):
        raise HTTPError(400, f"absolute paths are not allowed: {clip(rel)}")
    if "\\" in rel:
        raise HTTPError(400, f"backslashes are not allowed in paths: {clip(rel)}")
    if any(ord(c) < 32 or ord(c) == 127 for c in rel):
        raise HTTPError(400, f"control characters (NUL included) are not allowed in paths: {clip(rel)}")
    parts = rel.split("/")
    for part in parts:
        if part in ("", ".", ".."):
            raise HTTPError(400, f"path segment {part!r} is not allowed: {clip(rel)}")
    return parts


def safe_file(root: Path, rel: str) -> Path | None:
    """The regular file `rel` names inside `root`, or None when there is none.

    Symlinks are followed, and the real path must stay inside root's real path, so a link pointing out
    reads as missing (the same answer as a file that does not exist: nothing outside is revealed).
    """
    check_relative(rel)
    try:
        real_root = root.resolve(strict=True)
        target = (real_root / rel).resolve(strict=True)
    except (OSError, RuntimeError):  # missing, name too long, symlink loop (RuntimeError on 3.11/3.12)
        return None
    if not target.is_relative_to(real_root) or not target.is_file():
        return None
    return target
