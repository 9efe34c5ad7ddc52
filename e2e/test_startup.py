"""The page's boot path (static/worker.js, static/worker/startup_cache.js): the engine wheel unpacked without micropip, the
server's bytecode for a first visit (app/bytecode.py), and what a boot stores in Cache Storage for the next one
(Pyodide's memory snapshot with the standard-library modules the boot imported, the imported modules' bytecode, the
files numpy and the engine installed)."""

import _imp
import json
import time
import urllib.request
import zipfile

from conftest import BOOT_TIMEOUT_MS, REPO, Playground
from playwright.sync_api import Error as PageError

from app.assets import pyodide_dir
from app.bytecode import page_modules
from app.settings import Settings

UNCHECKED_HASH_PYC = 1  # PEP 552 flags word of a .pyc used without looking at its source
CHECKED_HASH_PYC = 3  # a .pyc used only while its source has the hash it records
PYTHON_312_MAGIC = (3531).to_bytes(2, "little") + b"\r\n"
SITE_PACKAGES = "/lib/python3.12/site-packages/"
STDLIB_BYTECODE = "/lib/python312-bytecode/"  # where the page's zip importer looks for the standard library's
# A standard-library module no boot imports, given a .pyc of other code: used only with its source's hash
PYC_CHECKED = """
import _imp, importlib.util, marshal, sys
loader = sys.path_importer_cache[next(p for p in sys.path if p.endswith(".zip"))]
magic = importlib.util.MAGIC_NUMBER
source_hash = _imp.source_hash(int.from_bytes(magic, "little"), loader.get_data(loader.archive + "/colorsys.py"))
code = marshal.dumps(compile("FROM = 'the pyc'", loader.archive + "/colorsys.py", "exec"))
def write(hash_):
    with open("/lib/python312-bytecode/colorsys.pyc", "wb") as f:
        f.write(magic + (3).to_bytes(4, "little") + hash_ + code)
write(bytes(8))  # not its source's hash: compiled from the zip's source
import colorsys
compiled = hasattr(colorsys, "rgb_to_hsv") and not hasattr(colorsys, "FROM")
del sys.modules["colorsys"]
write(source_hash)
import colorsys
import dataclasses, inspect  # imported at boot, its code from the server's .pyc; its source still the zip's
[type(loader).__name__, compiled, getattr(colorsys, "FROM", None), type(dataclasses.__loader__).__name__,
 dataclasses.__file__, "def dataclass(" in inspect.getsource(dataclasses)]
"""

IMPORTED = """
import hashlib, importlib.metadata, json, random, secrets, sys, urllib.parse
import js, numpy, py_engine, playground, pyodide_js
flags = [int.from_bytes(open(m.__spec__.cached, "rb").read()[4:8], "little") for m in (numpy, py_engine, playground)]
{"micropip": "micropip" in sys.modules, "engine": py_engine.__file__, "flags": flags, "random": random.random(),
 "token": secrets.token_hex(8), "stdlib": [hashlib.sha256(b"abc").hexdigest()[:8], json.loads("[1.5]"),
 urllib.parse.quote("a b")], "sum": (await (pe.tensor([1.0, 2.0, 3.0]) * 2.0).sum().data()).item(),
 "fetched": (await js.fetch("config.json")).status, "numpy": NUMPY_WORKS}
"""
# numpy's wasm modules besides the core one (linalg, fft, random), its metadata, and Pyodide's record of it
NUMPY_CHECK = """[float(numpy.linalg.det(numpy.eye(2) * 2)), numpy.fft.fft([1.0, 0.0]).real.tolist(),
  int(numpy.random.default_rng(7).integers(10**6)) == int(numpy.random.default_rng(7).integers(10**6)),
  importlib.metadata.version("numpy") == numpy.__version__, pyodide_js.loadedPackages.numpy]"""
IMPORTED = IMPORTED.replace("NUMPY_WORKS", NUMPY_CHECK)
NUMPY_WORKS = [4.0, [1.0, 1.0], True, True, "default channel"]
STDLIB_WORKS = ["ba7816bf", [1.5], "a%20b"]
# Rewrites the stored site-packages as if a numpy wheel with another sha256 had installed them (with a correct
# SHA-256 of the entry, so only the staleness check can refuse it)
ANOTHER_NUMPY = """async () => {
    const cache = await caches.open("py-installed-v1");
    for (const key of await cache.keys()) {
        const bytes = new Uint8Array(await (await cache.match(key)).arrayBuffer());
        const indexLength = new DataView(bytes.buffer).getUint32(0, true);
        const index = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + indexLength)));
        index.packages.numpy.sha256 = "0".repeat(64);
        const json = new TextEncoder().encode(JSON.stringify(index));
        const entry = new Uint8Array(4 + json.length + bytes.length - 4 - indexLength);
        new DataView(entry.buffer).setUint32(0, json.length, true);
        entry.set(json, 4);
        entry.set(bytes.subarray(4 + indexLength), 4 + json.length);
        const digest = [...new Uint8Array(await crypto.subtle.digest("SHA-256", entry))]
            .map((b) => b.toString(16).padStart(2, "0")).join("");
        await cache.put(key, new Response(entry, { headers: { "X-Content-SHA256": digest } }));
    }
}"""
# numpy's wasm modules loaded so far (static/worker/startup_cache.js loads those the last boot's imports needed), and whether
# numpy.random is imported; evaluated in the page's worker, so that it is no request (the worker imports numpy.random
# once no request has run for 3 s)
NUMPY_LOADED = f"""[Object.keys(pyodide._module.LDSO.loadedLibsByName).filter((lib) => lib.startsWith("{SITE_PACKAGES}numpy/"))
   .map((lib) => lib.split("/").pop().split(".")[0]).sort(),
   pyodide.runPython("import sys; 'numpy.random' in sys.modules")]"""
# Marks the stored bytecode as compiled by another Pyodide (its key does not hold the version: the entry does)
ANOTHER_PYODIDE = """async () => {
    const cache = await caches.open("py-bytecode-v1");
    for (const key of await cache.keys()) {
        const response = await cache.match(key);
        const headers = new Headers(response.headers);
        headers.set("X-Pyodide-Version", "0.0.0");
        await cache.put(key, new Response(await response.arrayBuffer(), { headers }));
    }
}"""


def poll(check, timeout_s):
    """Whether check() became true within timeout_s."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def numpy_random_waits_for_idle(page):
    """A boot from stored site-packages loads only the wasm modules of numpy's boot imports; numpy.random's 9 wait for
    its import, which the worker makes once idle."""
    worker = next(w for w in page.page.workers if "/worker.js" in w.url)
    assert worker.evaluate(NUMPY_LOADED) == [["_multiarray_tests", "_multiarray_umath", "_umath_linalg"], False]
    assert poll(lambda: worker.evaluate(NUMPY_LOADED)[1], timeout_s=20), worker.evaluate(NUMPY_LOADED)
    assert "_mt19937" in worker.evaluate(NUMPY_LOADED)[0]


def stored(page):
    """What the page stored for the next boot (it stores once its boot found something missing from the cache)."""
    try:
        page.page.wait_for_function("() => playground.startupCache !== undefined", timeout=BOOT_TIMEOUT_MS)
    except PageError as e:
        raise AssertionError(f"the page stored nothing: {e}\n" + "\n".join(page.console[-20:])) from None
    return page.page.evaluate("playground.startupCache")


def test_a_first_visit_installs_without_micropip_and_later_ones_boot_from_its_snapshot_and_bytecode(
    webgpu_browser, server_url
):
    context = webgpu_browser.new_context()  # one profile: the visits share its Cache Storage
    try:
        first = Playground(webgpu_browser, server_url, context)
        assert first.info["backend"] == "wasm"  # as a visitor's page starts on SwiftShader: its module is in the wheel
        assert first.info["pyodide_from_snapshot"] is False and first.info["bytecode_cached_files"] == 0
        # compiled ahead by the server: numpy's, the engine's, the page's and the standard library's modules
        assert first.info["bytecode_served_files"] > 200, first.info["bytecode_served_files"]
        assert first.info["installed_cached_files"] == 0
        # Pyodide's standard library is a zip of sources: loading numpy and the page's imports take dozens from it
        assert len(first.info["stdlib_compiled"]) > 10, first.info["stdlib_compiled"]
        assert not [name for name in first.info["stdlib_compiled"] if name.split(".")[0] in ("ctypes", "pyodide")]
        # ...each of them from the server's bytecode: app/precompile.mjs still imports what the worker does
        served = served_bytecode(server_url).keys()
        paths = {
            name: {STDLIB_BYTECODE + name.replace(".", "/") + end for end in (".py", "/__init__.py")}
            for name in first.info["stdlib_compiled"]
        }
        assert not [name for name, path in paths.items() if not path & served], first.info["stdlib_compiled"]
        fetched = [r.url for r in first.requests]
        assert not [url for url in fetched if "micropip" in url or "packaging" in url], fetched
        assert len([url for url in fetched if "/engine/" in url]) == 1, fetched
        assert len([url for url in fetched if "/bytecode/" in url]) == 1, fetched
        # numpy's wheel, downloaded while Pyodide booted and handed to loadPackage (static/worker/prefetch.js), and the lock
        # file, read by the prefetch and Pyodide's boot: once each
        assert len([url for url in fetched if "/numpy-" in url]) == 1, fetched
        assert len([url for url in fetched if url.endswith("/pyodide-lock.json")]) == 1, fetched
        # ...asked for before Pyodide had booted (the classifier's files download from then on)
        wheel_at = next(i for i, url in enumerate(fetched) if "/numpy-" in url)
        assert wheel_at < next(i for i, url in enumerate(fetched) if url.endswith("/model.json")), fetched
        assert not [line for line in first.console if "could not be prefetched" in line], first.console
        # the runtime and the bytecode came as the server's gzip copies (app/compression.py), decoded by the browser
        for part in ("/pyodide/pyodide.asm.wasm", "/pyodide/pyodide.asm.js", "/bytecode/"):
            encodings = [r.response().headers.get("content-encoding") for r in first.requests if part in r.url]
            assert encodings and set(encodings) == {"gzip"}, (part, encodings)
        got = first.run(IMPORTED)
        assert got["micropip"] is False and got["engine"].startswith("/lib/python3.12/site-packages/py_engine/")
        assert got["flags"] == [CHECKED_HASH_PYC] * 3  # the server's files were used, not compiled again
        assert first.run(PYC_CHECKED) == [
            *("PrecompiledStdlib", True, "the pyc"),
            *("PrecompiledStdlib", "/lib/python312.zip/dataclasses.py", True),
        ]
        assert got["sum"] == 12.0 and got["fetched"] == 200 and got["stdlib"] == STDLIB_WORKS
        assert got["numpy"] == NUMPY_WORKS
        kept = stored(first)
        # numpy, py_engine and the page's modules: one .pyc per imported module; the snapshot is Pyodide's heap;
        # site-packages: numpy's and the engine's files
        assert kept["bytecode_files"] > 100 and kept["snapshot_bytes"] > 10_000_000, kept
        assert kept["installed_files"] > 300, kept

        later = [Playground(webgpu_browser, server_url, context)]
        numpy_random_waits_for_idle(later[0])  # at once: while the next page boots, this one would go idle
        later.append(Playground(webgpu_browser, server_url, context))
        draws = []
        for page in later:
            assert page.info["backend"] == "wasm" and page.info["pyodide_from_snapshot"] is True
            assert page.info["bytecode_cached_files"] == kept["bytecode_files"]
            assert page.info["bytecode_served_files"] == 0 and not [r for r in page.requests if "/bytecode/" in r.url]
            assert page.info["installed_cached_files"] == kept["installed_files"]
            assert page.info["stdlib_compiled"] == []  # the snapshot held every one the first boot compiled
            assert not [r.url for r in page.requests if "/numpy-" in r.url]  # numpy came from the stored files
            got = page.run(IMPORTED)
            assert got["flags"] == [UNCHECKED_HASH_PYC] * 3 and got["sum"] == 12.0 and got["fetched"] == 200
            assert got["stdlib"] == STDLIB_WORKS and got["numpy"] == NUMPY_WORKS
            assert page.page.evaluate("playground.startupCache") is None  # nothing was missing: nothing stored
            draws.append((got["random"], got["token"]))
        # the snapshot froze random's state: each restore reseeds it (secrets reads the OS each time)
        assert draws[0][0] != draws[1][0] and draws[0][1] != draws[1][1]

        later[-1].page.evaluate(ANOTHER_NUMPY)
        later[-1].page.evaluate(ANOTHER_PYODIDE)
        stale = Playground(webgpu_browser, server_url, context)
        assert stale.info["installed_cached_files"] == 0  # numpy's wheel is not the one the files came from
        assert stale.info["bytecode_cached_files"] == 0  # nor is this Pyodide the one that compiled the bytecode
        assert stale.run(IMPORTED)["numpy"] == NUMPY_WORKS
        assert stored(stale) == {key: kept[key] for key in ("installed_files", "bytecode_files")}
    finally:
        context.close()


def test_a_changed_module_misses_the_bytecode_and_a_broken_snapshot_is_replaced(webgpu_browser, server_url):
    context = webgpu_browser.new_context()
    try:
        kept = stored(Playground(webgpu_browser, server_url, context))

        def changed(route):  # a module that imports one more standard-library package
            response = route.fetch()
            route.fulfill(
                response=response, body=response.text() + "\nimport xml.dom.minidom  # changed: another key\n"
            )

        context.route("**/playground_display.py", changed)
        edited = Playground(webgpu_browser, server_url, context)
        assert edited.info["pyodide_from_snapshot"] is True and edited.info["bytecode_cached_files"] == 0
        # the server's bytecode is for the original module: its .pyc fails the hash check, the edit is compiled
        assert edited.info["bytecode_served_files"] > 200
        assert "xml.dom.minidom" in edited.info["stdlib_compiled"], edited.info["stdlib_compiled"]
        code = "import playground_display\nopen(playground_display.__file__).read().endswith('another key\\n')"
        assert edited.run(code) is True
        # new bytecode, and a snapshot that holds the new standard-library modules too
        assert stored(edited).keys() >= {"bytecode_files", "snapshot_bytes"}
        again = Playground(webgpu_browser, server_url, context)
        assert again.info["pyodide_from_snapshot"] is True and again.info["stdlib_compiled"] == []
        assert again.info["bytecode_cached_files"] > 0 and again.run(code) is True
        assert again.page.evaluate("playground.startupCache") is None
        context.unroute("**/playground_display.py")

        # the edited boot's entry replaced the first one: the original sources miss again; the snapshot is broken
        # and one byte of the stored site-packages flipped (their headers and SHA-256 kept)
        edited.page.evaluate(
            """async () => {
                const cache = await caches.open("pyodide-snapshot-v1");
                for (const key of await cache.keys()) await cache.put(key, new Response(new Uint8Array(64)));
                const installed = await caches.open("py-installed-v1");
                for (const key of await installed.keys()) {
                    const response = await installed.match(key);
                    const bytes = new Uint8Array(await response.arrayBuffer());
                    bytes[bytes.length - 1] ^= 1;
                    await installed.put(key, new Response(bytes, { headers: response.headers }));
                }
            }"""
        )
        original = Playground(webgpu_browser, server_url, context)
        assert original.info["bytecode_cached_files"] == 0
        assert original.info["pyodide_from_snapshot"] is False  # the broken snapshot was refused, then replaced
        assert original.info["installed_cached_files"] == 0  # so were the corrupt site-packages
        again_stored = stored(original)
        assert again_stored.keys() == kept.keys() and again_stored["snapshot_bytes"] > 10_000_000
        assert [again_stored[k] for k in ("bytecode_files", "installed_files")] == [
            kept[k] for k in ("bytecode_files", "installed_files")
        ]
        assert original.run("(await (pe.tensor([1.0, 2.0]) * 3.0).sum().data()).item()") == 9.0
    finally:
        context.close()


def served_bytecode(server_url):
    """{the path of a module's source in the page: its .pyc} of the first-visit bytecode the server names."""
    with urllib.request.urlopen(server_url + "config.json") as r:
        named = json.load(r)["bytecode"]
    assert named is not None, "the server built no first-visit bytecode (it needs Node.js)"
    with urllib.request.urlopen(server_url + named["url"].lstrip("/")) as r:
        archive = r.read()
    length = int.from_bytes(archive[:4], "little")
    index, offset = json.loads(archive[4 : 4 + length]), 4 + length
    served = {}
    for path, size in index:
        source = path.replace("/__pycache__/", "/").replace(".cpython-312.pyc", ".py").removesuffix("c")
        served[source], offset = archive[offset : offset + size], offset + size
    assert offset == len(archive)
    return served


def test_the_servers_bytecode_is_each_served_modules_own_and_a_corrupt_archive_is_refused(webgpu_browser, server_url):
    compiled = served_bytecode(server_url)
    numpy_wheel = next(pyodide_dir(Settings().assets_dir).glob("numpy-*.whl"))
    with zipfile.ZipFile(numpy_wheel) as numpy_files:
        sources = {SITE_PACKAGES + name: numpy_files.read(name) for name in numpy_files.namelist()}
    sources |= {SITE_PACKAGES + str(p.relative_to(REPO)): p.read_bytes() for p in (REPO / "py_engine").rglob("*.py")}
    sources |= {"/home/pyodide/" + p.name: p.read_bytes() for p in page_modules(REPO / "static")}
    with zipfile.ZipFile(pyodide_dir(Settings().assets_dir) / "python_stdlib.zip") as stdlib:
        sources |= {STDLIB_BYTECODE + name: stdlib.read(name) for name in stdlib.namelist() if name.endswith(".py")}
    for source, pyc in compiled.items():
        assert pyc[:4] == PYTHON_312_MAGIC and int.from_bytes(pyc[4:8], "little") == CHECKED_HASH_PYC, source
        # the hash Python 3.12 compares with the source's (the same function in this CPython)
        assert pyc[8:16] == _imp.source_hash(int.from_bytes(PYTHON_312_MAGIC, "little"), sources[source]), source
    engine = {p for p in sources if p.startswith(SITE_PACKAGES + "py_engine/")}
    assert engine <= compiled.keys() and {p for p in sources if p.startswith("/home/")} <= compiled.keys()
    assert SITE_PACKAGES + "numpy/__init__.py" in compiled and SITE_PACKAGES + "numpy/linalg/linalg.py" in compiled
    # the standard library's modules imported after Pyodide's boot: loadPackage's, the engine's
    assert {STDLIB_BYTECODE + name for name in ("tarfile.py", "email/__init__.py", "dataclasses.py")} <= compiled.keys()

    context = webgpu_browser.new_context()
    try:

        def flipped(route):  # one byte of the archive flipped: not the file config.json named
            body = bytearray(route.fetch().body())
            body[-1] ^= 1
            route.fulfill(status=200, body=bytes(body), headers={"Content-Type": "application/octet-stream"})

        context.route("**/bytecode/**", flipped)
        page = Playground(webgpu_browser, server_url, context)
        assert page.info["bytecode_served_files"] == 0 and page.info["bytecode_cached_files"] == 0
        assert [r.url for r in page.requests if "/bytecode/" in r.url]  # it was fetched, then refused
        assert page.run("(await (pe.tensor([1.0, 2.0]) * 3.0).sum().data()).item()") == 9.0
    finally:
        context.close()
