// Runs Python in the served Pyodide under Node, for tests of what only runs there (the wasm backend) without a
// browser: node run.mjs PYODIDE_DIR ENGINE_WHEEL, then one JSON request a line on stdin ({"code": "..."}); each
// answer is one JSON line on stdout: {"value": <the last expression, as JSON>} or {"error": "<traceback>"}.
// Python's own output goes to stderr, so it cannot break the protocol.
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";
import vm from "node:vm";
import { Worker } from "node:worker_threads";

const [pyodideDir, wheel] = process.argv.slice(2);

// The wasm backend's threads as the page has them (static/worker.js's pyEngineWasmPool): the page's pool script,
// with worker_threads running the page's worker script behind a Web Worker's `self`.
const workerDir = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "static", "worker");
vm.runInThisContext(fs.readFileSync(path.join(workerDir, "wasm_pool.js"), "utf8"));
const workerSource = 'const { parentPort } = require("node:worker_threads");\n' +
  'globalThis.self = { addEventListener: (type, f) => parentPort.once(type, (data) => f({ data })) };\n' +
  `globalThis.importScripts = (name) => require("node:vm").runInThisContext(require("node:fs").readFileSync(${
    JSON.stringify(workerDir)} + "/" + name, "utf8"));\n` +
  fs.readFileSync(path.join(workerDir, "wasm_pool_worker.js"), "utf8");
globalThis.pyEngineWasmPool = (module, workers, heap) => startWasmPool(module, workers, () => {
  const worker = new Worker(workerSource, { eval: true });
  worker.unref(); // a worker waiting for work must not keep Node running once stdin closes
  worker.on("error", (error) => say(`a pool worker stopped: ${error}`)); // the pool notices it; Node must not exit
  return worker;
}, heap);
const { loadPyodide } = await import(pathToFileURL(path.join(pyodideDir, "pyodide.mjs")).href);
const say = (line) => process.stderr.write(line + "\n");
const pyodide = await loadPyodide({ indexURL: pyodideDir + "/", stdout: say, stderr: say });
await pyodide.loadPackage("numpy", { messageCallback: () => {}, errorCallback: say });
const site = pyodide.runPython("import sysconfig; sysconfig.get_path('purelib')");
pyodide.unpackArchive(new Uint8Array(fs.readFileSync(wheel)), "zip", { extractDir: site });
await pyodide.runPythonAsync("import json, py_engine as pe, numpy as np");
process.stdout.write(JSON.stringify({ ready: true }) + "\n");

for await (const line of readline.createInterface({ input: process.stdin })) {
  let answer;
  try {
    const { code } = JSON.parse(line);
    pyodide.globals.set("_request", code);
    const text = await pyodide.runPythonAsync(
      "from pyodide.code import eval_code_async\njson.dumps(await eval_code_async(_request, globals()))",
    );
    answer = { value: JSON.parse(text) };
  } catch (error) {
    answer = { error: String(error.message || error) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
}
