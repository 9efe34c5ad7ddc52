"""File answers with the HTTP caching and range rules: strong ETags, If-None-Match -> 304,
one byte range -> 206 (416 when it cannot be satisfied), HEAD, and the right content types.

Every request header read here is bounded before it is parsed: a Range longer than MAX_RANGE is a
416, an If-None-Match or If-Range longer than MAX_VALIDATORS a 400 (both JSON errors), so no value
reaches int() or a split with a size the client chose.

Several ranges in one Range header (multipart/byteranges) are not implemented: the whole file is
sent with 200, which RFC 9110 allows (a server may ignore Range). Only If-Range with an ETag keeps
the range; we send no Last-Modified, so a date in If-Range always gets the whole file.
"""

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from app.compression import GzipCopies, accepts_gzip
from app.errors import NOSNIFF, HTTPError, clip
from app.file_cache import FileCache, Watched

IMMUTABLE = "public, max-age=31536000, immutable"  # content-addressed URLs: the bytes never change
REVALIDATE = "no-cache"  # may be stored, but asked about (ETag -> 304) before each use


@dataclass(frozen=True)
class ContentAddressed:
    """A built file served at /ROUTE/<the first 16 hex digits of its sha256>/<its name>: its URL names its bytes, so
    it is cached as IMMUTABLE."""

    ROUTE: ClassVar[str]
    path: Path
    sha256: str

    @property
    def digest(self) -> str:
        return self.sha256[:16]

    @property
    def url(self) -> str:
        return f"/{self.ROUTE}/{self.digest}/{self.path.name}"


CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".wasm": "application/wasm",
    ".bin": "application/octet-stream",
    ".zip": "application/zip",
    ".whl": "application/zip",
    ".txt": "text/plain; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".ts": "text/plain; charset=utf-8",
    ".py": "text/x-python; charset=utf-8",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
}
CHUNK = 256 * 1024
# One range is two byte offsets: 60 characters hold "bytes=" and two 20-digit numbers with spaces.
# A longer header is either several ranges (not implemented, see above) or an attack on the parser.
MAX_RANGE = 200
MAX_VALIDATORS = 4096  # If-None-Match lists ETags (ours are 66 characters); If-Range holds one ETag or date
_RANGE = re.compile(r"^([0-9]*)-([0-9]*)$")
_digests: FileCache[str] = FileCache(max_entries=4096)


def content_type(name: str) -> str:
    return CONTENT_TYPES.get(os.path.splitext(name)[1].lower(), "application/octet-stream")


def file_sha256(path: Path) -> str:
    """sha256 of a file, remembered until the file changes (see app/file_cache.py)."""

    def compute(watched: Watched) -> str:
        watched.add(path)
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                h.update(block)
        return h.hexdigest()

    return _digests.get(os.fspath(path), compute)


def bounded_header(request: Request, name: str, limit: int = MAX_VALIDATORS) -> str | None:
    """The request header `name`, or a 400 when it is longer than `limit` characters."""
    value = request.headers.get(name)
    if value is not None and len(value) > limit:
        raise HTTPError(
            400, f"the {name} header is {len(value)} characters long; at most {limit} are accepted: {clip(value)}"
        )
    return value


def etag_matches(header: str | None, etag: str) -> bool:
    """If-None-Match uses the weak comparison: W/"x" matches "x"; "*" matches any existing resource."""
    if header is None:
        return False
    tags = [t.strip() for t in header.split(",")]
    return "*" in tags or any(t.removeprefix("W/") == f'"{etag}"' for t in tags)


def parse_range(header: str, size: int) -> tuple[int, int] | None:
    """(first, last) byte, inclusive, of a single byte range; None means "send the whole file"."""
    if len(header) > MAX_RANGE:
        raise range_error(
            f"the Range header is {len(header)} characters long; at most {MAX_RANGE} are accepted "
            f"(one range: bytes=FIRST-LAST): {clip(header)}",
            size,
        )
    unit, _, spec = header.partition("=")
    if unit.strip().lower() != "bytes":
        return None  # an unknown range unit must be ignored
    specs = [s.strip() for s in spec.split(",")]
    if len(specs) > 1:
        return None  # multi-range: whole file (see the module docstring)
    m = _RANGE.match(specs[0])
    if not m or (not m[1] and not m[2]) or (m[1] and m[2] and int(m[1]) > int(m[2])):
        raise range_error(
            f"malformed Range header {clip(header)}: expected bytes=FIRST-LAST, bytes=FIRST- or bytes=-SUFFIX", size
        )
    if not m[1]:  # suffix: the last N bytes
        n = int(m[2])
        if n == 0 or size == 0:
            raise range_error(f"Range {clip(header)} selects no bytes of a {size}-byte resource", size)
        return max(0, size - n), size - 1
    first = int(m[1])
    if first >= size:
        raise range_error(f"Range {clip(header)} starts at or after the end of a {size}-byte resource", size)
    return first, min(int(m[2]), size - 1) if m[2] else size - 1


def range_error(message: str, size: int) -> HTTPError:
    return HTTPError(416, message, headers={"Content-Range": f"bytes */{size}"})


async def _read(path: Path, start: int, length: int):
    """The bytes of a file, read in the event loop: a 256 KiB read from the page cache (where shards and
    the page live after their first use) takes tens of microseconds, less than handing each chunk to a
    thread (2.4x the shard requests/s, bench/serve_load.py). A slow reader parks this generator at
    `send` (uvicorn's flow control); it never blocks the loop."""
    with open(path, "rb") as f:
        f.seek(start)
        while length > 0:
            block = f.read(min(CHUNK, length))
            if not block:
                return
            length -= len(block)
            yield block


def send(
    request: Request,
    *,
    etag: str,
    cache_control: str,
    media_type: str,
    path: Path | None = None,
    data: bytes | None = None,
    headers: dict[str, str] | None = None,
    gzip_copies: GzipCopies | None = None,
    gzipped: bytes | None = None,
) -> Response:
    """Answer GET/HEAD for the bytes of `path` (streamed when over CHUNK) or `data`, whose content hash is `etag`.

    gzip_copies: where the gzip copy of `path` is kept (app/compression.py); gzipped: the gzip of `data`. Either is
    sent, with its own ETag, to a client that accepts gzip and asks for no range (the copy once it is made)."""
    base = {"ETag": f'"{etag}"', "Cache-Control": cache_control, "Accept-Ranges": "bytes", **NOSNIFF}
    base.update(headers or {})
    validators = bounded_header(request, "If-None-Match")
    if (gzip_copies is not None and path is not None) or gzipped is not None:
        base["Vary"] = "Accept-Encoding"
        # a client holding either encoding holds these bytes: its copy stays good, whichever it has
        if etag_matches(validators, f"{etag}-gzip"):
            return Response(status_code=304, headers={**base, "ETag": f'"{etag}-gzip"', "Content-Encoding": "gzip"})
        offered = request.headers.get("accept-encoding") or ""
        # no browser sends a long one: past the bound it is not parsed, and the plain file is sent
        wants = request.headers.get("range") is None and len(offered) <= MAX_VALIDATORS and accepts_gzip(offered)
        if wants and not etag_matches(validators, etag):
            if gzipped is not None:
                data, etag = gzipped, f"{etag}-gzip"
                base.update({"ETag": f'"{etag}"', "Content-Encoding": "gzip"})
            elif (copy := gzip_copies.copy(path, etag)) is not None:
                path, etag = copy, f"{etag}-gzip"
                base.update({"ETag": f'"{etag}"', "Content-Encoding": "gzip"})
    size = len(data) if data is not None else path.stat().st_size
    if etag_matches(validators, etag):
        return Response(status_code=304, headers=base)
    span, status = (0, size - 1), 200
    header = request.headers.get("range")
    if_range = bounded_header(request, "If-Range")
    if header is not None and (if_range is None or if_range.strip() == f'"{etag}"'):
        chosen = parse_range(header, size)
        if chosen is not None:
            span, status = chosen, 206
            base["Content-Range"] = f"bytes {chosen[0]}-{chosen[1]}/{size}"
    start, length = span[0], span[1] - span[0] + 1
    base["Content-Length"] = str(length)
    if request.method == "HEAD":
        return Response(status_code=status, headers=base, media_type=media_type)
    if data is None and length <= CHUNK:  # one read here (the route's thread) costs less than a stream
        with open(path, "rb") as f:
            f.seek(start)
            data, start = f.read(length), 0
    if data is not None:
        return Response(data[start : start + length], status_code=status, headers=base, media_type=media_type)
    return StreamingResponse(_read(path, start, length), status_code=status, headers=base, media_type=media_type)
