// The Pyodide host: py_engine runs in this dedicated worker, so the page never freezes.
//
// Protocol (structured-clone messages):
//   page -> worker  {op: "interrupt", buffer: Int32Array, input: SharedArrayBuffer}   once, first: Pyodide's
//                                         interrupt buffer, and the channel input() reads a line from (INPUT below);
//                                         shared memory: only a cross-origin-isolated page has them
//                   {op: "stop", id}      the page wrote SIGINT into the buffer (and "stopped" into the input
//                                         channel) to stop run `id`; handled at once
//                   {id, op: "run", code} runPython: the last value as plain data (playground_display.to_jsonable)
//                   {id, op: "exec", code} the Run button: {ok, value: describe() tree | error: {type, message,
//                                         traceback, line}} (see playground_run.py and playground_display.py)
//                   | {id, op: "memory"} | {id, op: "stats"} | {id, op: "info"} | {id, op: "clearNamespace"}
//                   | {id, op: "setBackend", name}
//                   | {id, op: "files.list" | "files.upload" | ...}  the user's files: static/panels/files/files_worker.js
//                   | {id, op: "complete", code, offset}  the editor's completion: {from, items, signatures}
//                                         (playground_completion.py), or null while a request is in progress;
//                                         answered beside the queue, never after a run
//                   | {id, op: "PANEL.ACTION", script, ...}  a panel's request, answered by its worker script
//                                         (`script`, loaded on the first): each static/panels/NAME/NAME_worker.js
//                                         lists its panel's
//   worker -> page  {id, ok: true, value} | {id, ok: false, error}    one reply per request
//                   {event: "status", text, phase, downloaded}  boot progress: the phase (as worker.js's
//                                                  timed() names it, without _ms) and the bytes the boot took from
//                                                  the network so far (0 when all came from the browser's caches)
//                   {event: "ready", info}         engine started (backend, adapter, fallback_reason,
//                                                  default_reason (why the page started on a backend other than
//                                                  webgpu; null on a GPU or when ?backend= named it), timings,
//                                                  pyodide_from_snapshot, bytecode_cached_files,
//                                                  bytecode_served_files (a first visit's, app/bytecode.py),
//                                                  installed_cached_files, stdlib_compiled: the standard-library
//                                                  modules this boot imported from the zip (compiled, unless the
//                                                  server's bytecode held them), see startup_cache.js)
//                   {event: "cache-stored", stored: {snapshot_bytes?, bytecode_files?, installed_files?} | error}
//                                                  after a boot that
//                                                  found either missing from the cache: what it stored for the next one
//                   {event: "failed", error}       boot failed; every request then fails with this error
//                   {event: "run", run: id, running}  a run ("run" or "exec") started / ended (before its reply)
//                   {event: "stopping", run: id}   Stop reached the run (Python saw it: KeyboardInterrupt raised, or to
//                                                  be at the next safe point; or cancelled at its await): it ends once
//                                                  its `finally` blocks and scopes have run
//                   {event: "input", prompt}       input(prompt) waits for a line: the page writes it into the input
//                                                  channel (or Stop writes "stopped" there)
//                   {event: "output", chunks: [{stream: "stdout"|"stderr"|"note", text} | {stream: "figure", png,
//                                                  alt, width, height}], dropped}  what the code printed and showed,
//                                                  in order, a batch every FLUSH_MS at most while it runs; dropped:
//                                                  lines left out because a batch was full (MAX_BATCH_LINES or
//                                                  MAX_BATCH_CHARS)
//                   {event: "memory", value, stats}  pe.memory() and pe.stats() after each request
//                   {event: "device-lost", reason} GPUDevice.lost resolved
//                   {event: "classifier-progress", loaded, total}  model weights downloading
//                   {event: "python", name, data}  pe.browser.post(name, data) from Python
//                   {event: "ask", ask, name, data}  a question from Python (self.peAsk below); the page answers
//                                                  {op: "answer", ask, ok, value | error}
// Requests run one at a time in arrival order: a run that awaits (readback) finishes before the
// next request starts, so the page never sees a half-run program.
"use strict";

// The worker's parts, each a request of its own: config.json is requested first and arrives while prefetch.js (its
// fetch() is the one every later fetch of this worker, Pyodide's included, goes through), startup_cache.js and
// boot.js load; then boot() starts. In boot(), once loadPyodide has made its requests, unzip.js loads while Pyodide
// boots, and once it has booted the webgpu bridge and the rest (loadTheRest); a panel's worker script (static/panels/NAME/NAME_worker.js) loads with the
// panel's first request. They share this script's globals below.
const configFetch = download("config.json", "text"); // first: the boot waits for it (never held by prefetch.js)
configFetch.catch(() => {}); // awaited by boot(); an early failure must not go unhandled meanwhile
importScripts("worker/prefetch.js", "worker/startup_cache.js", "worker/boot.js");

// The wasm backend's threads (py_engine/backends/wasm/threads.py asks for them): static/worker/wasm_pool.js and its
// workers, loaded the first time set_backend("wasm") runs on more than one thread.
self.pyEngineWasmPool = (module, workers, heap) => {
  if (!self.startWasmPool) importScripts("worker/wasm_pool.js");
  return self.startWasmPool(module, workers, () => new Worker("worker/wasm_pool_worker.js"), heap);
};

// The worker's state, shared by its parts.
let pyodide = null, py = null, runner = null, bootError = null;
let interruptBuffer = null; // Int32Array on a SharedArrayBuffer the page writes SIGINT (2) into
let inputChannel = null; // {control, bytes} on the page's input channel (INPUT)
let running = null; // the id of the run in progress

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

async function download(url, as) {
  const response = await fetch(url, { cache: as === "text" ? "no-store" : "default" });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return as === "text" ? response.text() : response.arrayBuffer();
}

// The page's messages that arrive before requests.js has loaded wait here; requests.js handles them in order.
const earlyMessages = [];
self.onmessage = ({ data }) => earlyMessages.push(data);

// The rest of the worker: next_boot.js (what this boot stores for the next), output.js (what Python prints), runs.js
// (a run, Stop, input()) and requests.js (the page's messages). boot() loads it once Pyodide has booted, off the path
// of Pyodide's own files; a boot that failed before then loads it on failing, so that every request gets its error.
let restLoaded = false;
function loadTheRest() {
  if (restLoaded) return;
  restLoaded = true;
  importScripts("worker/next_boot.js", "worker/output.js", "worker/runs.js", "worker/requests.js");
}

performance.setResourceTimingBufferSize(1000); // the boot's fetches (250 by default) must all count
const bootTicker = setInterval(postBootStatus, 250); // the bytes grow within a phase (numpy's wheels, the snapshot)
const booted = boot().finally(() => clearInterval(bootTicker)).then(
  (info) => {
    post({ event: "ready", info });
    importEngineHalf();
    storeForNextBoot();
    if (info.installed_cached_files) whenIdle().then(importRandomModules);
    whenIdle().then(compileAhead);
  },
  (error) => {
    bootError = (error && error.message) || String(error);
    post({ event: "failed", error: bootError });
    loadTheRest();
  },
);
