"""The Pyodide packages the server has besides numpy (app/assets.py, PACKAGES), loaded when a run imports them, and
micropip told to say so when it cannot reach PyPI.

The boot loads numpy only. Before a run starts, the packages its code imports are loaded from the server's verified
wheels (offline too: they are the page's own files), with a line in the Output that says what loads, and one that
says how long it took. micropip installs a wheel file from the worker's filesystem
(`await micropip.install("emfs:/home/pyodide/name-1.0-py3-none-any.whl")`) without a network, and from PyPI when the
browser is online; when it cannot reach PyPI it raises an OSError that says the page is offline and how to install a
wheel file instead, rather than a bare "Failed to fetch".
"""

import functools
import time

import js
import pyodide_js
from pyodide.code import find_imports
from pyodide.ffi import to_js

# The import names of the packages the server has (app/assets.py's PACKAGES and what they depend on in
# pyodide-lock.json), and the package each comes in; tests/test_page_python.py checks it against the lock.
ON_DEMAND = {
    "contourpy": "contourpy",
    "cycler": "cycler",
    "dateutil": "python-dateutil",
    "fontTools": "fonttools",
    "jedi": "jedi",
    "joblib": "joblib",
    "kiwisolver": "kiwisolver",
    "matplotlib": "matplotlib",
    "matplotlib_pyodide": "matplotlib-pyodide",
    "micropip": "micropip",
    "mpl_toolkits": "matplotlib",
    "packaging": "packaging",
    "pandas": "pandas",
    "parso": "parso",
    "PIL": "pillow",
    "pylab": "matplotlib",
    "pyparsing": "pyparsing",
    "pytz": "pytz",
    "scipy": "scipy",
    "six": "six",
    "sklearn": "scikit-learn",
    "sqlite3": "sqlite3",
    "_sqlite3": "sqlite3",
    "threadpoolctl": "threadpoolctl",
}
PYPI_HOSTS = "pypi.org and files.pythonhosted.org"
# What a fetch that never reached the server says (Chromium, Firefox, Safari), as micropip passes it on.
NETWORK_FAILURES = ("Failed to fetch", "NetworkError", "Load failed", "Can't fetch metadata")


def note(text):
    """A line in the Output, in order with what the code prints (static/worker.js, peOutput)."""
    js.peOutput(to_js({"stream": "note", "text": text}, dict_converter=js.Object.fromEntries))


def _loaded():
    return set(js.Object.keys(pyodide_js.loadedPackages))


async def load(packages, why):
    """Load `packages` (lock names) and what they depend on, unless loaded; a note before and after in the Output."""
    wanted = sorted(set(packages) - _loaded())
    if not wanted:
        return
    note(f"Loading {', '.join(wanted)} ({why})...")
    before, start, errors = _loaded(), time.perf_counter(), []
    await pyodide_js.loadPackage(to_js(wanted), errorCallback=errors.append, messageCallback=lambda message: None)
    if errors:
        note("Could not load every package: " + "; ".join(errors))
    others = len(_loaded() - before - set(wanted))
    also = f" and {others} package{'s' if others != 1 else ''} they need" if others else ""
    note(f"Loaded {', '.join(wanted)}{also} in {time.perf_counter() - start:.1f} s.")
    if "micropip" in _loaded():
        _explain_offline_installs()


async def load_imported(code):
    """Load the server's packages that `code` imports, before it runs (a syntax error is left to the run to report)."""
    try:
        imported = find_imports(code)
    except SyntaxError:
        return
    await load({ON_DEMAND[name] for name in imported if name in ON_DEMAND}, "first import")


def _is_network_failure(error):
    while error is not None:
        if any(text in str(error) for text in NETWORK_FAILURES):
            return True
        error = error.__cause__ or error.__context__
    return False


def _offline_message():
    online = getattr(js.navigator, "onLine", True)
    where = "the browser is offline" if not online else f"{PYPI_HOSTS} could not be reached"
    return (
        f"micropip could not reach PyPI: {where}. Offline, install a wheel file instead: put it into the worker's "
        'filesystem (e.g. /home/pyodide) and run await micropip.install("emfs:/home/pyodide/NAME-VERSION-py3-none-any.whl")'
    )


def _explain_offline_installs():
    """micropip.install, wrapped once: a failure to reach PyPI raises an OSError that says so."""
    import micropip

    if getattr(micropip.install, "explains_offline", False):
        return
    install = micropip.install

    @functools.wraps(install)
    async def explained(*args, **kwargs):
        try:
            return await install(*args, **kwargs)
        except Exception as e:
            if not _is_network_failure(e):
                raise
            raise OSError(_offline_message()) from None  # the browser's own words ("Failed to fetch") say less

    explained.explains_offline = True
    micropip.install = explained
