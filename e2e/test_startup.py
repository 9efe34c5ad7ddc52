"""The page's boot path (static/worker.js, static/startup_cache.js): the engine wheel unpacked without micropip, and
what a boot stores in Cache Storage for the next one (Pyodide's memory snapshot with the standard-library modules the
boot imported, the imported modules' bytecode)."""

from conftest import BOOT_TIMEOUT_MS, Playground
from playwright.sync_api import Error as PageError

UNCHECKED_HASH_PYC = 1  # PEP 552 flags word of a .pyc used without looking at its source

IMPORTED = """
import hashlib, json, random, secrets, sys, urllib.parse
import js, numpy, py_engine, playground
flags = [int.from_bytes(open(m.__spec__.cached, "rb").read()[4:8], "little") for m in (numpy, py_engine, playground)]
{"micropip": "micropip" in sys.modules, "engine": py_engine.__file__, "flags": flags, "random": random.random(),
 "token": secrets.token_hex(8), "stdlib": [hashlib.sha256(b"abc").hexdigest()[:8], json.loads("[1.5]"),
 urllib.parse.quote("a b")], "sum": (await (pe.tensor([1.0, 2.0, 3.0]) * 2.0).sum().data()).item(),
 "fetched": (await js.fetch("config.json")).status}
"""
STDLIB_WORKS = ["ba7816bf", [1.5], "a%20b"]


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
        assert first.info["backend"] == "webgpu"
        assert first.info["pyodide_from_snapshot"] is False and first.info["bytecode_cached_files"] == 0
        # Pyodide's standard library is a zip of sources: loading numpy and the page's imports compile dozens
        assert len(first.info["stdlib_compiled"]) > 10, first.info["stdlib_compiled"]
        assert not [name for name in first.info["stdlib_compiled"] if name.split(".")[0] in ("ctypes", "pyodide")]
        fetched = [r.url for r in first.requests]
        assert not [url for url in fetched if "micropip" in url or "packaging" in url], fetched
        assert len([url for url in fetched if "/engine/" in url]) == 1, fetched
        got = first.run(IMPORTED)
        assert got["micropip"] is False and got["engine"].startswith("/lib/python3.12/site-packages/py_engine/")
        assert got["sum"] == 12.0 and got["fetched"] == 200 and got["stdlib"] == STDLIB_WORKS
        kept = stored(first)
        # numpy, py_engine and the page's modules: one .pyc per imported module; the snapshot is Pyodide's heap
        assert kept["bytecode_files"] > 100 and kept["snapshot_bytes"] > 10_000_000, kept

        later = [Playground(webgpu_browser, server_url, context) for _ in range(2)]
        draws = []
        for page in later:
            assert page.info["backend"] == "webgpu" and page.info["pyodide_from_snapshot"] is True
            assert page.info["bytecode_cached_files"] == kept["bytecode_files"]
            assert page.info["stdlib_compiled"] == []  # the snapshot held every one the first boot compiled
            got = page.run(IMPORTED)
            assert got["flags"] == [UNCHECKED_HASH_PYC] * 3 and got["sum"] == 12.0 and got["fetched"] == 200
            assert got["stdlib"] == STDLIB_WORKS
            assert page.page.evaluate("playground.startupCache") is None  # nothing was missing: nothing stored
            draws.append((got["random"], got["token"]))
        # the snapshot froze random's state: each restore reseeds it (secrets reads the OS each time)
        assert draws[0][0] != draws[1][0] and draws[0][1] != draws[1][1]
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
        assert "xml.dom.minidom" in edited.info["stdlib_compiled"], edited.info["stdlib_compiled"]
        code = "import playground_display\nopen(playground_display.__file__).read().endswith('another key\\n')"
        assert edited.run(code) is True
        # new bytecode, and a snapshot that holds the new standard-library modules too
        assert stored(edited).keys() == {"bytecode_files", "snapshot_bytes"}
        again = Playground(webgpu_browser, server_url, context)
        assert again.info["pyodide_from_snapshot"] is True and again.info["stdlib_compiled"] == []
        assert again.info["bytecode_cached_files"] > 0 and again.run(code) is True
        assert again.page.evaluate("playground.startupCache") is None
        context.unroute("**/playground_display.py")

        # the edited boot's entry replaced the first one: the original sources miss again
        edited.page.evaluate(
            """async () => {
                const cache = await caches.open("pyodide-snapshot-v1");
                for (const key of await cache.keys()) await cache.put(key, new Response(new Uint8Array(64)));
            }"""
        )
        original = Playground(webgpu_browser, server_url, context)
        assert original.info["bytecode_cached_files"] == 0
        assert original.info["pyodide_from_snapshot"] is False  # the broken snapshot was refused, then replaced
        assert stored(original) == kept
        assert original.run("(await (pe.tensor([1.0, 2.0]) * 3.0).sum().data()).item()") == 9.0
    finally:
        context.close()
