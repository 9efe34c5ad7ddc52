"""The Python half of static/worker/startup_cache.js: what the worker's boot asks of Pyodide's Python to restore and pack
the browser's cache entries (the memory snapshot, the bytecode, site-packages).

The worker imports it right after Pyodide has booted, before the bytecode is in place, so every import of the
standard library sits inside the function that needs it: a module imported here at the top would be compiled from
source on every boot, and the boot's standard-library modules would no longer be those it imports by itself.
"""

import sys

# The standard library's bytecode from the server (app/precompile.mjs writes one .pyc per module here).
STDLIB_BYTECODE = "/lib/python312-bytecode"
# The page's modules (static/worker/*.py, static/panels/*/*.py): the worker writes them here, beside Python's working folder.
PAGE_FOLDER = "/home/pyodide"
# Pyodide's own modules may hold JS objects (state outside the wasm heap) and ctypes opens the main program with
# dlopen and makes C callbacks when imported: a memory snapshot can hold neither.
NOT_IN_SNAPSHOTS = ("ctypes", "pyodide", "_pyodide")


def site_packages() -> str:
    """Where packages install; Pyodide's purelib path starts with "//", which names the same folder but not as the
    prefix of module paths."""
    import sysconfig

    return "/" + sysconfig.get_path("purelib").lstrip("/")


def write_bytecode() -> None:
    """Let imports write their .pyc files (Pyodide's default is not to), which pack_bytecode stores."""
    sys.dont_write_bytecode = False


def reseed_random() -> None:
    """A restored snapshot froze `random`'s state: seed it from the OS again."""
    import random

    random.seed()


def stdlib_from_zip() -> list[str]:
    """The modules imported so far from the standard library's zip, but those a memory snapshot cannot hold."""
    import zipimport

    return [
        name
        for name, module in list(sys.modules.items())
        if isinstance(getattr(module, "__loader__", None), zipimport.zipimporter)
        and name.partition(".")[0] not in NOT_IN_SNAPSHOTS
    ]


def preload_for_snapshot(names: str) -> None:
    """Import the standard-library modules a snapshot is to hold (`names`, space-separated: a str, since a JS object
    handed to Python could not be in a snapshot; one that fails to import is left out), then forget this module, so
    that a boot from the snapshot imports the page's current file."""
    import contextlib
    import importlib

    for name in names.split():
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    sys.modules.pop(__name__, None)


def imported_extensions() -> list[str]:
    """The files of the extension modules imported so far (wasm modules, each loaded as a dynamic library)."""
    return [
        file
        for module in list(sys.modules.values())
        if (file := getattr(module, "__file__", None) or "").endswith(".so")
    ]


def forget_listings() -> None:
    """After files were written under sys.path: the import system's folder listings and importlib.metadata's caches
    are stale. (importlib.invalidate_caches(), what loadPackage calls, also rereads the standard library's zip
    directory: 50-65 ms here.)"""
    import importlib.machinery
    import importlib.metadata

    for finder in list(sys.path_importer_cache.values()):
        if isinstance(finder, importlib.machinery.FileFinder):
            finder.invalidate_caches()
    importlib.metadata.MetadataPathFinder.invalidate_caches()


def pack_bytecode(site: str) -> tuple[bytes, bytes]:
    """The .pyc files of the modules imported from site-packages and the page's folder: a JSON index of [path, size]
    and their bytes, each marked "unchecked hash-based" (PEP 552: used without comparing them with their source)."""
    import json
    import os

    roots = (site + "/", PAGE_FOLDER + "/")
    index, chunks = [], []
    for module in list(sys.modules.values()):
        cached = getattr(module, "__cached__", None)
        if isinstance(cached, str) and cached.startswith(roots) and os.path.isfile(cached):
            with open(cached, "rb") as f:
                data = bytearray(f.read())
            data[4:8] = (1).to_bytes(4, "little")  # flags: hash-based, unchecked (PEP 552)
            index.append([cached, len(data)])
            chunks.append(bytes(data))
    return json.dumps(index).encode(), b"".join(chunks)


def use_precompiled_stdlib(bytecode_folder: str = STDLIB_BYTECODE) -> None:
    """Give the standard library's zip importer the server's bytecode for its modules: a module's code comes from its
    .pyc when that holds the hash of the module's source in the zip, else from compiling the source, as before.
    Modules keep the zip as their loader's archive and their file, so tracebacks show their source."""
    import importlib.util  # now, before the importer below serves imports: it comes from the zip itself
    import zipimport

    magic = importlib.util.MAGIC_NUMBER

    class PrecompiledStdlib(zipimport.zipimporter):
        def get_code(self, fullname):
            code = precompiled_code(self, fullname, bytecode_folder, magic)
            return super().get_code(fullname) if code is None else code

    for path in sys.path:
        if path.endswith(".zip") and isinstance(sys.path_importer_cache.get(path), zipimport.zipimporter):
            sys.path_importer_cache[path] = PrecompiledStdlib(path)


def precompiled_code(importer, fullname: str, bytecode_folder: str, magic: bytes):
    """The code of `fullname` from its .pyc under `bytecode_folder` if that was compiled from the importer's source
    of it by this Python (a checked hash-based .pyc, PEP 552, with the `magic` of importlib.util); None when there is
    none or it is stale."""
    import _imp
    import marshal

    relative = fullname.replace(".", "/") + ("/__init__.py" if importer.is_package(fullname) else ".py")
    try:
        with open(f"{bytecode_folder}/{relative}c", "rb") as f:
            pyc = f.read()
    except OSError:
        return None
    source = importer.get_data(f"{importer.archive}/{relative}")
    if pyc[:4] != magic or pyc[8:16] != _imp.source_hash(int.from_bytes(magic, "little"), source):
        return None
    return marshal.loads(memoryview(pyc)[16:])
