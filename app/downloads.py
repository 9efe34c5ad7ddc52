"""The runtime the page downloads: the verified offline Pyodide at /pyodide/, the engine wheel at /engine/, the
bytecode of a first visit at /bytecode/ (app/bytecode.py) and the classifier's pipeline list at /pipelines/
(app/classifier_pipelines.py).

The Pyodide manifest is read once and kept until verified.json or a file it lists changes, and each
file's sha256 until that file changes (app/file_cache.py), so a request costs stat calls, not hashing.
"""

import re
from pathlib import Path

from fastapi import APIRouter, Request

from app.assets import PYODIDE_VERSION, pyodide_dir, read_manifest
from app.bytecode import FirstVisitBytecode
from app.classifier_pipelines import ClassifierPipelines
from app.compression import GzipCopies, compressible
from app.engine_wheel import EngineWheel, Wheel, WheelError
from app.errors import HTTPError, clip
from app.file_cache import FileCache
from app.http_files import IMMUTABLE, REVALIDATE, content_type, file_sha256, send
from app.paths import check_relative, safe_file

DIGEST = re.compile(r"^[0-9a-f]{16}$")
_manifests: FileCache[dict[str, dict] | None] = FileCache(max_entries=8)


def current_wheel(engine: EngineWheel) -> Wheel:
    try:
        return engine.current()
    except WheelError as e:
        raise HTTPError(500, str(e)) from None


def downloads_router(
    assets_dir: Path,
    engine: EngineWheel,
    bytecode: FirstVisitBytecode,
    pipelines: ClassifierPipelines,
    gzip_copies: GzipCopies,
) -> APIRouter:
    router = APIRouter()
    folder = pyodide_dir(assets_dir)

    @router.api_route("/pyodide/{path:path}", methods=["GET", "HEAD"])
    def pyodide_file(path: str, request: Request):
        check_relative(path)
        files = _manifests.get(folder, lambda watched: read_manifest(folder, watched))
        if files is None:
            raise HTTPError(
                404, f"the offline Pyodide {PYODIDE_VERSION} is not installed: run `python -m app fetch-assets`"
            )
        if path not in files:
            raise HTTPError(404, f"{clip(path)} is not part of the verified Pyodide {PYODIDE_VERSION} distribution")
        file = safe_file(folder, path)
        expected = files[path]["sha256"]
        if file is None or file_sha256(file) != expected:  # only verified bytes are ever served
            raise HTTPError(
                500, f"pyodide/{path} changed since it was verified: run `python -m app fetch-assets --force`"
            )
        return send(
            request,
            path=file,
            etag=expected,
            cache_control=REVALIDATE,
            media_type=content_type(path),
            gzip_copies=gzip_copies if compressible(path) else None,
        )

    @router.api_route("/engine/{digest}/{filename}", methods=["GET", "HEAD"])
    def engine_wheel(digest: str, filename: str, request: Request):
        if not DIGEST.match(digest):
            raise HTTPError(400, f"engine wheel digest must be 16 lowercase hex digits, got {clip(digest)}")
        try:
            wheel = engine.find(digest, filename)
        except WheelError as e:
            raise HTTPError(500, str(e)) from None
        if wheel is None:
            raise HTTPError(
                404,
                f"/engine/{digest}/{clip(filename)} is not a recent engine wheel: reload /config.json for the current one",
            )
        return send(request, path=wheel.path, etag=wheel.sha256, cache_control=IMMUTABLE, media_type="application/zip")

    def built_file(request: Request, builds, what: str, digest: str, filename: str, media_type: str):
        """A file the server built (app/builds.py), at /<route>/<digest>/<filename>: immutable, gzipped where accepted."""
        if not DIGEST.match(digest):
            raise HTTPError(400, f"{what} digest must be 16 lowercase hex digits, got {clip(digest)}")
        found = builds.find(digest, filename)
        if found is None or not found.path.is_file():
            raise HTTPError(
                404, f"{clip(request.url.path)} is not a recent build: reload /config.json for the current one"
            )
        return send(
            request,
            path=found.path,
            etag=found.sha256,
            cache_control=IMMUTABLE,
            media_type=media_type,
            gzip_copies=gzip_copies,
        )

    @router.api_route("/bytecode/{digest}/{filename}", methods=["GET", "HEAD"])
    def first_visit_bytecode(digest: str, filename: str, request: Request):
        return built_file(request, bytecode, "bytecode", digest, filename, "application/octet-stream")

    @router.api_route("/pipelines/{digest}/{filename}", methods=["GET", "HEAD"])
    def classifier_pipelines(digest: str, filename: str, request: Request):
        return built_file(request, pipelines, "pipeline list", digest, filename, "application/json")

    return router
