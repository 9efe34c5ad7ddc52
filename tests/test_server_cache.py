"""The server's per-file caches (app/file_cache.py): a value is kept while its files keep their stat signature
(device, inode, size, mtime), so an unchanged model.json is not parsed again nor a shard hashed again, and any
change (an edit, a same-size rewrite, a file replaced by a link out, a module added) is seen on the next request.

To show a value really is reused, a test rewrites a file with the same size and puts its old mtime back: the
signature is then unchanged, so the cache must still answer the old value. Files are first aged by SETTLE_NS,
as a freshly written file is never cached (its mtime may not yet tell two writes apart)."""

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app import create_app
from app.engine_wheel import EngineWheel, source_key
from app.file_cache import SETTLE_NS, FileCache, Watched
from app.http_files import file_sha256
from app.models_router import load_model
from tests.server_site import SECRET, build_site, copy_engine_source, make_model, sha256


def age(*paths: Path) -> None:
    """Move the mtimes of these files and folders back past SETTLE_NS, so values computed from them are kept."""
    past = time.time_ns() - 10 * SETTLE_NS
    for path in paths:
        os.utime(path, ns=(past, past), follow_symlinks=False)


def rewrite_keeping_signature(path: Path, data: bytes) -> None:
    """New bytes of the same length with the old mtime back: the stat signature does not change."""
    st = path.stat()
    assert len(data) == st.st_size
    path.write_bytes(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.fixture
def site(tmp_path):
    (tmp_path / "site").mkdir()
    return build_site(tmp_path / "site")


@pytest.fixture
def client(site):
    return TestClient(create_app(site))


def model_files(folder: Path) -> list[Path]:
    return [folder, *folder.rglob("*")]


# --- shard digests -------------------------------------------------------------------------------------


def test_a_digest_is_computed_again_only_when_the_file_changes(tmp_path):
    f = tmp_path / "w.bin"
    f.write_bytes(b"A" * 100)
    age(f)
    assert file_sha256(f) == sha256(b"A" * 100)
    rewrite_keeping_signature(f, b"B" * 100)
    assert file_sha256(f) == sha256(b"A" * 100)  # reused: the file was not read again
    f.write_bytes(b"C" * 101)  # another size (and a fresh mtime)
    assert file_sha256(f) == sha256(b"C" * 101)


def test_a_file_written_just_now_is_never_cached(tmp_path):
    # two same-size writes within one tick of the file system's clock would share an mtime
    f = tmp_path / "w.bin"
    f.write_bytes(b"A" * 100)
    assert file_sha256(f) == sha256(b"A" * 100)
    rewrite_keeping_signature(f, b"B" * 100)
    assert file_sha256(f) == sha256(b"B" * 100)


def test_the_cache_is_bounded(tmp_path):
    cache: FileCache[int] = FileCache(max_entries=3)
    for i in range(10):
        path = tmp_path / f"{i}.txt"
        path.write_text(str(i))
        age(path)

        def read(watched: Watched, path=path) -> int:
            watched.add(path)
            return int(path.read_text())

        assert cache.get(path, read) == i
    assert len(cache) == 3


# --- models --------------------------------------------------------------------------------------------


def test_an_unchanged_model_is_read_once(site):
    folder = site.models_dir / "tiny"
    age(*model_files(folder))
    first = load_model(site.models_dir, "tiny")
    assert load_model(site.models_dir, "tiny") is first
    spec = (folder / "model.json").read_bytes()
    rewrite_keeping_signature(folder / "model.json", spec.replace(b'"layers-model"', b'"layers-MODEL"'))
    assert load_model(site.models_dir, "tiny") is first


def test_an_edited_model_json_is_served_at_once(site, client):
    folder = site.models_dir / "tiny"
    age(*model_files(folder))
    before = client.get("/models/tiny/model.json")
    spec = json.loads((folder / "model.json").read_text())
    spec["generatedBy"] = "edited"
    (folder / "model.json").write_text(json.dumps(spec))
    after = client.get("/models/tiny/model.json", headers={"If-None-Match": before.headers["etag"]})
    assert after.status_code == 200 and after.json()["generatedBy"] == "edited"
    assert after.headers["etag"] != before.headers["etag"]


def test_a_same_size_shard_edit_is_served_at_once(site, client):
    make_model(site.models_dir, "edited", {"w.bin": b"version 1"})
    age(*model_files(site.models_dir / "edited"))
    url = "/models/edited/" + client.get("/models/edited/model.json").json()["weightsManifest"][0]["paths"][0]
    assert client.get(url).content == b"version 1"
    (site.models_dir / "edited" / "w.bin").write_bytes(b"version 2")  # same size, new mtime
    new_url = "/models/edited/" + client.get("/models/edited/model.json").json()["weightsManifest"][0]["paths"][0]
    assert new_url == f"/models/edited/shards/{sha256(b'version 2')}/w.bin"
    assert client.get(new_url).content == b"version 2"
    assert client.get(url).status_code == 404


def test_a_shard_replaced_by_a_link_out_is_refused_at_once(site, client):
    make_model(site.models_dir, "swapped", {"w.bin": SECRET.encode()})  # same bytes as the secret: same URL
    age(*model_files(site.models_dir / "swapped"))
    url = "/models/swapped/" + client.get("/models/swapped/model.json").json()["weightsManifest"][0]["paths"][0]
    assert client.get(url).status_code == 200
    shard = site.models_dir / "swapped" / "w.bin"
    shard.unlink()
    shard.symlink_to(site.models_dir.parent / "secret.txt")
    for r in (client.get(url), client.get("/models/swapped/model.json")):
        assert r.status_code == 500 and "not in the model's folder" in r.json()["error"]
        assert SECRET not in r.text


def test_a_model_folder_replaced_by_a_link_out_is_refused_at_once(site, client):
    make_model(site.models_dir, "moved", {"w.bin": b"weights"})
    age(*model_files(site.models_dir / "moved"))
    assert client.get("/models/moved/model.json").status_code == 200
    (site.models_dir / "moved").rename(site.models_dir.parent / "moved-out")
    (site.models_dir / "moved").symlink_to(site.models_dir.parent / "moved-out")
    assert client.get("/models/moved/model.json").status_code == 404


def test_a_deleted_model_is_gone_at_once(site, client):
    make_model(site.models_dir, "deleted", {"w.bin": b"weights"})
    age(*model_files(site.models_dir / "deleted"))
    assert client.get("/models/deleted/model.json").status_code == 200
    (site.models_dir / "deleted" / "model.json").unlink()
    assert client.get("/models/deleted/model.json").status_code == 404


# --- the engine wheel's source key ---------------------------------------------------------------------


@pytest.fixture
def engine_source(tmp_path) -> Path:
    src = copy_engine_source(tmp_path / "src")
    age(src, *src.rglob("*"))
    return src


def test_the_source_key_is_not_computed_again_while_nothing_changed(engine_source):
    key = source_key(engine_source)
    init = engine_source / "py_engine" / "__init__.py"
    rewrite_keeping_signature(init, init.read_bytes().replace(b"import", b"IMPORT", 1))
    assert source_key(engine_source) == key  # not re-hashed: the signatures are unchanged
    age(init)  # any other mtime counts as a change
    assert source_key(engine_source) != key


def test_an_added_or_removed_module_changes_the_source_key(engine_source):
    key = source_key(engine_source)
    folder = next(p for p in sorted((engine_source / "py_engine").iterdir()) if p.is_dir())
    (folder / "added_module.py").write_text("X = 1\n")
    added = source_key(engine_source)
    assert added != key
    (folder / "added_module.py").unlink()
    assert source_key(engine_source) == key


def test_an_edited_build_file_changes_the_source_key(engine_source):
    key = source_key(engine_source)
    (engine_source / "setup.cfg").write_text("[metadata]\n")  # absent before: its appearance counts
    assert source_key(engine_source) != key


def test_a_wheel_url_is_served_without_looking_at_the_sources(engine_source, tmp_path):
    engine = EngineWheel(engine_source, tmp_path / "builds")
    wheel = engine.current()
    with open(engine_source / "py_engine" / "__init__.py", "a") as f:
        f.write("\nEDITED = 1\n")  # a new source key, whose wheel would be built by a look at the sources
    assert engine.find(wheel.digest, wheel.path.name) == wheel
    assert [p.name for p in (tmp_path / "builds").iterdir()] == [wheel.path.parent.name]  # nothing was built
    assert engine.current() != wheel  # while /config.json does look, and builds the new one


def test_a_wheel_another_process_pruned_is_not_found_and_the_current_one_is_built_again(engine_source, tmp_path):
    engine = EngineWheel(engine_source, tmp_path / "builds")
    wheel = engine.current()
    shutil.rmtree(wheel.path.parent)  # the cache's other user pruned it (a benchmark on the same checkout)
    assert engine.find(wheel.digest, wheel.path.name) is None  # a 404 that says to reload /config.json, not a 500
    again = engine.current()
    assert again.digest == wheel.digest and again.path.is_file()  # the same sources, the same bytes
    assert engine.find(wheel.digest, wheel.path.name) == again
