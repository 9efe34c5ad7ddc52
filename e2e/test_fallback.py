"""A browser without WebGPU (no --enable-unsafe-webgpu): by itself the page starts on wasm and says why; asked for
webgpu (?backend=webgpu), it runs on numpy and says why.

The memory-model tests run on the numpy page too (test_memory.py, parameter "no-webgpu").
"""

from conftest import Playground


def test_without_webgpu_the_page_starts_on_wasm_and_says_why(plain_browser, server_url, numpy_page):
    page = Playground(plain_browser, server_url, context=numpy_page.context)  # the numpy page's cached files
    try:
        info = page.info
        assert info["backend"] == "wasm" and info["adapter"] is None and info["fallback_reason"] is None, info
        assert "WebGPU found no adapter here" in info["default_reason"], info["default_reason"]
        line = page.page.get_by_role("banner").get_by_role("status").inner_text()
        assert line.startswith("Backend: wasm · ") and info["default_reason"] in line, line
        assert page.run("(pe.tensor([1.0, 2.0]) * 2.0).numpy().tolist()") == [2.0, 4.0]
    finally:
        page.page.close()


def test_asked_for_webgpu_without_webgpu_the_page_falls_back_to_numpy_and_says_why(numpy_page):
    info = numpy_page.info
    assert info["backend"] == "numpy" and info["adapter"] is None
    assert "webgpu" in info["fallback_reason"] and "adapter" in info["fallback_reason"], info["fallback_reason"]
    status = numpy_page.page.inner_text("#status")
    assert "numpy" in status and info["fallback_reason"] in status
    assert numpy_page.page.input_value("#backend") == "numpy"
    assert numpy_page.run("(pe.tensor([1.0, 2.0]) * 2.0).numpy().tolist()") == [2.0, 4.0]


def test_switching_to_webgpu_without_webgpu_keeps_numpy_with_the_reason(numpy_page):
    info = numpy_page.page.evaluate("playground.setBackend('webgpu')")
    assert info["backend"] == "numpy" and "adapter" in info["fallback_reason"]
    assert "numpy" in numpy_page.page.inner_text("#status")
