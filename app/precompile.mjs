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
// The Python half, importing and compiling, is app/precompile_pyodide.py.
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
// imported before the page can put bytecode in place
const booted = pyodide.runPython("import sys; sorted(sys.modules)").toJs();
await pyodide.loadPackage("numpy", { messageCallback: () => {}, errorCallback: (m) => console.error(m) });
const site = pyodide.runPython("import sysconfig; '/' + sysconfig.get_path('purelib').lstrip('/')");
pyodide.unpackArchive(new Uint8Array(fs.readFileSync(wheel)), "zip", { extractDir: site });
for (const file of pageModules) pyodide.FS.writeFile("/home/pyodide/" + path.basename(file), fs.readFileSync(file));

// the compiling half is Python, run in this Pyodide (app/precompile_pyodide.py)
pyodide.runPython(fs.readFileSync(new URL("precompile_pyodide.py", import.meta.url), "utf8"));
const compileFirstVisit = pyodide.globals.get("compile_first_visit");
const compiled = compileFirstVisit(site, pyodide.toPy(pageModules.map((file) => path.basename(file))), STDLIB_BYTECODE,
  pyodide.toPy(booted)).toJs();

const chunks = compiled.map((file) => pyodide.FS.readFile(file));
const index = new TextEncoder().encode(JSON.stringify(compiled.map((file, i) => [file, chunks[i].length])));
const header = new Uint8Array(4);
new DataView(header.buffer).setUint32(0, index.length, true);
fs.writeFileSync(out, Buffer.concat([header, index, ...chunks]));
console.log(JSON.stringify({ files: compiled.length, python: pyodide.runPython("import sys; sys.version") }));
