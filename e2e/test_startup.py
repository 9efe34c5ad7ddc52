"""The page's boot path (static/worker.js): the engine wheel unpacked without micropip, and the bytecode cache that
lets a later visit import numpy, py_engine and the page's modules without compiling them again."""

from conftest import BOOT_TIMEOUT_MS, Playground

UNCHECKED_HASH_PYC = 1  # PEP 552 flags word of a .pyc used without looking at its source

IMPORTED = """
import sys
import numpy, py_engine, playground
flags = [int.from_bytes(open(m.__spec__.cached, "rb").read()[4:8], "little") for m in (numpy, py_engine, playground)]
{"micropip": "micropip" in sys.modules, "engine": py_engine.__file__, "flags": flags,
 "sum": (await (pe.tensor([1.0, 2.0, 3.0]) * 2.0).sum().data()).item()}
"""


def stored_bytecode(page):
    """How many .pyc files the page stored after its boot found none cached."""
    page.page.wait_for_function("() => playground.bytecodeCached !== undefined", timeout=BOOT_TIMEOUT_MS)
    stored = page.page.evaluate("playground.bytecodeCached")
    assert isinstance(stored, int) and stored > 0, stored
    return stored


def test_the_engine_installs_without_micropip_and_a_second_visit_imports_the_cached_bytecode(
    webgpu_browser, server_url
):
    context = webgpu_browser.new_context()  # one profile: both visits share its Cache Storage
    try:
        first = Playground(webgpu_browser, server_url, context)
        assert first.info["backend"] == "webgpu" and first.info["bytecode_cached_files"] == 0
        fetched = [r.url for r in first.requests]
        assert not [url for url in fetched if "micropip" in url or "packaging" in url], fetched
        assert len([url for url in fetched if "/engine/" in url]) == 1, fetched
        got = first.run(IMPORTED)
        assert got["micropip"] is False and got["engine"].startswith("/lib/python3.12/site-packages/py_engine/")
        assert got["sum"] == 12.0
        stored = stored_bytecode(first)
        # numpy, py_engine and the page's modules at least, each one .pyc per imported module
        assert stored > 100, stored

        second = Playground(webgpu_browser, server_url, context)
        assert second.info["backend"] == "webgpu" and second.info["bytecode_cached_files"] == stored
        got = second.run(IMPORTED)
        assert got["flags"] == [UNCHECKED_HASH_PYC] * 3 and got["sum"] == 12.0
        assert second.page.evaluate("playground.bytecodeCached") is None  # a boot that found its bytecode stores none
    finally:
        context.close()


def test_a_changed_module_misses_the_cache_and_replaces_the_old_entry(webgpu_browser, server_url):
    context = webgpu_browser.new_context()
    try:
        stored = stored_bytecode(Playground(webgpu_browser, server_url, context))

        def changed(route):
            response = route.fetch()
            route.fulfill(response=response, body=response.text() + "\n# changed: another key\n")

        context.route("**/playground_display.py", changed)
        edited = Playground(webgpu_browser, server_url, context)
        assert edited.info["bytecode_cached_files"] == 0
        assert edited.run(
            "import playground_display\nopen(playground_display.__file__).read().endswith('another key\\n')"
        )
        assert stored_bytecode(edited) == stored
        context.unroute("**/playground_display.py")

        # the edited boot's entry replaced the first one: the original sources miss again, then store theirs
        original = Playground(webgpu_browser, server_url, context)
        assert original.info["bytecode_cached_files"] == 0
        assert stored_bytecode(original) == stored
    finally:
        context.close()
