"""The page, the worker and the JS bridge on real WebGPU: backend report, runPython, readback, device loss."""

import pytest
from playwright.sync_api import Error as PageError


def test_page_reports_webgpu_and_the_adapter(gpu_page):
    info = gpu_page.info
    assert info["backend"] == "webgpu", info["fallback_reason"]
    assert info["fallback_reason"] is None
    adapter = info["adapter"]
    assert adapter["vendor"] and adapter["architecture"], adapter  # SwiftShader here: google / swiftshader
    assert info["warmup_ms"] > 0 and info["timings"]["pyodide_boot_ms"] > 0 and info["ready_ms"] > 0
    status = gpu_page.page.inner_text("#status")
    assert "webgpu" in status and adapter["architecture"] in status and "warm-up" in status
    assert gpu_page.run("pe.get_backend(), pe.backend_info()['architecture']") == ["webgpu", adapter["architecture"]]
    assert not [line for line in gpu_page.console if "Content Security Policy" in line]


def test_run_python_returns_json_able_values(gpu_page):
    got = gpu_page.run(
        """
        x = pe.tensor([[1.0, 2.0], [3.0, 4.0]])
        y = pe.tidy(lambda: (x @ x).sum(axis=0))
        out = {"tensor": y, "int": pe.tensor([1, 2], dtype="int32"), "bool": x > 2.0, "array": np.arange(3.0),
               "scalar": np.float32(0.5), "tuple": (1, "a", None), 7: [1.5]}
        out
        """
    )
    assert got["tensor"] == {"shape": [2], "dtype": "float32", "values": [22.0, 32.0]}
    assert got["int"] == {"shape": [2], "dtype": "int32", "values": [1, 2]}
    assert got["bool"] == {"shape": [2, 2], "dtype": "bool", "values": [[False, False], [True, True]]}
    assert got["array"] == {"shape": [3], "dtype": "float64", "values": [0.0, 1.0, 2.0]}
    assert got["scalar"] == 0.5 and got["tuple"] == [1, "a", None] and got["7"] == [1.5]
    assert gpu_page.run("x.dispose(); x") == {"shape": [2, 2], "dtype": "float32", "disposed": True}
    assert gpu_page.run("names_persist = 41") is None
    assert gpu_page.run("names_persist + 1") == 42


def test_packages_the_boot_leaves_out_load_when_code_imports_them(gpu_page):
    """The boot loads numpy only; micropip and pillow (also served offline) load at the first run importing them."""
    assert gpu_page.run("import sys\n'micropip' in sys.modules or 'PIL' in sys.modules") is False
    got = gpu_page.run(
        """
        import micropip
        from PIL import Image
        [micropip.__name__, Image.new("RGB", (2, 3)).size]
        """
    )
    assert got == ["micropip", [2, 3]]
    with pytest.raises(PageError, match="ModuleNotFoundError: No module named 'networkx'"):
        gpu_page.run("import networkx")  # in Pyodide's lock but not served: the plain import error


def test_a_stop_sent_the_moment_a_run_is_announced_still_stops_it(gpu_page):
    """The page may write SIGINT before Python has begun the run (the worker announces it first): it is kept."""
    assert gpu_page.page.evaluate("self.crossOriginIsolated")
    stopped = gpu_page.page.evaluate(
        """async () => {
          let value = null; // playground.running, with a Stop the instant it becomes a run's id
          Object.defineProperty(playground, "running", { configurable: true, get: () => value,
            set: (id) => { value = id; if (id !== null) playground.stop(); } });
          const notStopped = new Promise((resolve) => setTimeout(() => resolve("not stopped within 20 s"), 20000));
          try {
            return await Promise.race([playground.runPython("while True: pass"), notStopped]);
          } catch (error) {
            return error.message;
          } finally {
            delete playground.running;
            playground.running = value;
          }
        }"""
    )
    assert "KeyboardInterrupt" in stopped
    assert gpu_page.run("1 + 1") == 2


def test_run_python_rejects_with_the_traceback(gpu_page):
    with pytest.raises(PageError, match=r"(?s)Traceback \(most recent call last\).*ShapeError: .*"):
        gpu_page.run("pe.ones((2, 3)) @ pe.ones((2, 3))")
    assert gpu_page.run("1 + 1") == 2  # the worker goes on


def test_sync_readback_works_under_run_python_and_says_what_to_do_elsewhere(gpu_page):
    before = gpu_page.stats()["readbacks"]
    assert gpu_page.run("t = pe.tensor([1.0, 2.0]) * 3.0; t.numpy().tolist()") == [3.0, 6.0]  # JSPI run_sync
    assert gpu_page.stats()["readbacks"] == before + 1
    message = gpu_page.run(
        """
        import js
        from pyodide.ffi import create_proxy

        def read_from_a_sync_js_call(*_):
            try:
                t.data_sync()
            except Exception as e:
                return f"{type(e).__name__}: {e}"

        callback = create_proxy(read_from_a_sync_js_call)
        message = js.Array.of(0).map(callback)[0]  # Array.map calls back into Python synchronously
        callback.destroy()
        message
        """
    )
    assert message.startswith("SyncReadbackError: ") and "await t.data()" in message


def test_device_loss_raises_falls_back_and_a_new_device_works(gpu_page):
    got = gpu_page.run(
        """
        import asyncio
        x = pe.tensor([1.0, 2.0])
        device = pe.ENGINE.active().device
        device._js.destroy()  # GPUDevice.destroy(): the browser resolves device.lost
        for _ in range(200):
            if device.lost:
                break
            await asyncio.sleep(0.01)
        try:
            x + 1.0
            error = None
        except pe.DeviceLostError as e:
            error = str(e)
        after = pe.get_backend(), pe.backend_info()["fallback_reason"]
        x.dispose()
        again = await pe.set_backend("webgpu")
        y = pe.tidy(lambda: pe.tensor([1.0]) + 1.0)
        {"lost": device.lost, "error": error, "after": after, "again": again, "y": await y.data(),
         "gpu_bytes": pe.memory().num_bytes_in_gpu}
        """
    )
    assert got["lost"], "GPUDevice.lost never reached the Python device"
    assert got["error"] and "the GPU device was lost" in got["error"]
    assert got["after"][0] == "numpy" and "lost its device" in got["after"][1]
    assert got["again"] is True and got["y"] == {"shape": [1], "dtype": "float32", "values": [2.0]}
    assert got["gpu_bytes"] == 4
    assert gpu_page.page.evaluate("playground.onDeviceLost")
    assert "lost" in gpu_page.page.inner_text("#notice")


def test_the_ui_runs_code_and_shows_the_result_and_memory(gpu_page):
    page = gpu_page.page
    page.fill("#code", "kept = pe.tensor([[1.0, 2.0], [3.0, 4.0]])\npe.tidy(lambda: (kept @ kept).sum(axis=0))")
    page.click("#run")
    page.wait_for_function("() => document.querySelector('#output').textContent.includes('values')")
    assert '"values": [22, 32]' in page.inner_text("#output")
    page.wait_for_function("() => document.querySelector('#mem-tensors').textContent === '2'")
    assert page.inner_text("#mem-gpu") == "24 B"  # kept (16 B) and the result (8 B)
    page.fill("#code", "undefined_name")
    page.keyboard.press("Control+Enter")  # focus is still in the code box after fill
    page.wait_for_function("() => document.querySelector('#output').classList.contains('error')")
    assert "NameError: name 'undefined_name' is not defined" in page.inner_text("#output")
