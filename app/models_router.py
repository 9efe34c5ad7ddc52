"""The router of /models: the catalogue and CDN-style weight endpoints of the TensorFlow.js models in the models folder
(layers models such as the converted classifier, graph models such as those of app/graph_models.py).

GET /models lists each model: its name, kind ("layers-model" or "graph-model", from model.json's format), and the
task and license its metadata.json gives (null without one), and names the page's default classifier.

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
# Beside the weights, what a page needs to use a model (class names, preprocessing, task, source) and its licence text:
# file name -> content type.
SIDECARS = {
    "labels.json": "application/json",
    "metadata.json": "application/json",
    "LICENSE": "text/plain; charset=utf-8",
}
KINDS = ("layers-model", "graph-model")


@dataclass(frozen=True)
class Model:
    json_bytes: bytes  # model.json as served, shard paths rewritten
    etag: str  # sha256 of json_bytes
    shards: dict[str, tuple[Path, str]]  # original relative path -> (file, sha256)


_models: FileCache[Model] = FileCache()
_entries: FileCache[dict] = FileCache()


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


def model_kind(spec: object) -> str | None:
    """ "layers-model" or "graph-model": model.json's format, else what its topology is (a graph's has nodes)."""
    if not isinstance(spec, dict):
        return None
    if spec.get("format") in KINDS:
        return spec["format"]
    topology = spec.get("modelTopology")
    return "graph-model" if isinstance(topology, dict) and "node" in topology else "layers-model"


def _read_json(models_dir: Path, rel: str) -> object:
    """The parsed file rel of the models folder, or None when it is missing, leads out of the folder or is not JSON."""
    file = safe_file(models_dir, rel)
    try:
        return json.loads(file.read_bytes()) if file else None
    except (OSError, ValueError):
        return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def catalogue_entry(models_dir: Path, name: str) -> dict:
    """{name, kind, task, license} of one model; a null where its model.json or metadata.json does not say."""

    def read(watched: Watched) -> dict:
        for file in ("model.json", "metadata.json"):
            watched.add(models_dir / name / file, where=True)
        metadata = _read_json(models_dir, f"{name}/metadata.json")
        metadata = metadata if isinstance(metadata, dict) else {}
        source = metadata.get("source") if isinstance(metadata.get("source"), dict) else {}
        return {
            "name": name,
            "kind": model_kind(_read_json(models_dir, f"{name}/model.json")),
            "task": _text(metadata.get("task")),
            "license": _text(source.get("license")),
        }

    return _entries.get((models_dir, name), read)


def models_router(models_dir: Path) -> APIRouter:
    router = APIRouter()

    @router.api_route("/models", methods=["GET", "HEAD"])
    def list_models() -> JSONResponse:
        found = models_dir.glob("*/model.json") if models_dir.is_dir() else []
        names = sorted(p.parent.name for p in found if safe_file(models_dir, f"{p.parent.name}/model.json"))
        default = DEFAULT_CLASSIFIER if DEFAULT_CLASSIFIER in names else None
        listed = [catalogue_entry(models_dir, name) for name in names]
        return JSONResponse({"models": listed, "default": default}, headers={"Cache-Control": REVALIDATE, **NOSNIFF})

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
        return send(request, path=file, etag=file_sha256(file), cache_control=REVALIDATE, media_type=SIDECARS[sidecar])

    return router
