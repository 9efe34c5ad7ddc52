"""python -m app export DIR: the whole playground as static files, for a static host or `python -m http.server`.

Every file is what the server answers for its URL, asked of the app itself in this process (create_app, no
network): the page and the rest of static/ (the built static/vendor bundles included), /config.json, the verified
offline Pyodide's files (unless a Pyodide CDN is set), the engine wheel, the first-visit bytecode (app/bytecode.py;
when Node.js can build it), the classifier's pipeline list (app/classifier_pipelines.py; when the models folder has the
classifier), and each model of the models folder:
model.json with its shard paths rewritten, the shards at their content-addressed URLs and the sidecars it has. So
nothing here builds a file or a URL on its own: a change to the server shows in the next export.

A `_headers` file (Netlify and Cloudflare Pages read it) gives each file the headers the server sends with it: CSP,
COOP/COEP (cross-origin isolation, which Stop needs; without them the page runs, but Stop cannot interrupt code that
never awaits), nosniff, CORS on the models, the content type, and the caching (immutable for the content-addressed
shards, wheel, bytecode and pipeline list, revalidated for the rest). One rule per exact path: these hosts merge the
headers of every rule a path matches, so overlapping patterns would join two Cache-Control values into one.

The static copy's service worker (static/isolation_sw.js), which a page on a host that sends no headers registers, gives
each answer those same headers and keeps the files for offline visits: the export writes what it needs into
export_manifest.js, the one file besides _headers that the server does not serve (each URL's headers, the URLs that
never change, and a version that hashes every URL, its headers and its bytes, which names the worker's cache: a
new export replaces the old one's cache).

The export belongs at the root of its origin: config.json and the page name /pyodide/, /engine/, /bytecode/,
/pipelines/ and /models by absolute path, as the server does. A URL that is also a folder of other URLs (/models, the model picker's
list) is written as that folder's index.html, which static hosts serve for it (after a redirect to /models/).
"""

import asyncio
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from urllib.parse import quote, unquote, urljoin

from fastapi import FastAPI

from app.assets import pyodide_dir, read_manifest
from app.engine_wheel import WheelError
from app.factory import create_app
from app.models_router import SIDECARS
from app.page import RESERVED
from app.paths import safe_file
from app.settings import Settings

HEADERS_FILE = "_headers"
MANIFEST_FILE = "export_manifest.js"  # imported by static/isolation_sw.js
# The response headers a static host must repeat; the others (ETag, Content-Length, ranges) it makes itself.
KEPT_HEADERS = (
    "content-type",
    "cache-control",
    "content-security-policy",
    "cross-origin-opener-policy",
    "cross-origin-embedder-policy",
    "cross-origin-resource-policy",
    "x-content-type-options",
    "access-control-allow-origin",
    "access-control-expose-headers",
)


class ExportError(RuntimeError):
    """The playground could not be exported; nothing was written to the destination."""


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes):
        self.status, self.headers, self.body = status, headers, body

    def error(self) -> str:
        try:
            return json.loads(self.body)["error"]
        except (ValueError, KeyError, TypeError):
            return self.body[:200].decode(errors="replace")


async def asgi_get(app: FastAPI, url: str) -> Answer:
    """GET `url` (a percent-encoded path) from the app, in process, as a browser on the same origin would."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": unquote(url),
        "raw_path": url.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"export.invalid")],
        "client": ("127.0.0.1", 0),
        "server": ("export.invalid", 80),
    }
    start, chunks, asked, done = {}, [], [], asyncio.Event()

    async def receive():
        if not asked:
            asked.append(True)
            return {"type": "http.request", "body": b"", "more_body": False}
        await done.wait()  # a streamed answer listens for the client leaving: it leaves once it has the body
        return {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.start":
            start.update(message)
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                done.set()

    await app(scope, receive, send)
    headers = {name.decode().lower(): value.decode() for name, value in start.get("headers", [])}
    return Answer(start["status"], headers, b"".join(chunks))


def static_urls(static_dir: Path) -> list[str]:
    """The URLs of the files the server serves from static/ (links that lead out of it and reserved names left out)."""
    urls = ["/"]
    for folder, dirs, names in os.walk(static_dir, followlinks=True):
        dirs.sort()
        for name in sorted(names):
            rel = (Path(folder) / name).relative_to(static_dir).as_posix()
            if rel.split("/")[0] not in RESERVED and safe_file(static_dir, rel) is not None:
                urls.append("/" + quote(rel))
    return urls


def model_names(models_dir: Path) -> list[str]:
    found = models_dir.glob("*/model.json") if models_dir.is_dir() else []
    return sorted(p.parent.name for p in found if safe_file(models_dir, f"{p.parent.name}/model.json"))


async def collect(settings: Settings, log) -> dict[str, Answer]:
    """{URL: the server's answer} for every file of the playground."""
    app = create_app(settings)
    answers: dict[str, Answer] = {}

    async def get(url: str, optional: bool = False) -> Answer | None:
        answer = await asgi_get(app, url)
        if answer.status == 404 and optional:
            return None
        if answer.status != 200:
            raise ExportError(f"the server answers {url} with {answer.status}: {answer.error()}")
        answers[url] = answer
        return answer

    for url in static_urls(settings.static_dir):
        await get(url)
    try:  # built now (the server builds them in the background), so that config.json names them
        wheel = app.state.engine.current()
        app.state.bytecode.current(wheel, wait=True)
        app.state.pipelines.current(wheel, wait=True)
    except WheelError as e:
        raise ExportError(str(e)) from None
    config = json.loads((await get("/config.json")).body)
    await get(config["engine_wheel_url"])
    for built in ("bytecode", "pipelines"):
        if config[built]:
            await get(config[built]["url"])
    if settings.pyodide_cdn is None:
        files = read_manifest(pyodide_dir(settings.assets_dir))
        if files is None:
            raise ExportError(
                f"no verified Pyodide in {pyodide_dir(settings.assets_dir)}: run `python -m app fetch-assets` first"
            )
        for name in sorted(files):
            await get(urljoin(config["pyodide_index_url"], quote(name)))
    await get("/models")
    for name in model_names(settings.models_dir):
        base = f"/models/{quote(name)}/"
        spec = json.loads((await get(base + "model.json")).body)
        for group in spec.get("weightsManifest", []):
            for path in group["paths"]:
                await get(base + path)
        for sidecar in SIDECARS:
            await get(base + sidecar, optional=True)
        log(f"model {name}: model.json, {sum(len(g['paths']) for g in spec.get('weightsManifest', []))} shards")
    return answers


def is_folder(url: str, urls) -> bool:
    return url.endswith("/") or any(other.startswith(url + "/") for other in urls)


def file_for(url: str, urls) -> str:
    """Where a static host looks for the URL's file: a folder's URL gets the folder's index.html."""
    path = unquote(url).strip("/")
    return f"{path}/index.html".lstrip("/") if is_folder(url, urls) else path


def kept_headers(answer: Answer) -> dict[str, str]:
    return {name: answer.headers[name] for name in KEPT_HEADERS if name in answer.headers}


def paths_of(url: str, urls) -> list[str]:
    """The paths a browser asks for the URL by: a folder's with and without its final slash (the host redirects)."""
    return [url, url + "/"] if is_folder(url, urls) and not url.endswith("/") else [url]


def headers_file(answers: dict[str, Answer]) -> str:
    """The _headers rules: each URL (a folder's with and without its final slash), then its headers, indented."""
    rules = []
    for url, answer in answers.items():
        kept = [f"  {name}: {value}" for name, value in kept_headers(answer).items()]
        rules += ["\n".join([path, *kept]) for path in paths_of(url, answers)]
    return "\n\n".join(rules) + "\n"


def export_version(answers: dict[str, Answer]) -> str:
    """A digest of every URL, its headers and its bytes: any change to the export changes it."""
    digest = hashlib.sha256()
    for url, answer in sorted(answers.items()):
        digest.update(json.dumps([url, kept_headers(answer), hashlib.sha256(answer.body).hexdigest()]).encode())
    return digest.hexdigest()[:16]


def service_worker_manifest(answers: dict[str, Answer], page: list[str]) -> str:
    """export_manifest.js: self.exportManifest = {version, headers: [distinct header sets], urls: {path: index into
    headers}, immutable: [paths whose bytes never change], page: [the page's own files, static/'s: kept at install]}."""
    header_sets: list[dict[str, str]] = []
    urls: dict[str, int] = {}
    immutable = []
    for url, answer in answers.items():
        kept = kept_headers(answer)
        if kept not in header_sets:
            header_sets.append(kept)
        for path in paths_of(url, answers):
            urls[path] = header_sets.index(kept)
            if "immutable" in kept.get("cache-control", ""):
                immutable.append(path)
    manifest = {"version": export_version(answers), "headers": header_sets, "urls": urls, "immutable": immutable}
    manifest["page"] = page
    return (
        "// Written by `python -m app export` (app/export.py) for static/isolation_sw.js: each URL's headers as the\n"
        "// project's server sends them, the URLs whose bytes never change, the page's own files, and the export's version.\n"
        f"self.exportManifest = {json.dumps(manifest, indent=1)};\n"
    )


def export_site(settings: Settings, dest: Path, log=print) -> dict[str, Answer]:
    """Write the playground into `dest` (new, or an empty folder); returns {URL: answer} of what was written.

    The files are written into a staging folder beside dest, which takes dest's place only once all are there."""
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ExportError(f"{dest} already exists and is not an empty folder: remove it or choose another")
    answers = asyncio.run(collect(settings, log))
    if "/" + MANIFEST_FILE in answers:
        raise ExportError(f"static/{MANIFEST_FILE} is the name of the file the export writes for its service worker")
    dest.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}-export-"))
    try:
        stage.chmod(0o755)
        for url, answer in answers.items():
            target = stage / file_for(url, answers)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(answer.body)
        (stage / HEADERS_FILE).write_text(headers_file(answers))
        (stage / MANIFEST_FILE).write_text(service_worker_manifest(answers, static_urls(settings.static_dir)))
        if dest.exists():
            dest.rmdir()
        os.replace(stage, dest)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    size = sum(len(a.body) for a in answers.values())
    log(f"exported {len(answers)} URLs ({size / 2**20:.1f} MiB), {HEADERS_FILE} and {MANIFEST_FILE} into {dest}")
    return answers
