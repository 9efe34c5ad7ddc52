"""Run by app/precompile.mjs inside the Pyodide the server serves (Pyodide's Python, not the server's): imports what
the page's worker imports and compiles the bytecode of a first visit. precompile.mjs runs this file, then calls
`compile_first_visit`; it is no module of the server's."""

import _imp
import importlib
import importlib.metadata
import importlib.util
import marshal
import os
import py_compile
import sys
import zipimport

# what static/worker.js imports: at boot, then right after "ready" (e2e/test_startup.py checks that a first visit
# found every standard-library module it imported in the archive)
WORKER_IMPORTS = ["playground", "playground_run", "py_engine.browser", "py_engine.models.loading"]


def import_as_the_worker() -> None:
    sys.path.insert(0, "/home/pyodide")
    for name in WORKER_IMPORTS:
        importlib.import_module(name)
    # ...and what starting the wasm backend imports (reading its module from the wheel, its self-test), which the page
    # starts on without WebGPU or on WebGPU on the CPU (static/worker/backend_choice.js, preferredBackend)
    from py_engine.backends.wasm import WasmBackend

    WasmBackend()


def compile_first_visit(site: str, page_modules: list[str], stdlib_bytecode: str, booted: list[str]) -> list[str]:
    """The .pyc files a first visit would write, as paths in Pyodide's file system: checked hash-based ones (PEP 552)
    of the engine wheel's modules, the page's (`page_modules`, in /home/pyodide) and the site-packages modules the
    imports loaded; and, under `stdlib_bytecode`, those of the standard-library modules imported since Pyodide's boot
    (not in `booted`) from the zip that holds them as sources, for the page's zip importer."""
    import_as_the_worker()
    at_boot = set(booted)
    sources = {str(f.locate()) for f in importlib.metadata.files("py_engine") if f.suffix == ".py"}
    sources |= {"/home/pyodide/" + name for name in page_modules}
    sources |= {
        m.__file__
        for m in list(sys.modules.values())
        if (getattr(m, "__file__", None) or "").startswith(site + "/") and m.__file__.endswith(".py")
    }
    files = []
    for source in sorted(sources):
        target = importlib.util.cache_from_source(source)
        py_compile.compile(
            source, cfile=target, doraise=True, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH
        )
        files.append(target)

    # compiled as the zip importer compiles a module: under its path in the zip, its line endings made Unix ones
    magic = importlib.util.MAGIC_NUMBER
    for name, module in sorted(sys.modules.items()):
        loader = getattr(module, "__loader__", None)
        if name in at_boot or not isinstance(loader, zipimport.zipimporter):
            continue
        source = loader.get_data(module.__file__)
        text = source.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        code = compile(text, module.__file__, "exec", dont_inherit=True)
        target = f"{stdlib_bytecode}/{module.__file__[len(loader.archive) + 1 :]}c"
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:  # a checked hash-based .pyc (PEP 552) of the source in the zip
            f.write(magic + (3).to_bytes(4, "little") + _imp.source_hash(int.from_bytes(magic, "little"), source))
            f.write(marshal.dumps(code))
        files.append(target)
    return files
