"""The page under failure: the worker's Python heap running out, and a GPU device lost under a loaded classifier."""

from test_classify import classify


def test_running_out_of_python_heap_gives_memoryerror_and_the_page_stays_usable(gpu_page):
    error = gpu_page.page.evaluate(
        """async () => { try { await playground.runPython(`
chunks = []
try:
    while True:
        chunks.append(bytearray(256 * 1024 * 1024))  # until the wasm memory cannot grow
finally:
    n = len(chunks)
    del chunks
`); return null } catch (e) { return e.message } }"""
    )
    assert error and "MemoryError" in error, error
    assert gpu_page.run("n") > 0
    assert gpu_page.run("(pe.tensor([1.0, 2.0]) * 2.0).tolist()") == [2.0, 4.0]


def test_a_device_lost_under_the_loaded_classifier_falls_back_to_numpy_and_still_classifies(gpu_page):
    assert classify(gpu_page, "samples/chelsea.png")[0]["index"] == 285
    gpu_page.run(
        """
        import asyncio
        device = pe.ENGINE.active().device
        device._js.destroy()
        for _ in range(200):
            if device.lost:
                break
            await asyncio.sleep(0.01)
        """
    )
    top = classify(gpu_page, "samples/chelsea.png")
    assert top[0]["index"] == 285
    last = gpu_page.page.evaluate("playground.lastClassification")
    assert last["backend"] == "numpy"
    assert "lost its device" in gpu_page.run("pe.backend_info()['fallback_reason']")


def classify_error(page, expression):
    """The message playground.classify rejects with, for the image `expression` evaluates to in the page."""
    return page.evaluate(
        f"async () => {{ try {{ await playground.classify({expression}); return null }} catch (e) {{ return e.message }} }}"
    )


SVG = "<svg xmlns='http://www.w3.org/2000/svg' width='8' height='8'><rect width='8' height='8' fill='red'/></svg>"


def test_a_missing_image_url_names_the_servers_answer(gpu_page):
    message = classify_error(gpu_page.page, "'samples/no-such-photo.png'")
    assert message and "samples/no-such-photo.png: the server answered 404" in message, message


def test_svg_is_refused_the_same_way_as_a_data_url_and_as_a_blob(gpu_page):
    as_url = classify_error(gpu_page.page, f'"data:image/svg+xml," + encodeURIComponent("{SVG}")')
    as_blob = classify_error(gpu_page.page, f'new Blob(["{SVG}"], {{ type: "image/svg+xml" }})')
    for message in (as_url, as_blob):
        assert message and "SVG images are not supported; use a PNG, JPEG or WebP file" in message, message
