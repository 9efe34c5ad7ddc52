"""static/worker/unzip.js, which the page's worker unzips the engine wheel with while Pyodide boots: run by Node (whose
DecompressionStream is the web's) on the wheel app/engine_wheel.py builds, it gives Python's zipfile's files byte for
byte, and it refuses a corrupt or foreign archive with an error that names what was wrong."""

import hashlib
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from app.engine_wheel import build_wheel

ROOT = Path(__file__).resolve().parent.parent
# Node: unzip.js (argv[1])'s files of the archive argv[2] as {name: sha256}, or {error}
READ = """
const fs = require("node:fs"), crypto = require("node:crypto");
globalThis.self = globalThis;
eval(fs.readFileSync(process.argv[1], "utf8"));
const bytes = fs.readFileSync(process.argv[2]);
self.unzip(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)).then(
  (files) => console.log(JSON.stringify(Object.fromEntries(
    files.map(([name, data]) => [name, crypto.createHash("sha256").update(data).digest("hex")])))),
  (error) => console.log(JSON.stringify({ error: error.message })),
);
"""


def unzipped(archive: Path) -> dict:
    node = shutil.which("node")
    assert node, "node is not installed: apt-get install -y nodejs (scripts/setup-system.sh)"
    run = subprocess.run(
        [node, "-e", READ, "--", str(ROOT / "static" / "worker" / "unzip.js"), str(archive)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    return build_wheel(ROOT, tmp_path_factory.mktemp("wheel"))


def test_the_engine_wheels_files_are_zipfiles_byte_for_byte(wheel):
    with zipfile.ZipFile(wheel) as archive:
        expected = {
            info.filename: hashlib.sha256(archive.read(info)).hexdigest()
            for info in archive.infolist()
            if not info.is_dir()
        }
    assert len(expected) > 100 and "py_engine/backends/wasm/kernels.wasm" in expected
    assert unzipped(wheel) == expected


def test_stored_entries_are_read_too(wheel, tmp_path):
    stored = tmp_path / "stored.zip"
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(stored, "w", zipfile.ZIP_STORED) as out:
        for info in source.infolist()[:5]:
            out.writestr(info.filename, source.read(info))
        names = [info.filename for info in source.infolist()[:5]]
    got = unzipped(stored)
    assert sorted(got) == sorted(names)


def test_a_corrupt_entry_is_refused_by_name(wheel, tmp_path):
    with zipfile.ZipFile(wheel) as archive:
        first = archive.infolist()[0]
    corrupt = bytearray(wheel.read_bytes())
    # one byte of the first entry's compressed data changed: the inflated bytes or their CRC-32 no longer match
    data_start = first.header_offset + 30 + len(first.filename.encode()) + len(first.extra)
    corrupt[data_start + first.compress_size - 8] ^= 0x01
    (tmp_path / "corrupt.whl").write_bytes(bytes(corrupt))
    got = unzipped(tmp_path / "corrupt.whl")
    assert set(got) == {"error"} and got["error"].startswith(first.filename + ": ")


def test_what_is_not_a_zip_archive_is_refused(tmp_path):
    (tmp_path / "page.html").write_text("<!doctype html><p>not found</p>")
    assert unzipped(tmp_path / "page.html") == {"error": "not a zip archive (no end of central directory)"}
