// The bytecode a first visit of the page would compile, compiled by the Pyodide the server serves, run in Node
// (app/bytecode.py runs this; Pyodide's Python is not the server's, and bytecode is only valid for the interpreter
// version that wrote it). It boots that Pyodide, installs numpy and the engine wheel as the page's worker does, writes
// the page's modules to /home/pyodide, imports what the worker imports before and right after "ready", and compiles
// as checked hash-based .pyc files (PEP 552: the import compares each with its source's hash and recompiles on a
// mismatch, so bytecode that does not match the sources a page got is never used):
// - every module of the engine wheel and every page module (one not imported at boot may be imported by a run),
// - the modules of site-packages those imports loaded (numpy's),
// - the standard-library modules imported after Pyodide's boot (loadPackage's tarfile and email, json, dataclasses...),
//   from the zip that holds them as sources: as files under STDLIB_BYTECODE, for the page's zip importer
//   (static/worker/startup_cache.js), which compares each with its source's hash as the import system does for the others.
// Writes the archive static/worker/startup_cache.js reads ([u32 index length][index JSON: [[path, size], ...]][files]).
//
// node app/precompile.mjs PYODIDE_DIR WHEEL OUT PAGE_MODULE...
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const STDLIB_BYTECODE = "/lib/python312-bytecode"; // static/worker/startup_cache.js looks there
const [pyodideDir, wheel, out, ...pageModules] = process.argv.slice(2);
// an uncaught error would print the line it came from: pyodide.asm.js's, a megabyte on one line
process.on("uncaughtException", (error) => {
  console.error(error.message);
  process.exit(1);
});
const { loadPyodide } = await import(pathToFileURL(path.join(pyodideDir, "pyodide.mjs")).href);
const pyodide = await loadPyodide({ indexURL: pyodideDir + "/", stdout: () => {}, stderr: () => {} });
pyodide.runPython("import sys; booted = set(sys.modules)"); // imported before the page can put bytecode in place
await pyodide.loadPackage("numpy", { messageCallback: () => {}, errorCallback: (m) => console.error(m) });
const site = pyodide.runPython("import sysconfig; '/' + sysconfig.get_path('purelib').lstrip('/')");
pyodide.unpackArchive(new Uint8Array(fs.readFileSync(wheel)), "zip", { extractDir: site });
for (const file of pageModules) pyodide.FS.writeFile("/home/pyodide/" + path.basename(file), fs.readFileSync(file));

const compiled = pyodide.runPython(`
import _imp, importlib.metadata, importlib.util, marshal, os, py_compile, sys, zipimport
sys.path.insert(0, "/home/pyodide")
# what static/worker.js imports: at boot, then right after "ready" (e2e/test_startup.py checks that a first visit
# found every standard-library module it imported in the archive)
import playground, playground_run
import py_engine.browser, py_engine.models.loading
# ...and what starting the wasm backend imports (reading its module from the wheel, its self-test), which the page
# starts on without WebGPU or on WebGPU on the CPU (static/worker/backend_choice.js, preferredBackend)
from py_engine.backends.wasm import WasmBackend
WasmBackend()

SITE = ${JSON.stringify(site)}
sources = {str(f.locate()) for f in importlib.metadata.files("py_engine") if f.suffix == ".py"}
sources |= {"/home/pyodide/" + os.path.basename(name) for name in ${JSON.stringify(pageModules)}}
sources |= {m.__file__ for m in list(sys.modules.values())
            if (getattr(m, "__file__", None) or "").startswith(SITE + "/") and m.__file__.endswith(".py")}
files = []
for source in sorted(sources):
    target = importlib.util.cache_from_source(source)
    py_compile.compile(source, cfile=target, doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    files.append(target)

# compiled as the zip importer compiles a module: under its path in the zip, its line endings made Unix ones
MAGIC = importlib.util.MAGIC_NUMBER
for name, module in sorted(sys.modules.items()):
    loader = getattr(module, "__loader__", None)
    if name in booted or not isinstance(loader, zipimport.zipimporter):
        continue
    source = loader.get_data(module.__file__)
    text = source.replace(b"\\r\\n", b"\\n").replace(b"\\r", b"\\n")
    code = compile(text, module.__file__, "exec", dont_inherit=True)
    target = f"${STDLIB_BYTECODE}/{module.__file__[len(loader.archive) + 1:]}c"
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "wb") as f:  # a checked hash-based .pyc (PEP 552) of the source in the zip
        f.write(MAGIC + (3).to_bytes(4, "little") + _imp.source_hash(int.from_bytes(MAGIC, "little"), source))
        f.write(marshal.dumps(code))
    files.append(target)
files
`).toJs();

const chunks = compiled.map((file) => pyodide.FS.readFile(file));
const index = new TextEncoder().encode(JSON.stringify(compiled.map((file, i) => [file, chunks[i].length])));
const header = new Uint8Array(4);
new DataView(header.buffer).setUint32(0, index.length, true);
fs.writeFileSync(out, Buffer.concat([header, index, ...chunks]));
console.log(JSON.stringify({ files: compiled.length, python: pyodide.runPython("import sys; sys.version") }));
