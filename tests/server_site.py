"""A small site in a temporary folder for the server tests: static page, models, a verified fake
Pyodide install, a copy of the engine's build inputs, and a secret file next to them that no URL may read."""

import contextlib
import hashlib
import json
import shutil
import socket
import threading
import time
from pathlib import Path

import uvicorn

from app import Settings
from app.assets import install, pyodide_dir
from app.engine_wheel import source_files
from app.settings import REPO

SECRET = "TOP-SECRET-CONTENT-0451"
SHARD1 = bytes(range(256)) * 4  # 1024 bytes
SHARD2 = b"second shard " * 10  # 130 bytes, in a subfolder
FAKE_PYODIDE = {
    "pyodide.js": b"// classic-script loader",
    "pyodide.mjs": b"export const loadPyodide = null;",
    "pyodide.asm.wasm": b"\0asm\1\0\0\0",
    "pyodide-lock.json": b'{"info": {"version": "0.27.7"}, "packages": {}}',
    "python_stdlib.zip": b"PK\5\6" + bytes(18),
    # a package a run loads when it imports it (app/assets.py, PACKAGES): served and exported as the runtime is
    "scipy-1.14.1-cp312-cp312-pyodide_2024_0_wasm32.whl": b"PK\5\6" + bytes(18),
    "openblas-0.3.26.zip": b"PK\5\6" + bytes(18),
}
STATIC = {
    "index.html": b'<!doctype html><html><head><script src="app.js"></script></head><body></body></html>',
    "app.js": b"new Worker('worker.js');",
    "worker.js": b"importScripts('/pyodide/pyodide.js');",
    "style.css": b"body { margin: 0 }",
    "samples/index.html": b"<!doctype html><p>samples</p>",
    "samples/hello.py": b"print('hello')",
}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_model(models: Path, name: str, shards: dict[str, bytes], paths: list[str] | None = None) -> Path:
    """A TensorFlow.js layers model.json listing `paths` (default: the shard names) in one weight group."""
    folder = models / name
    for rel, data in shards.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    spec = {
        "format": "layers-model",
        "generatedBy": "server tests",
        "modelTopology": {"class_name": "Sequential", "config": {"layers": []}},
        "weightsManifest": [
            {
                "paths": paths if paths is not None else list(shards),
                "weights": [{"name": "dense/kernel", "shape": [4, 4], "dtype": "float32"}],
            }
        ],
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.json").write_text(json.dumps(spec, indent=2))
    return folder


def copy_engine_source(dest: Path) -> Path:
    for rel in source_files(REPO):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / rel, dest / rel)
    return dest


def build_site(root: Path) -> Settings:
    (root / "secret.txt").write_text(SECRET)
    static = root / "static"
    for rel, data in STATIC.items():
        (static / rel).parent.mkdir(parents=True, exist_ok=True)
        (static / rel).write_bytes(data)
    (static / "link-out.txt").symlink_to(root / "secret.txt")
    (static / "link-in.js").symlink_to(static / "app.js")

    models = root / "models"
    tiny = make_model(models, "tiny", {"group1-shard1of2.bin": SHARD1, "sub/group1-shard2of2.bin": SHARD2})
    # model.json says "./sub/..." for the second shard: the rewritten URL drops the "./"
    spec = json.loads((tiny / "model.json").read_text())
    spec["weightsManifest"][0]["paths"][1] = "./sub/group1-shard2of2.bin"
    (tiny / "model.json").write_text(json.dumps(spec))
    (tiny / "link.bin").symlink_to(root / "secret.txt")  # a symlink out, not listed in model.json
    make_model(root / "outside", "model", {"w.bin": SECRET.encode()})
    (models / "escaped").symlink_to(root / "outside" / "model")  # a whole model folder pointing out
    (models / "broken").mkdir()
    (models / "broken" / "model.json").write_text("{not json")

    assets = root / "assets"
    install(FAKE_PYODIDE, pyodide_dir(assets))
    (pyodide_dir(assets) / "unlisted.js").write_text("// in the folder, not in the verified manifest")
    src = copy_engine_source(root / "engine-src")
    return Settings(static_dir=static, assets_dir=assets, models_dir=models, engine_source=src, pyodide_cdn=None)


@contextlib.contextmanager
def live_server(config: uvicorn.Config):
    """uvicorn serving `config` in a thread on a free loopback port; yields the port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
