"""Reading model.json and its shards, several at once: from a folder or file path, file:// or http(s)://.

In CPython, files and URLs (urllib) are read in the event loop's thread pool; in Pyodide (the browser)
URLs, relative ones included, go through the browser's fetch, called directly: pyodide.http, which would wrap it,
costs 7-11 ms to import in a fresh page, more than model.json's request. Errors name the file at fault.
"""

import asyncio
import bisect
import contextlib
import hashlib
import http.client
import inspect
import itertools
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

from .errors import ModelLoadError

IN_BROWSER = sys.platform == "emscripten"


class Location:
    """Where model.json is, and how to read it and the files beside it."""

    def __init__(self, url_or_path):
        text = os.fspath(url_or_path)
        scheme = urllib.parse.urlparse(text).scheme
        if scheme in ("http", "https") or (IN_BROWSER and scheme != "file"):
            self.remote = True  # a URL of model.json, or of the folder holding it
            folder = not urllib.parse.urlparse(text).path.endswith(".json")
            self.target = text.rstrip("/") + "/model.json" if folder else text
        else:
            self.remote = False
            path = urllib.request.url2pathname(urllib.parse.urlparse(text).path) if scheme == "file" else text
            self.target = os.path.join(path, "model.json") if os.path.isdir(path) else path

    def resolve(self, relative):
        """A shard path from the manifest, relative to model.json."""
        if self.remote:
            return urllib.parse.urljoin(self.target, relative)
        return os.path.normpath(os.path.join(os.path.dirname(self.target), relative))

    @contextlib.contextmanager
    def files_ahead(self, shards=True):
        """While a load runs, in the page's worker (static/worker/prefetch.js): the browser requests model.json at
        once and every shard its manifest lists as soon as it is there, before Python has read it; the reads here
        take those answers. What no read took is let go at the end (a model refused before its shards were read).
        Elsewhere, or for a load of model.json alone (`shards` False), nothing."""
        prefetch = None
        if IN_BROWSER and self.remote and shards:
            import js  # only in the browser

            prefetch = getattr(js, "pePrefetch", None)
        if prefetch is not None:
            prefetch.modelFiles(self.target)
        try:
            yield
        finally:
            if prefetch is not None:
                prefetch.dropModelFiles(self.target)

    async def read(self, target, what):
        """The bytes of target."""
        return (await self._read(target, what, False))[0]

    def read_all(self, targets, names, total, on_progress=None, sha256=False):
        """A task of [(body, its sha256 in hex if asked, else None)] of every target, fetched concurrently (in the
        browser the sha256 is a future of it, the browser still hashing: sha256_of awaits it);
        on_progress(bytes loaded, total) after each one. A body is bytes, or in the browser a JsBody. Every request
        is made before this returns, without a turn of the event loop: a caller goes on (parses a graph) at once."""
        reads = [self._read(t, n, sha256, in_js=True) for t, n in zip(targets, names)]
        return asyncio.ensure_future(self._gathered(reads, total, on_progress))

    async def _gathered(self, reads, total, on_progress):
        loaded = 0
        await report(on_progress, loaded, total)

        async def one(read):
            nonlocal loaded
            data, digest = await read
            loaded += len(data)
            await report(on_progress, loaded, total)
            return data, digest

        results = await asyncio.gather(*map(one, reads), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        for error in errors:
            if not isinstance(error, ModelLoadError):
                raise error
        if errors:
            raise ModelLoadError("; ".join(str(e) for e in errors))
        return results

    def _read(self, target, what, sha256, in_js=False):
        """A future of (the bytes of target, their sha256 if asked), its request made now: the browser's fetch
        called, or the read handed to the event loop's threads. Its failure counts as seen: a load that stopped
        waiting (its graph refused) does not report the reads it left."""
        # A file is hashed where it is read, as it arrives: in the reading thread, or by the browser's WebCrypto
        # while Python goes on (hashlib in Pyodide took 100 ms for EfficientNet-Lite0's 18.8 MB of shards).
        if IN_BROWSER:  # no threads there: the browser fetches, and Pyodide's file system is in memory
            if self.remote:
                import js  # only in the browser

                request = js.fetch(target)  # fetch() reports every failure through its promise
                read = asyncio.ensure_future(_browser_fetch(request, target, what, sha256, in_js))
            else:
                read = asyncio.ensure_future(_file_read(target, what, sha256))
        else:
            reader = _read_url if self.remote else _read_file
            read = asyncio.get_running_loop().run_in_executor(None, lambda: _hashed(reader(target, what), sha256))
        read.add_done_callback(_seen)
        return read


async def sha256_of(digest):
    """A sha256 read_all gave: its hex, or None where none was asked."""
    return digest if digest is None or isinstance(digest, str) else await digest


def _seen(future):
    future.cancelled() or future.exception()


async def _file_read(path, what, sha256):
    return _hashed(_read_file(path, what), sha256)


def _hashed(data, sha256):
    return data, hashlib.sha256(data).hexdigest() if sha256 else None


async def report(on_progress, loaded, total):
    if on_progress is not None:
        result = on_progress(loaded, total)
        if inspect.isawaitable(result):
            await result


def _read_file(path, what):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise ModelLoadError(f"{what} is missing: there is no file {path}") from None
    except OSError as e:
        raise ModelLoadError(f"{what} could not be read from {path}: {e}") from None


def _read_url(url, what):
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.read()
    except urllib.error.HTTPError as e:
        with e:
            raise _http_error(what, url, e.code, e.reason, e.read(MAX_ERROR_BODY)) from None
    except http.client.IncompleteRead as e:
        raise ModelLoadError(
            f"{what} is truncated: the connection closed after {len(e.partial)} bytes ({url})"
        ) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
        raise ModelLoadError(f"{what} could not be fetched from {url}: {getattr(e, 'reason', e)}") from None


class JsBody:
    """A fetched body left in the browser's memory (the Uint8Arrays it arrived in), copied into Python only where it
    is needed: each weight straight into its own array, or a quantized shard into one (weights_manifest.unpack), not
    into a bytes object first (18.8 MB more to allocate and copy), nor joined into one Uint8Array (4.6 MB more)."""

    def __init__(self, chunks):
        self._chunks, self._sizes = chunks, [chunk.length for chunk in chunks]
        self._ends = list(itertools.accumulate(self._sizes))

    def __len__(self):
        return self._ends[-1] if self._ends else 0

    def copy_into(self, dest, start):
        """Copy bytes [start, start + dest.size) into `dest`, a contiguous uint8 array."""
        k, filled = bisect.bisect_right(self._ends, start), 0  # k: the chunk holding byte `start`
        while filled < dest.size:
            at = start + filled - (self._ends[k] - self._sizes[k])
            n = min(dest.size - filled, self._sizes[k] - at)
            self._chunks[k].subarray(at, at + n).assign_to(dest[filled : filled + n])
            filled, k = filled + n, k + 1


async def _browser_fetch(request, url, what, sha256, in_js=False):
    """The body of the browser's fetch of url (`request`: its promise) and its sha256 if asked."""
    import js

    try:
        response = await request
    except Exception as e:  # a network error surfaces as a JS exception
        raise ModelLoadError(f"{what} could not be fetched from {url}: {e}") from None
    if not response.ok:
        said = (await response.arrayBuffer()).to_bytes()[:MAX_ERROR_BODY]
        raise _http_error(what, url, response.status, response.statusText, said)
    chunks = await _chunks(response, what, url)
    if in_js and not sha256:
        return JsBody(chunks), None
    data = _joined(chunks)
    subtle = getattr(getattr(js, "crypto", None), "subtle", None)  # WebCrypto exists in secure contexts only
    if sha256 and subtle is None:
        return _hashed(data.to_bytes(), sha256)
    body = JsBody([data]) if in_js else data.to_bytes()
    if not sha256:
        return body, None
    # the browser hashes on a thread of its own: the caller unpacks the shard meanwhile and awaits the digest after
    digest = asyncio.ensure_future(_hex(subtle.digest("SHA-256", data)))
    digest.add_done_callback(_seen)
    return body, digest


async def _hex(digest):
    return (await digest).to_bytes().hex()


async def _chunks(response, what, url):
    """A fetch Response's body as the Uint8Arrays it arrives in, read from its stream, where arrayBuffer() would copy
    it (EfficientNet-Lite0's five shards held by the page: 2.4 ms read so, 17-19 ms through arrayBuffer()). In the
    page's worker JavaScript reads it (static/worker/prefetch.js peReadBody): read from here, each chunk took a turn
    of Python's event loop, and movenet-lightning's 4.6 MB shard reached Python 6-8 ms after its last byte had come
    (1 ms read there)."""
    import js

    if response.body is None:
        return []
    read_body = getattr(js, "peReadBody", None)
    try:
        if read_body is not None:
            return list(await read_body(response))
        reader, chunks = response.body.getReader(), []
        while not (part := await reader.read()).done:
            chunks.append(part.value)
        return chunks
    except Exception as e:  # the connection failed mid-body
        raise ModelLoadError(f"{what} could not be read from {url}: {e}") from None


def _joined(chunks):
    """Uint8Arrays as one (the one itself, where there is one)."""
    import js

    if len(chunks) == 1:
        return chunks[0]
    whole, at = js.Uint8Array.new(sum(c.length for c in chunks)), 0
    for chunk in chunks:
        whole.set(chunk, at)
        at += chunk.length
    return whole


MAX_ERROR_BODY = 2000


def _http_error(what, url, status, reason, body):
    """The failed request, with the server's own explanation when it gave one (this app's {"error": ...})."""
    state = "is missing" if status in (404, 410) else "could not be fetched"
    try:
        said = json.loads(body)["error"]
    except (ValueError, TypeError, KeyError):
        said = None
    return ModelLoadError(
        f"{what} {state}: HTTP {status} {reason} from {url}" + (f" (the server says: {said})" if said else "")
    )
