"""The Python the page's worker runs besides the playground (static/worker/startup_cache.py, static/panels/memory_lab/memory_lab.py), in
CPython: the startup cache's packing and its importer of precompiled standard-library modules, and the Memory lab's
table of leaks. (In the page, e2e/test_startup.py and e2e/test_examples.py run them in Pyodide.)"""

import _imp
import importlib.metadata
import importlib.util
import json
import marshal
import sys
import zipfile
import zipimport
from pathlib import Path

import numpy as np
import pytest

import py_engine as pe

STATIC = Path(__file__).resolve().parent.parent / "static"


def page_module(folder, name):
    """static/FOLDER/NAME.py as a fresh module, not put in sys.modules (the page's modules are top-level names there)."""
    spec = importlib.util.spec_from_file_location(name, STATIC / folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def startup_cache():
    return page_module("worker", "startup_cache")


@pytest.fixture
def zipped(tmp_path, monkeypatch):
    """A zip on sys.path holding the module `zipped_mod` (FROM = 'the source'), as Pyodide's standard library is."""
    archive = tmp_path / "lib.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zipped_mod.py", "FROM = 'the source'\n")
    monkeypatch.syspath_prepend(str(archive))
    monkeypatch.delitem(sys.modules, "zipped_mod", raising=False)
    yield archive
    sys.path_importer_cache.pop(str(archive), None)
    sys.modules.pop("zipped_mod", None)


def checked_pyc(source: bytes, code: str, path: str) -> bytes:
    """A checked hash-based .pyc (PEP 552) of `source` whose code is that of `code`, as app/precompile.mjs writes."""
    magic = importlib.util.MAGIC_NUMBER
    compiled = marshal.dumps(compile(code, path, "exec"))
    return magic + (3).to_bytes(4, "little") + _imp.source_hash(int.from_bytes(magic, "little"), source) + compiled


def test_site_packages_is_an_absolute_path_with_one_leading_slash(startup_cache):
    site = startup_cache.site_packages()
    assert site.startswith("/") and not site.startswith("//")


def test_write_bytecode_lets_imports_write_pyc_files(startup_cache, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    startup_cache.write_bytecode()
    assert sys.dont_write_bytecode is False


def test_stdlib_from_zip_lists_zip_modules_but_those_a_snapshot_cannot_hold(startup_cache, zipped, monkeypatch):
    import zipped_mod  # noqa: F401 - imported from the zip

    loader = sys.modules["zipped_mod"].__loader__
    assert isinstance(loader, zipimport.zipimporter)
    for name in ("pyodide.ffi", "ctypes.util"):
        monkeypatch.setitem(sys.modules, name, type(sys)(name))
        sys.modules[name].__loader__ = loader
    names = startup_cache.stdlib_from_zip()
    assert "zipped_mod" in names and "pyodide.ffi" not in names and "ctypes.util" not in names
    assert "json" not in names  # CPython's own standard library is not in a zip


def test_preload_for_snapshot_imports_what_it_can_then_forgets_itself(startup_cache, zipped, monkeypatch):
    monkeypatch.setitem(sys.modules, "startup_cache", startup_cache)
    startup_cache.preload_for_snapshot("zipped_mod no_such_module_anywhere")
    assert "zipped_mod" in sys.modules and "no_such_module_anywhere" not in sys.modules
    assert "startup_cache" not in sys.modules


def test_imported_extensions_are_the_files_of_extension_modules(startup_cache, monkeypatch):
    extension = type(sys)("fake_extension")
    extension.__file__ = "/lib/site/fake_extension.cpython-312-wasm32-emscripten.so"
    monkeypatch.setitem(sys.modules, "fake_extension", extension)
    files = startup_cache.imported_extensions()
    assert extension.__file__ in files and all(file.endswith(".so") for file in files)


def test_forget_listings_makes_new_files_importable(startup_cache, tmp_path, monkeypatch):
    # CPython 3.11's MetadataPathFinder.invalidate_caches lacks its @classmethod (Pyodide's Python 3.12 has it)
    forgotten = []
    monkeypatch.setattr(importlib.metadata.MetadataPathFinder, "invalidate_caches", classmethod(forgotten.append))
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("json")  # a FileFinder for tmp_path is made and caches its empty listing
    (tmp_path / "written_later.py").write_text("HERE = True\n")
    startup_cache.forget_listings()
    try:
        assert importlib.import_module("written_later").HERE
        assert forgotten == [importlib.metadata.MetadataPathFinder]
    finally:
        sys.modules.pop("written_later", None)


def test_pack_bytecode_takes_the_pyc_of_site_packages_modules_marked_unchecked(startup_cache, tmp_path, monkeypatch):
    site = tmp_path / "site-packages"
    site.mkdir()
    (site / "packed_mod.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    try:
        module = importlib.import_module("packed_mod")
        index, data = startup_cache.pack_bytecode(str(site))
    finally:
        sys.modules.pop("packed_mod", None)
    (path, size), *others = [entry for entry in json.loads(index) if entry[0].startswith(str(site))]
    assert path == module.__cached__ and not others
    offset = sum(n for p, n in json.loads(index)[: json.loads(index).index([path, size])])
    pyc = data[offset : offset + size]
    assert pyc[4:8] == (1).to_bytes(4, "little")  # hash-based, unchecked
    assert pyc[8:] == Path(path).read_bytes()[8:]


def test_precompiled_code_is_the_pyc_of_the_zip_source_else_none(startup_cache, zipped, tmp_path):
    importer = zipimport.zipimporter(str(zipped))
    magic = importlib.util.MAGIC_NUMBER
    folder = tmp_path / "bytecode"
    assert startup_cache.precompiled_code(importer, "zipped_mod", str(folder), magic) is None  # no .pyc
    folder.mkdir()
    source = importer.get_data(f"{zipped}/zipped_mod.py")
    (folder / "zipped_mod.pyc").write_bytes(checked_pyc(source, "FROM = 'the pyc'", "zipped_mod.py"))
    namespace = {}
    exec(startup_cache.precompiled_code(importer, "zipped_mod", str(folder), magic), namespace)
    assert namespace["FROM"] == "the pyc"
    (folder / "zipped_mod.pyc").write_bytes(checked_pyc(b"another source\n", "FROM = 'stale'", "zipped_mod.py"))
    assert startup_cache.precompiled_code(importer, "zipped_mod", str(folder), magic) is None


def test_use_precompiled_stdlib_imports_zip_modules_from_their_pyc(startup_cache, zipped, tmp_path):
    sys.path_importer_cache[str(zipped)] = zipimport.zipimporter(str(zipped))
    source = zipfile.ZipFile(zipped).read("zipped_mod.py")
    (tmp_path / "zipped_mod.pyc").write_bytes(checked_pyc(source, "FROM = 'the pyc'", "zipped_mod.py"))
    startup_cache.use_precompiled_stdlib(str(tmp_path))
    import zipped_mod

    assert zipped_mod.FROM == "the pyc"
    assert zipped_mod.__loader__.archive == str(zipped)  # tracebacks still show the zip's source


def test_leak_sites_name_each_creation_site_with_its_line_of_code():
    memory_lab = page_module("panels/memory_lab", "memory_lab")
    pe.set_debug(True)
    kept = [pe.ones((2, 3)) for _ in range(2)]  # the leaking line
    found = memory_lab.leak_sites()
    assert found["debug"] is True
    (site,) = found["sites"]
    assert site["count"] == 2 and site["bytes"] == 48 and site["shapes"] == [[2, 3]]
    assert site["site"].startswith(__file__ + ":") and site["source"].endswith("# the leaking line")
    assert kept


def test_a_site_without_a_line_number_has_no_source():
    memory_lab = page_module("panels/memory_lab", "memory_lab")
    assert memory_lab.source_line("unknown site (call pe.set_debug(True) to record creation sites)") == ""
    assert memory_lab.source_line(f"{__file__}:1").startswith('"""The Python the page')


def test_the_small_model_the_worker_runs_ahead_takes_a_pose_models_path():
    """static/worker/playground_ahead.py's model (the page's worker loads and runs it once idle, on wasm) loads from
    memory, its float16 weights widened, and runs a pose model's ops: an int32 image cast, fused convolutions, a
    hard-swish chain fused into its depthwise convolution, a residual resized back up, a concat and a mean, and an
    argmax over the flattened heatmap; its outputs are its signature's, and nothing is left."""
    from py_engine.models import graph_model

    ahead = page_module("worker", "playground_ahead")
    before = pe.memory().num_tensors
    model = graph_model.from_bytes(*ahead.small_model())
    with pe.scope():
        x = pe.tensor(np.arange(np.prod(ahead.INPUT_SHAPE), dtype=np.int32).reshape(ahead.INPUT_SHAPE) % 256)
        heatmap, pooled, peak = model.execute(x)
        assert [(t.shape, t.dtype) for t in (heatmap, pooled, peak)] == [
            (spec.shape, spec.dtype) for spec in model.outputs
        ]
        assert np.all((heatmap.numpy() > 0) & (heatmap.numpy() < 1)) and np.isfinite(pooled.numpy()).all()
        assert peak.numpy()[0] == np.argmax(heatmap.numpy().reshape(-1))
    (plan,) = model._plans.values()
    assert [(getattr(node, "op", None), node.name) for node, _, _ in plan.steps] == [
        ("Cast", "image"),
        ("_FusedConv2D", "first"),
        ("FusedDepthwiseConv2dNative", "swished"),  # the hard-swish chain, taken into the convolution
        ("_FusedConv2D", "pointwise"),
        ("AddV2", "residual"),
        ("ConcatV2", "joined"),
        ("Mean", "pooled"),
        ("ResizeBilinear", "upsampled"),
        ("Sigmoid", "heatmap"),
        ("Reshape", "flattened"),
        ("ArgMax", "peak"),
    ]
    assert model.weights["w1"].numpy().dtype == np.float32
    model.dispose()
    assert pe.memory().num_tensors == before
