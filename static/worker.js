// The Pyodide host: py_engine runs in this dedicated worker, so the page never freezes.
//
// Protocol (structured-clone messages):
//   page -> worker  {id, op: "run", code} | {id, op: "memory"} | {id, op: "stats"} | {id, op: "info"}
//                   | {id, op: "setBackend", name} | {id, op: "loadClassifier"}
//                   | {id, op: "classify", pixels: ArrayBuffer (RGBA, transferred), width, height}
//   worker -> page  {id, ok: true, value} | {id, ok: false, error}    one reply per request
//                   {event: "status", text}       boot progress
//                   {event: "ready", info}         engine started (backend, adapter, fallback_reason, timings)
//                   {event: "failed", error}       boot failed; every request then fails with this error
//                   {event: "memory", value}       pe.memory() after each request
//                   {event: "device-lost", reason} GPUDevice.lost resolved
//                   {event: "classifier-progress", loaded, total}  model weights downloading
// Requests run one at a time in arrival order: a run that awaits (readback) finishes before the
// next request starts, so the page never sees a half-run program.
"use strict";

importScripts("bridge.js");

const backendAtStart = new URL(self.location.href).searchParams.get("backend") || "webgpu";
const timings = {};
let pyodide = null, py = null, userGlobals = null, bootError = null;

function post(message) { self.postMessage(message); }
const progress = (loaded, total) => post({ event: "classifier-progress", loaded, total });

// A Python result (PyProxy or primitive) as plain data; the proxy is released.
function plain(value) {
  if (pyodide && value instanceof pyodide.ffi.PyProxy) {
    try {
      return value.toJs({ dict_converter: Object.fromEntries, create_pyproxies: false });
    } finally {
      value.destroy();
    }
  }
  return value === undefined ? null : value;
}

async function timed(name, work) {
  post({ event: "status", text: name.replace(/_ms$/, "").replaceAll("_", " ") + "..." });
  const start = performance.now();
  const result = await work();
  timings[name] = performance.now() - start;
  return result;
}

async function boot() {
  const config = await (await fetch("config.json", { cache: "no-store" })).json();
  const indexURL = new URL(config.pyodide_index_url, self.location.href).href;
  pyodide = await timed("pyodide_boot_ms", () => {
    importScripts(indexURL + "pyodide.js");
    return loadPyodide({ indexURL });
  });
  await timed("packages_ms", () => pyodide.loadPackage([...new Set(["numpy", "micropip", ...(config.packages || [])])]));
  await timed("engine_install_ms", async () => {
    const micropip = pyodide.pyimport("micropip");
    try {
      await micropip.install(new URL(config.engine_wheel_url, self.location.href).href);
    } finally {
      micropip.destroy();
    }
  });
  self.peBridge.heap = () => pyodide._module.HEAPU8;
  self.peBridge.onLost((reason) => post({ event: "device-lost", reason }));
  const source = await (await fetch("playground.py", { cache: "no-store" })).text();
  pyodide.FS.writeFile("/home/pyodide/playground.py", source);
  py = pyodide.pyimport("playground");
  userGlobals = py.USER_GLOBALS;
  const info = await timed("engine_start_ms", async () => plain(await py.start(backendAtStart)));
  return { ...info, pyodide_version: pyodide.version, timings: { ...timings } };
}

async function handle(message) {
  if (!py) throw new Error("the Python runtime did not start: " + bootError);
  switch (message.op) {
    case "run": {
      const result = await pyodide.runPythonAsync(message.code, { globals: userGlobals, filename: "<playground>" });
      try {
        return plain(await py.to_jsonable(result));
      } finally {
        if (result instanceof pyodide.ffi.PyProxy) result.destroy();
      }
    }
    case "memory": return plain(py.memory());
    case "stats": return plain(py.stats());
    case "info": return plain(py.backend_info());
    case "setBackend": return plain(await py.start(message.name));
    case "loadClassifier": return plain(await py.load_classifier(progress));
    case "classify": {
      const load = plain(await py.load_classifier(progress));
      const result = plain(await py.classify(new Uint8Array(message.pixels), message.height, message.width));
      return { ...result, load };
    }
    default: throw new Error(`unknown request ${JSON.stringify(message.op)}`);
  }
}

const booted = boot().then(
  (info) => post({ event: "ready", info }),
  (error) => {
    bootError = (error && error.message) || String(error);
    post({ event: "failed", error: bootError });
  },
);

const queue = [];
let draining = false;

async function drain() {
  if (draining) return;
  draining = true;
  await booted;
  while (queue.length) {
    const message = queue.shift();
    try {
      post({ id: message.id, ok: true, value: await handle(message) });
    } catch (error) {
      post({ id: message.id, ok: false, error: (error && error.message) || String(error) });
    }
    if (py) {
      try { post({ event: "memory", value: plain(py.memory()) }); } catch (error) { console.error(error); }
    }
  }
  draining = false;
}

self.onmessage = (event) => {
  queue.push(event.data);
  drain();
};
