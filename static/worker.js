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

// Each script is a request of its own: config.json is requested while startup_cache.js loads, bridge.js loads in
// boot() while Cache Storage looks for the last visit's entries, a panel's worker script (static/panels/NAME/*_worker.js) with
// the panel's first request.
// prefetch.js comes first: its fetch() is the one every later fetch of this worker, Pyodide's included, goes through.
importScripts("worker/prefetch.js");
const configFetch = download("config.json", "text");
configFetch.catch(() => {}); // awaited by boot(); an early failure must not go unhandled meanwhile
importScripts("worker/startup_cache.js");

// The wasm backend's threads (py_engine/backends/wasm/threads.py asks for them): static/worker/wasm_pool.js and its
// workers, loaded the first time set_backend("wasm") runs on more than one thread.
self.pyEngineWasmPool = (module, workers, heap) => {
  if (!self.startWasmPool) importScripts("worker/wasm_pool.js");
  return self.startWasmPool(module, workers, () => new Worker("worker/wasm_pool_worker.js"), heap);
};
const backendRequested = new URL(self.location.href).searchParams.get("backend"); // ?backend=NAME, else the page picks
// The page's Python modules (config.json's python_modules: static/worker/*.py and static/panels/NAME/*.py), written
// into /home/pyodide by name; startup_cache.py is imported first, by startup_cache.js right after Pyodide has booted.
const moduleName = (path) => path.slice(path.lastIndexOf("/") + 1);
const STARTUP_CACHE_PY = "startup_cache.py";
const timings = {};
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

// The bytes this worker took from the network (a response from the HTTP cache transfers none), for the boot's
// progress line: the Resource Timing entries of its fetches (all same-origin, so their sizes are visible).
function downloadedBytes() {
  return performance.getEntriesByType("resource").reduce((sum, entry) => sum + (entry.transferSize || 0), 0);
}

let bootPhase = null;
function postBootStatus() {
  if (bootPhase === null) return;
  const phase = bootPhase.replace(/_ms$/, "").replaceAll("_", " ");
  post({ event: "status", text: phase + "...", phase, downloaded: downloadedBytes() });
}

async function timed(name, work) {
  bootPhase = name;
  postBootStatus();
  const start = performance.now();
  const result = await work();
  timings[name] = performance.now() - start;
  return result;
}

async function download(url, as) {
  const response = await fetch(url, { cache: as === "text" ? "no-store" : "default" });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return as === "text" ? response.text() : response.arrayBuffer();
}

// Boot order: everything that needs no Python (the engine wheel, the page's modules) downloads while Pyodide boots
// (from the last visit's memory snapshot when there is one, static/worker/startup_cache.js) and Cache Storage reads what
// the last visit stored. numpy and the engine go into site-packages from the last visit's files when stored, else
// numpy by loadPackage and the engine wheel unpacked straight into site-packages (a pure-Python wheel needs no
// installer, and micropip would cost a package load and an import); the last visit's bytecode (on a first visit,
// the server's, app/bytecode.py) goes into place before the first import. What this boot could not take from the
// cache is stored after "ready" (storeForNextBoot).
// What the cache lacked: the snapshot to make ({indexURL, preload}); the bytecode's and site-packages' keys.
let snapshotToMake = null, bytecodeToPack = null, installedToPack = null;

async function boot() {
  const config = await timed("config_ms", async () => JSON.parse(await configFetch));
  const indexURL = new URL(config.pyodide_index_url, self.location.href).href;
  const packages = [...new Set(["numpy", ...(config.packages || [])])];
  const wheel = download(new URL(config.engine_wheel_url, self.location.href).href, "bytes");
  const modules = config.python_modules;
  const sources = Promise.all(modules.map((path) => download(path, "text")));
  const startupCachePy = modules.findIndex((path) => moduleName(path) === STARTUP_CACHE_PY);
  wheel.catch(() => {}); sources.catch(() => {}); // awaited below; an early failure must not go unhandled meanwhile
  const snapshot = startupCache.findSnapshot(indexURL); // Cache Storage looks while pyodide.js loads
  self.pePrefetch.lockFile(indexURL); // one request for Pyodide's boot and the wheels' prefetch
  const booting = timed("pyodide_boot_ms", () => {
    importScripts(indexURL + "pyodide.js");
    return startupCache.bootPyodide(indexURL, snapshot, sources.then((texts) => texts[startupCachePy]));
  });
  const installedKey = startupCache.installedKey([indexURL, packages, config.engine_wheel_url]);
  const installed = installedKey.then((key) => startupCache.readInstalled(key));
  // The last visit's bytecode is read while Pyodide boots too (its entry names the Pyodide that compiled it).
  const bytecodeKey = sources.then((texts) =>
    startupCache.bytecodeKey([indexURL, config.engine_wheel_url, config.packages, texts]));
  const bytecode = bytecodeKey.then((key) => startupCache.readBytecode(key));
  bytecode.catch(() => {}); // the sources' failure, awaited below
  // Nothing stored (a first visit): the server's bytecode (app/bytecode.py) and the packages' wheels download while
  // Pyodide boots (static/worker/prefetch.js holds the wheels until loadPackage asks for them).
  const servedEarly = installed.then((found) => (found ? undefined : startupCache.fetchServedBytecode(config.bytecode)));
  installed.then((found) => found || self.pePrefetch.packages(indexURL, packages));
  // the webgpu backend's side here (self.peBridge), in this order: each uses the ones before it
  importScripts("worker/gpu_device.js", "worker/backend_choice.js", "worker/precompile.js", "worker/bridge.js");
  // The backend: the one the address names, else webgpu on a GPU and wasm on a CPU (static/worker/backend_choice.js).
  const choice = backendRequested ? Promise.resolve({ backend: backendRequested, reason: null })
    : self.peBridge.preferredBackend();
  // The classifier's shaders compile on another core while numpy loads and Python imports and starts
  // (static/worker/precompile.js); started earlier, they would slow Pyodide's own compiles, which use every core.
  // Called before the engine starts (it awaits `choice` below), so the engine takes the device that compiles them.
  choice.then(({ backend }) => {
    if (backend === "webgpu" && config.pipelines) self.peBridge.precompile(config.pipelines, booting);
  });
  // The classifier's files download while numpy loads and Python imports and starts (static/worker/prefetch.js); started
  // earlier, they would share a slow network with Pyodide's own files.
  if (config.classifier) booting.then(() => self.pePrefetch.model(config.classifier), () => {});
  const booted = await booting;
  pyodide = booted.pyodide;
  const texts = await sources;
  // None stored: the server's (fetched only now when site-packages were stored), unless it is for another Pyodide.
  // In place before loadPackage, which imports standard-library modules it holds.
  const stored = startupCache.compiledBy(await bytecode, pyodide.version);
  const bytecodeFiles = await timed("bytecode_restore_ms", async () => {
    let entry = stored;
    if (!stored && config.bytecode?.pyodide_version === pyodide.version) {
      const early = await servedEarly;
      entry = early === undefined ? await startupCache.fetchServedBytecode(config.bytecode) : early;
    }
    return startupCache.restoreBytecode(pyodide, entry);
  });
  const installedFiles = await timed("installed_restore_ms", () => startupCache.restoreInstalled(pyodide, installed));
  // Without them, numpy downloads and its wasm modules compile (off this thread) while the engine goes into place.
  const loading = installedFiles ? null : timed("packages_ms", () => pyodide.loadPackage(packages));
  loading?.catch(() => {});
  if (!installedFiles) {
    await timed("engine_install_ms", async () => {
      pyodide.unpackArchive(await wheel, "zip", { extractDir: startupCache.sitePackages() });
    });
  }
  self.peBridge.heap = () => pyodide._module.HEAPU8;
  self.peBridge.onLost((reason) => post({ event: "device-lost", reason }));
  modules.forEach((path, i) => pyodide.FS.writeFile("/home/pyodide/" + moduleName(path), texts[i]));
  await loading;
  pyodide.setStdout({ batched: (line) => printed("stdout", line) });
  pyodide.setStderr({ batched: (line) => printed("stderr", line) });
  await timed("import_ms", () => {
    startupCache.writeBytecode();
    py = pyodide.pyimport("playground");
    runner = pyodide.pyimport("playground_run");
  });
  await timed("files_ms", () => self.peFiles.mount(pyodide)); // the user's files, before any of their code runs
  if (!stored) bytecodeToPack = await bytecodeKey;
  if (!installedFiles) installedToPack = await installedKey;
  if (interruptBuffer) setInterruptBuffer(interruptBuffer);
  py.use_default_classifier(config.classifier ?? null);
  const { backend, reason } = await choice;
  const info = await timed("engine_start_ms", async () => plain(await py.start(backend)));
  // The next boot's snapshot holds the standard-library modules this one imported, unless it was asked for them.
  const stdlib = startupCache.stdlibFromZip();
  if (!booted.fromSnapshot || stdlib.some((name) => !booted.preloaded.includes(name))) {
    snapshotToMake = { indexURL, preload: stdlib, pythonHalf: texts[startupCachePy] };
  }
  return {
    ...info,
    default_reason: reason,
    pyodide_version: pyodide.version,
    pyodide_from_snapshot: booted.fromSnapshot,
    bytecode_cached_files: stored ? bytecodeFiles : 0,
    bytecode_served_files: stored ? 0 : bytecodeFiles,
    installed_cached_files: installedFiles,
    stdlib_compiled: stdlib.filter((name) => !booted.stdlibAtBoot.includes(name)),
    timings: { ...timings },
    time_origin: performance.timeOrigin, // the page makes its worker_start_ms of it
  };
}

// py_engine imports its layers, models, TF.js reader and training on first use, so that "ready" comes sooner; a first
// classification or fit would still wait for that import (150 ms from stored bytecode, several times that from
// source), so it runs right after "ready", before any request, and the bytecode packed next holds it.
function importEngineHalf() {
  py.import_engine_rest();
}

// A boot from stored site-packages leaves numpy.random's 9 wasm modules to its first import (startup_cache.js), which
// a new model's first weights make: about 115 ms of synchronous compiles. Made once no request has run for IDLE_MS.
function importRandomModules() {
  try {
    py.import_numpy_random();
  } catch (error) {
    console.warn("numpy.random could not be imported ahead:", error);
  }
}

// After "ready": what the next boot can take from the cache; the page hears what was stored.
function storeForNextBoot() {
  const tasks = [];
  if (snapshotToMake) tasks.push(whenIdle().then(() => snapshotInWorker(snapshotToMake)));
  // The executors run now: the bytecode and site-packages are packed before any request runs (one could install a
  // package). They are stored once no request has run for IDLE_MS: putting tens of MB into Cache Storage held this
  // thread for 40-60 ms at a time, inside a first classification's load right after "ready".
  const packed = (pack) => new Promise((resolve) => {
    const entry = pack();
    resolve(entry ? whenIdle().then(() => startupCache.store([entry])) : {});
  });
  if (bytecodeToPack) tasks.push(packed(() => startupCache.packBytecode(pyodide, bytecodeToPack)));
  if (installedToPack) tasks.push(packed(() => startupCache.packInstalled(pyodide, installedToPack)));
  bytecodeToPack = installedToPack = null;
  if (!tasks.length) return;
  Promise.all(tasks).then(
    (stored) => post({ event: "cache-stored", stored: Object.assign({}, ...stored) }),
    (error) => post({ event: "cache-stored", error: (error && error.message) || String(error) }),
  );
}

// The snapshot's worker boots a second Pyodide: seconds of CPU. It waits until no request has run here for IDLE_MS,
// so that it does not slow what a visitor does first (a classification's warm-up, a first fit).
const IDLE_MS = 3000;
let lastBusy = performance.now();

function whenIdle() {
  return new Promise((resolve) => {
    const check = () => {
      const idleFor = performance.now() - lastBusy;
      if (!draining && idleFor >= IDLE_MS) resolve();
      else setTimeout(check, Math.max(IDLE_MS - idleFor, 100));
    };
    setTimeout(check, IDLE_MS);
  });
}

// static/worker/snapshot_worker.js boots a Pyodide of its own, snapshots and stores it, and ends; this one keeps serving.
function snapshotInWorker({ indexURL, preload, pythonHalf }) {
  return new Promise((resolve, reject) => {
    const maker = new Worker("worker/snapshot_worker.js");
    maker.onmessage = ({ data }) => {
      maker.terminate();
      if (data.error) reject(new Error(`Pyodide snapshot: ${data.error}`));
      else resolve(data.stored);
    };
    maker.onerror = (event) => {
      maker.terminate();
      reject(new Error(`Pyodide snapshot: ${event.message || "snapshot_worker.js failed to load"}`));
    };
    maker.postMessage({ indexURL, preload, pythonHalf });
  });
}

// What Python prints, batched: one message per FLUSH_MS at most, so a loop that prints fast cannot flood the page.
const FLUSH_MS = 50;
const MAX_BATCH_LINES = 1000;
const MAX_BATCH_CHARS = 200_000;
const MAX_LINE = 10_000;
let batch = [], batchLines = 0, batchChars = 0, dropped = 0, lastFlush = 0, flushTimer = null;

function printed(stream, line) {
  if (batchLines >= MAX_BATCH_LINES || batchChars >= MAX_BATCH_CHARS) {
    dropped++;
  } else {
    const text = line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)}... (${line.length - MAX_LINE} more characters)` : line;
    const last = batch[batch.length - 1];
    if (last && last.stream === stream) last.text += "\n" + text;
    else batch.push({ stream, text });
    batchLines++;
    batchChars += text.length + 1;
  }
  // While Python runs without awaiting, no timer fires: the clock decides; at an await, the timer sends the rest.
  if (performance.now() - lastFlush >= FLUSH_MS) flushOutput();
  else if (flushTimer === null) flushTimer = setTimeout(flushOutput, FLUSH_MS);
}

// What Python shows in the Output besides printed text, in order with it (static/worker/playground_packages.py,
// playground_figures.py): {stream: "note", text} (a package load's progress) or {stream: "figure", png, alt, width,
// height}. Sent at once: a figure is large, and a note says what the run waits for.
self.peOutput = (chunk) => {
  batch.push(chunk);
  flushOutput();
};

function flushOutput() {
  clearTimeout(flushTimer);
  flushTimer = null;
  lastFlush = performance.now();
  if (!batch.length && !dropped) return;
  post({ event: "output", chunks: batch, dropped });
  batch = [];
  batchLines = batchChars = dropped = 0;
}

// The input channel, a SharedArrayBuffer: control (Int32Array [state, length]) then the line's UTF-8 bytes. The
// page writes the line and then LINE into state, or STOPPED on Stop, and wakes the worker waiting on it.
const INPUT = { WAITING: 0, LINE: 1, STOPPED: 2 };

// input()'s line (playground_run.py), or null when Stop ended the wait: the worker waits (Atomics.wait) until the
// page writes into the channel. A Stop stays in the channel until the run ends: a second input() ends at once.
function readLine(prompt) {
  const { control, bytes } = inputChannel;
  post({ event: "input", prompt });
  while (Atomics.load(control, 0) === INPUT.WAITING) Atomics.wait(control, 0, INPUT.WAITING);
  if (Atomics.load(control, 0) === INPUT.STOPPED) return null;
  const line = new TextDecoder().decode(bytes.slice(0, Atomics.load(control, 1))); // no decoding of shared memory
  Atomics.store(control, 0, INPUT.WAITING);
  return line;
}

// What playground_run.py calls back in this worker: before a wait that blocks this thread (no timer fires), for
// input(), and when it raises KeyboardInterrupt for Stop.
self.peRunner = { flush: () => flushOutput(), readLine, stopping: () => post({ event: "stopping", run: running }) };

// A run of the page's code; Stop may interrupt it from the moment "running" is posted until its end.
async function run(message, result) {
  if (interruptBuffer) Atomics.store(interruptBuffer, 0, 0); // a Stop meant for an earlier run must not hit this one
  if (inputChannel) Atomics.store(inputChannel.control, 0, INPUT.WAITING);
  running = message.id;
  runner.starting(); // a Stop from now on is this run's, even one Python sees before the run has begun
  post({ event: "run", run: message.id, running: true });
  try {
    return plain(await runner.run(message.code, result, message.pixelRatio ?? 1));
  } finally {
    flushOutput();
    running = null;
    post({ event: "run", run: message.id, running: false });
  }
}

// Pyodide reads SIGINT from the buffer as Python executes; playground_run writes it back while it waits for a safe
// point to raise KeyboardInterrupt.
function setInterruptBuffer(buffer) {
  pyodide.setInterruptBuffer(buffer);
  runner.set_interrupt_buffer(buffer);
}

// Stop: Python runs nothing while this handler runs, so it waits at an await, or in a synchronous readback (JSPI).
// Take the signal back before calling into Python, then cancel the run at its await, or give the signal back to
// be seen when Python executes again.
function stop(id) {
  if (id !== running || !runner) return;
  if (interruptBuffer) Atomics.store(interruptBuffer, 0, 0);
  const state = runner.stop_awaiting();
  if (state === "running" && interruptBuffer) Atomics.store(interruptBuffer, 0, 2);
  if (state === "cancelled") self.peRunner.stopping();
}

// The requests this worker answers, by op: the runtime's own below; a panel's come from its worker script
// (static/panels/NAME/*_worker.js), which the page names in the panel's requests (static/page/panels.js) and which is
// loaded on the first of them. Each handler gets the message and the worker's tools and returns the reply's value.
const requests = new Map();
function handleRequest(op, handler) {
  requests.set(op, handler);
}
const tools = () => ({ pyodide, py, plain, progress });

handleRequest("run", async (message) => {
  const outcome = await run(message, "json");
  if (!outcome.ok) throw new Error(outcome.error.traceback);
  return outcome.value;
});
handleRequest("exec", (message) => run(message, "display"));
handleRequest("clearNamespace", () => plain(py.clear_namespace()));
handleRequest("memory", () => plain(py.memory()));
handleRequest("stats", () => plain(py.stats()));
handleRequest("info", () => plain(py.backend_info()));
handleRequest("setBackend", async (message) => plain(await py.start(message.name)));
// The user's files: mounted by boot(), so loaded now, not with the Files panel's first request.
const FILES_WORKER = "panels/files/files_worker.js";
importScripts(FILES_WORKER);

const loadedScripts = new Set([FILES_WORKER]); // a panel's worker script runs once
async function handle(message) {
  if (!py) throw new Error("the Python runtime did not start: " + bootError);
  const script = message.script ?? "";
  if (!requests.has(message.op) && !loadedScripts.has(script) && /^panels\/\w+\/\w+_worker\.js$/.test(script)) {
    loadedScripts.add(script);
    importScripts(script);
  }
  const handler = requests.get(message.op);
  if (!handler) throw new Error(`unknown request ${JSON.stringify(message.op)}`);
  return handler(message, tools());
}

performance.setResourceTimingBufferSize(1000); // the boot's fetches (250 by default) must all count
const bootTicker = setInterval(postBootStatus, 250); // the bytes grow within a phase (numpy's wheels, the snapshot)
const booted = boot().finally(() => clearInterval(bootTicker)).then(
  (info) => {
    post({ event: "ready", info });
    importEngineHalf();
    storeForNextBoot();
    if (info.installed_cached_files) whenIdle().then(importRandomModules);
  },
  (error) => {
    bootError = (error && error.message) || String(error);
    post({ event: "failed", error: bootError });
  },
);

const queue = [];
let draining = false;

// The editor's completion (static/panels/code/playground_completion.py, jedi) is answered beside the queue, so it never waits
// for a run: while a request is in progress (a run that awaits included) it gets nothing at once, and while Python
// runs without awaiting, the page stops waiting for it (static/panels/code/completion.js).
let completer = null;
async function complete(message) {
  let value = null;
  try {
    if (py && !draining) {
      completer ??= pyodide.pyimport("playground_completion");
      value = plain(await completer.complete(message.code, message.offset));
    }
    post({ id: message.id, ok: true, value });
  } catch (error) {
    post({ id: message.id, ok: false, error: (error && error.message) || String(error) });
  }
}

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
      try { post({ event: "memory", value: plain(py.memory()), stats: plain(py.stats()) }); } catch (error) { console.error(error); }
    }
  }
  draining = false;
  lastBusy = performance.now();
}

// Python's questions to the page (pe.browser.camera_frame asks for the webcam's frame): peAsk(name, data) posts
// {event: "ask", ask, name, data}; the page's {op: "answer", ask, ok, value | error} is taken at once, not queued
// behind the run that waits for it.
const asks = new Map();
let nextAsk = 1;
self.peAsk = (name, data) => new Promise((resolve, reject) => {
  const ask = nextAsk++;
  asks.set(ask, { resolve, reject });
  post({ event: "ask", ask, name, data });
});

function answered({ ask, ok, value, error }) {
  const waiting = asks.get(ask);
  asks.delete(ask);
  if (ok) waiting?.resolve(value);
  else waiting?.reject(new Error(error));
}

self.onmessage = ({ data: message }) => {
  if (message.op === "answer") {
    answered(message);
  } else if (message.op === "interrupt") {
    interruptBuffer = message.buffer;
    inputChannel = { control: new Int32Array(message.input, 0, 2), bytes: new Uint8Array(message.input, 8) };
    if (runner) setInterruptBuffer(interruptBuffer);
  } else if (message.op === "stop") {
    stop(message.id);
  } else if (message.op === "complete") {
    complete(message);
  } else {
    queue.push(message);
    drain();
  }
};
