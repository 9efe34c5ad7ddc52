"""The router of /models: the CDN-style weight endpoints for the TensorFlow.js layers models in the models folder.

models/<name>/model.json is served with each weightsManifest path rewritten to
shards/<sha256>/<original path>, relative to model.json, so a shard's URL names its content: shards are
cached forever (immutable, strong ETag = their sha256), and model.json is revalidated (no-cache,
ETag, 304). A shard is served only if model.json lists it, it lies inside the model's folder (symlinks
included) and its bytes still have the hash in the URL. Range and HEAD work on both.

A model (model.json as served, its ETag, its shards and their hashes) is read once and kept until
model.json or one of its shards changes or leads elsewhere (app/file_cache.py: a stat and a realpath
per file per request), so neither a model.json request nor a shard request parses JSON or hashes
bytes when nothing changed.
"""

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from app.errors import NOSNIFF, HTTPError, clip
from app.file_cache import FileCache, Watched
from app.http_files import IMMUTABLE, REVALIDATE, content_type, file_sha256, send
from app.paths import check_relative, safe_file

SHA256 = re.compile(r"^[0-9a-f]{64}$")
# The page's classifier unless its visitor picks another: /models names it for the picker, /config.json for the worker.
DEFAULT_CLASSIFIER = "efficientnet-lite0"
# Beside the weights, what a page needs to use a model: class names and preprocessing.
SIDECARS = ("labels.json", "metadata.json")


@dataclass(frozen=True)
class Model:
    json_bytes: bytes  # model.json as served, shard paths rewritten
    etag: str  # sha256 of json_bytes
    shards: dict[str, tuple[Path, str]]  # original relative path -> (file, sha256)


_models: FileCache[Model] = FileCache()


def _shard_path(name: str, path: object) -> str:
    if not isinstance(path, str) or "://" in path:
        raise HTTPError(500, f"models/{name}/model.json lists a shard path that is not relative: {path!r}")
    rel = path.removeprefix("./")
    try:
        check_relative(rel)
    except HTTPError as e:
        raise HTTPError(500, f"models/{name}/model.json lists an unsafe shard path: {e.detail}") from None
    return rel


def load_model(models_dir: Path, name: str) -> Model:
    """The model `name` of the models folder, read again only when model.json or a shard changed."""
    check_relative(name)
    return _models.get((models_dir, name), lambda watched: read_model(models_dir, name, watched))


def read_model(models_dir: Path, name: str, watched: Watched) -> Model:
    model_dir = models_dir / name
    watched.add(model_dir / "model.json", where=True)  # and where it leads: a folder swapped for a link counts
    found = safe_file(models_dir, f"{name}/model.json")
    if found is None:
        raise HTTPError(
            404, f"no model named {clip(name)} in the models folder (no model.json in a folder of that name)"
        )
    try:
        spec = json.loads(found.read_bytes())
        groups = spec.get("weightsManifest", [])
        if not isinstance(groups, list) or not all(
            isinstance(g, dict) and isinstance(g.get("paths"), list) for g in groups
        ):
            raise ValueError("weightsManifest must be a list of {paths: [...], weights: [...]}")
    except (ValueError, AttributeError) as e:
        raise HTTPError(500, f"models/{name}/model.json is not a valid TensorFlow.js model.json: {e}") from None
    shards = {}
    for group in groups:
        rewritten = []
        for path in group["paths"]:
            rel = _shard_path(name, path)
            watched.add(model_dir / rel, where=True)
            file = safe_file(model_dir, rel)
            if file is None:
                raise HTTPError(
                    500, f"models/{name}/model.json lists shard {clip(path)}, which is not in the model's folder"
                )
            shards[rel] = (file, file_sha256(file))
            rewritten.append(f"shards/{shards[rel][1]}/{quote(rel)}")
        group["paths"] = rewritten
    served = json.dumps(spec, separators=(",", ":")).encode()
    return Model(served, hashlib.sha256(served).hexdigest(), shards)


def models_router(models_dir: Path) -> APIRouter:
    router = APIRouter()

    @router.api_route("/models", methods=["GET", "HEAD"])
    def list_models() -> JSONResponse:
        found = models_dir.glob("*/model.json") if models_dir.is_dir() else []
        names = sorted(p.parent.name for p in found if safe_file(models_dir, f"{p.parent.name}/model.json"))
        default = DEFAULT_CLASSIFIER if DEFAULT_CLASSIFIER in names else None
        return JSONResponse({"models": names, "default": default}, headers={"Cache-Control": REVALIDATE, **NOSNIFF})

    @router.api_route("/models/{name}/model.json", methods=["GET", "HEAD"])
    def model_json(name: str, request: Request):
        model = load_model(models_dir, name)
        return send(
            request, data=model.json_bytes, etag=model.etag, cache_control=REVALIDATE, media_type="application/json"
        )

    @router.api_route("/models/{name}/shards/{digest}/{path:path}", methods=["GET", "HEAD"])
    def shard(name: str, digest: str, path: str, request: Request):
        if not SHA256.match(digest):
            raise HTTPError(400, f"shard hash must be 64 lowercase hex digits (sha256), got {clip(digest)}")
        check_relative(path)
        model = load_model(models_dir, name)
        if path not in model.shards:
            raise HTTPError(404, f"{clip(path)} is not a shard of model {clip(name)}")
        file, actual = model.shards[path]
        if actual != digest:
            raise HTTPError(
                404,
                f"shard {clip(path)} of model {clip(name)} now has sha256 {actual}, not {digest}: reload model.json",
            )
        return send(request, path=file, etag=digest, cache_control=IMMUTABLE, media_type=content_type(path))

    @router.api_route("/models/{name}/{sidecar}", methods=["GET", "HEAD"])
    def sidecar_file(name: str, sidecar: str, request: Request):
        if sidecar not in SIDECARS:
            raise HTTPError(
                404, f"{clip(sidecar)}: a model folder serves model.json, its shards and {', '.join(SIDECARS)}"
            )
        file = safe_file(models_dir, f"{name}/{sidecar}")
        if file is None:
            raise HTTPError(404, f"model {clip(name)} has no {sidecar}")
        return send(request, path=file, etag=file_sha256(file), cache_control=REVALIDATE, media_type="application/json")

    return router
