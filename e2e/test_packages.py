"""The scientific packages the server has (pandas, matplotlib, scipy, scikit-learn, jedi; app/assets.py), through
accessible roles and names: loaded when a run imports them, with a progress line in the Output; a figure shown as an
image and a DataFrame as a table; micropip with a wheel file and offline; completion from jedi in the editor.

One page for the module, on a high-DPI screen: each package loads once per session (scipy alone is 13 MB)."""

import base64
import json
import re
import struct
import textwrap
import urllib.request

import pytest
from conftest import BOOT_TIMEOUT_MS, RUN_TIMEOUT_S
from playwright.sync_api import expect

from app.assets import PACKAGES, lock_closure

RUN_MS = RUN_TIMEOUT_S * 1000
PIXEL_RATIO = 2

PLOT = """\
import pandas as pd
import matplotlib.pyplot as plt
df = pd.DataFrame({"day": range(100), "price": [i * 1.5 for i in range(100)]})
print("rows", len(df))
plt.plot(df["day"], df["price"])
plt.title("Prices by day")
plt.xlabel("day")
plt.show()
fig, ax = plt.subplots(figsize=(3, 2))
ax.bar(["a", "b"], [1, 2])
ax.set_title("Second figure")
df
"""


@pytest.fixture(scope="module")
def booted(webgpu_browser, server_url):
    """A page of its own (its Output, editor and loaded packages are this module's), at device pixel ratio 2, and
    the URLs the page and its worker requested until it was ready."""
    context = webgpu_browser.new_context(device_scale_factor=PIXEL_RATIO)
    requested = []
    context.on("request", lambda request: requested.append(request.url))
    page = context.new_page()
    page.goto(server_url)
    page.wait_for_function("() => window.playground && playground.state === 'ready'", timeout=BOOT_TIMEOUT_MS)
    page.wait_for_function("() => document.querySelector('#editor').shadowRoot")  # CodeMirror has loaded
    yield page, list(requested)
    context.close()


@pytest.fixture
def page(booted):
    return booted[0]


def run_code(page, code):
    """The editor's code replaced by `code` and run with the Run button; the Output log once the run has ended."""
    page.evaluate("(code) => playground.setCode(code)", textwrap.dedent(code))
    page.get_by_role("status", name="Run state").evaluate("line => { line.textContent = '' }")
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_function(
        "() => /Done in|after/.test(document.querySelector('#run-state').textContent)", timeout=RUN_MS
    )
    return page.get_by_role("log", name="Output")


def run_python(page, code):
    return page.evaluate("(code) => playground.runPython(code)", textwrap.dedent(code))


def png_size(data_url):
    png = base64.b64decode(data_url.split(",", 1)[1])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", png[16:24])


def test_the_boot_loads_none_of_them(booted):
    """Startup is unchanged: the boot fetched numpy's wheel and none of the on-demand packages'."""
    page, requested = booted
    wheels = [url.rsplit("/", 1)[1] for url in requested if url.endswith((".whl", ".zip")) and "/pyodide/" in url]
    assert sorted(wheels) == ["numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl", "python_stdlib.zip"]
    imported = run_python(
        page, "import sys\nsorted(m for m in ('pandas', 'matplotlib', 'scipy', 'jedi') if m in sys.modules)"
    )
    assert imported == []


def test_every_served_package_loads_when_code_imports_any_of_its_names(page, server_url):
    """playground_packages.ON_DEMAND maps each import name of the served packages (but numpy, loaded at boot) to its
    package, as the served pyodide-lock.json says."""
    with urllib.request.urlopen(server_url + "pyodide/pyodide-lock.json") as response:
        lock = json.load(response)["packages"]
    served = lock_closure({"packages": lock}, PACKAGES)
    expected = {name: package for package in served if package != "numpy" for name in lock[package]["imports"]}
    assert run_python(page, "import playground_packages\nplayground_packages.ON_DEMAND") == expected


def test_pandas_and_matplotlib_load_on_import_and_show_a_table_and_figures(page):
    output = run_code(page, PLOT)
    text = output.inner_text()
    # the first import's progress line, then what the code printed
    assert re.search(r"Loading matplotlib, pandas \(first import\)\.\.\.", text), text
    assert re.search(r"Loaded matplotlib, pandas and \d+ packages they need in [\d.]+ s\.", text), text
    assert text.index("Loaded matplotlib") < text.index("rows 100")
    # plt.show()'s figure after the print, then the one still open at the end, each an image named by its title
    first = output.get_by_role("img", name=re.compile(r"^Prices by day \(x: day\)"))
    second = output.get_by_role("img", name="Second figure")
    assert first.count() == 1 and second.count() == 1
    assert text.index("rows 100") < text.index("DataFrame")
    # drawn at the screen's pixel ratio, shown at the figure's size in CSS pixels (6.4 x 4.8 in at 100 dpi)
    src, width, height = first.evaluate("(img) => [img.src, img.getAttribute('width'), img.getAttribute('height')]")
    assert (width, height) == ("640", "480")
    assert png_size(src) == (640 * PIXEL_RATIO, 480 * PIXEL_RATIO)
    # the DataFrame: a table with its column headers, head and tail of its 100 rows around an ellipsis row
    table = output.get_by_role("table", name=re.compile("DataFrame · 100 rows × 2 columns"))
    headers = table.get_by_role("columnheader").all_inner_texts()
    assert headers == ["day", "price"]  # the unnamed index heads nothing
    rows = table.get_by_role("row").all_inner_texts()
    assert len(rows) == 1 + 5 + 1 + 5, rows
    assert rows[1].split() == ["0", "0", "0"] and rows[6] == "…" and rows[-1].split() == ["99", "99", "148.5"]
    assert table.get_by_role("rowheader", name="99").count() == 1


def test_a_second_run_loads_nothing_and_a_series_is_a_table(page):
    output = run_code(page, "import pandas as pd\npd.Series([1.5, None])")
    assert "Loading" not in output.inner_text()
    table = output.get_by_role("table", name=re.compile("Series · 2 rows"))
    assert table.get_by_role("columnheader").all_inner_texts() == ["value"]  # an unnamed Series' one column
    assert table.get_by_role("row").all_inner_texts()[2].split() == ["1", "NaN"]


def test_a_wide_dataframe_shows_its_first_and_last_columns(page):
    node = run_python(
        page,
        """
        import pandas as pd, playground_display
        frame = pd.DataFrame(np.arange(90).reshape(3, 30), columns=[f"c{i}" for i in range(30)])
        frame.index.name = "row"
        await playground_display.describe(frame)
        """,
    )
    assert node["columns"] == [*(f"c{i}" for i in range(10)), "…", *(f"c{i}" for i in range(20, 30))]
    assert node["index_name"] == "row" and node["rows"][2] == {
        "index": "2",
        "cells": [*map(str, range(60, 70)), "…", *map(str, range(80, 90))],
    }


def test_a_figure_as_the_last_value_is_shown_once(page):
    output = run_code(page, 'import matplotlib.pyplot as plt\nfig = plt.figure()\nfig.suptitle("Only once")\nfig')
    assert output.get_by_role("img", name="Only once").count() == 1
    assert run_python(page, "plt.get_fignums()") == []  # shown figures are closed


def test_scipy_and_scikit_learn(page):
    got = run_python(
        page,
        """
        import sqlite3
        from scipy import optimize
        from sklearn.linear_model import LinearRegression
        assert sqlite3.connect(":memory:").execute("select 1 + 1").fetchone() == (2,)
        X = np.arange(10.0).reshape(-1, 1)
        model = LinearRegression().fit(X, 3 * X[:, 0] + 1)
        [float(optimize.minimize_scalar(lambda x: (x - 2) ** 2).x), float(model.coef_[0]), float(model.intercept_)]
        """,
    )
    assert got == pytest.approx([2.0, 3.0, 1.0])


def test_micropip_installs_a_wheel_file_from_the_workers_filesystem(page):
    got = run_python(
        page,
        """
        import micropip, zipfile
        path = "/home/pyodide/hello_wheel-1.0-py3-none-any.whl"
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("hello_wheel/__init__.py", "def hello():\\n    return 'hello from a wheel file'\\n")
            z.writestr("hello_wheel-1.0.dist-info/METADATA", "Metadata-Version: 2.1\\nName: hello-wheel\\nVersion: 1.0\\n")
            z.writestr("hello_wheel-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
            z.writestr("hello_wheel-1.0.dist-info/RECORD", "")
        await micropip.install("emfs:" + path)
        import hello_wheel
        hello_wheel.hello()
        """,
    )
    assert got == "hello from a wheel file"


def test_micropip_offline_says_it_is_offline(page):
    page.context.set_offline(True)
    try:
        output = run_code(page, 'import micropip\nawait micropip.install("snowballstemmer")')
    finally:
        page.context.set_offline(False)
    text = output.inner_text()
    assert "OSError: micropip could not reach PyPI: the browser is offline." in text, text
    assert 'micropip.install("emfs:/home/pyodide/' in text and "Failed to fetch" not in text


def completions(page, code, timeout_ms=60_000):
    """The options the editor's completion list offers at the end of `code` (opened with Ctrl+Space)."""
    page.evaluate("(code) => playground.setCode(code)", code)
    page.get_by_role("textbox", name="Python code").click()
    page.keyboard.press("Control+End")
    page.keyboard.press("Control+Space")
    listbox = page.get_by_role("listbox")
    listbox.wait_for(timeout=timeout_ms)
    options = listbox.get_by_role("option").all_inner_texts()
    page.keyboard.press("Escape")
    return options


def test_completion_from_jedi_offers_tensor_methods_and_pandas_names(page):
    run_python(page, "import pandas as pd\nx = pe.zeros((2, 2))")  # jedi reads the packages a run has loaded
    assert any(option.startswith("relu") for option in completions(page, "x.re")), "relu"
    # read from py_engine/tensor.pyi for a name the code annotates, before any run made it
    assert any(option.startswith("relu6") for option in completions(page, "y: pe.Tensor = make()\ny.rel"))
    assert any(option.startswith("read_csv") for option in completions(page, "import pandas as pd\npd.read_c"))


def test_signature_help_shows_the_call_being_typed(page):
    page.evaluate("(code) => playground.setCode(code)", "")
    page.get_by_role("textbox", name="Python code").click()
    page.keyboard.type("pe.relu(")
    tip = page.get_by_role("tooltip")
    tip.wait_for(timeout=30_000)
    assert tip.inner_text() == "relu(x)"
    page.keyboard.press("Escape")
    assert tip.count() == 0
    page.keyboard.press("Control+End")
    page.keyboard.type("\npe.conv2d(x, ")  # after the comma, the parameter being typed is in bold
    tip.wait_for(timeout=30_000)
    expect(tip.locator("strong")).to_have_text("filter")  # once the answer for the comma has replaced the one for "("
    assert tip.inner_text().startswith("conv2d(x, filter, strides=1")


def test_completion_answers_nothing_at_once_while_code_runs(page):
    """A run in progress (here at an await) is not waited for: the list stays closed, the run goes on, and no answer
    shows up once it has ended."""
    page.evaluate("(code) => playground.setCode(code)", "import asyncio\nawait asyncio.sleep(3)\npd.read_c")
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_function("() => playground.running !== null")
    page.get_by_role("textbox", name="Python code").click()
    page.keyboard.press("Control+End")
    page.keyboard.press("Control+Space")
    page.wait_for_timeout(500)
    assert page.get_by_role("listbox").count() == 0
    assert page.evaluate("playground.running") is not None  # the run was not held up
    page.evaluate("playground.idle()")
    page.wait_for_timeout(1000)
    assert page.get_by_role("listbox").count() == 0  # no answer was waiting for the run to end either
