// The Pyodide host: py_engine runs in this dedicated worker, so the page never freezes.
//
// Protocol (structured-clone messages):
//   page -> worker  {op: "interrupt", buffer: Int32Array}   once, first: Pyodide's interrupt buffer (a
//                                                           SharedArrayBuffer; only a cross-origin-isolated page has one)
//                   {op: "stop", id}      the page wrote SIGINT into the buffer to stop run `id`; handled at once
//                   {id, op: "run", code} runPython: the last value as plain data (playground_display.to_jsonable)
//                   {id, op: "exec", code} the Run button: {ok, value: describe() tree | error: {type, message,
//                                         traceback, line}} (see playground_run.py and playground_display.py)
//                   | {id, op: "memory"} | {id, op: "stats"} | {id, op: "info"} | {id, op: "clearNamespace"}
//                   | {id, op: "setBackend", name} | {id, op: "loadClassifier", model}
//                   | {id, op: "classify", pixels: ArrayBuffer (RGBA, transferred), width, height, model}
//                                         model: a model folder's URL, or null for the one loaded (else the default)
//                   | {id, op: "teach", action, ...}  the Teach panel (static/teach_worker.js lists the actions)
//   worker -> page  {id, ok: true, value} | {id, ok: false, error}    one reply per request
//                   {event: "status", text}       boot progress
//                   {event: "ready", info}         engine started (backend, adapter, fallback_reason, timings,
//                                                  bytecode_cached_files: .pyc files taken from the bytecode cache)
//                   {event: "bytecode-cached", files, error?}  after a boot that found no cached bytecode: what
//                                                  this boot's imports compiled is stored for the next visit
//                   {event: "failed", error}       boot failed; every request then fails with this error
//                   {event: "run", run: id, running}  a run ("run" or "exec") started / ended (before its reply)
//                   {event: "output", chunks: [{stream: "stdout"|"stderr", text}], dropped}  what the code printed,
//                                                  in order, a batch every FLUSH_MS at most while it runs; dropped:
//                                                  lines left out because a batch was full (MAX_BATCH_LINES or
//                                                  MAX_BATCH_CHARS)
//                   {event: "memory", value, stats}  pe.memory() and pe.stats() after each request
//                   {event: "device-lost", reason} GPUDevice.lost resolved
//                   {event: "classifier-progress", loaded, total}  model weights downloading
//                   {event: "python", name, data}  pe.browser.post(name, data) from Python
// Requests run one at a time in arrival order: a run that awaits (readback) finishes before the
// next request starts, so the page never sees a half-run program.
"use strict";

importScripts("bridge.js", "teach_worker.js");

const backendAtStart = new URL(self.location.href).searchParams.get("backend") || "webgpu";
const PYTHON_MODULES = ["playground.py", "playground_run.py", "playground_display.py", "teach.py"];
const timings = {};
let pyodide = null, py = null, runner = null, bootError = null;
let interruptBuffer = null; // Int32Array on a SharedArrayBuffer the page writes SIGINT (2) into
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

async function timed(name, work) {
  post({ event: "status", text: name.replace(/_ms$/, "").replaceAll("_", " ") + "..." });
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

// Boot order: everything that needs no Python (the engine wheel, the page's modules) downloads while Pyodide
// compiles; the wheel is unpacked straight into site-packages (a pure-Python wheel needs no installer, and micropip
// would cost a package load and an import); the bytecode of the last visit (bytecode cache below) goes into place
// before the first import.
async function boot() {
  const config = await (await fetch("config.json", { cache: "no-store" })).json();
  const indexURL = new URL(config.pyodide_index_url, self.location.href).href;
  const wheel = download(new URL(config.engine_wheel_url, self.location.href).href, "bytes");
  const sources = Promise.all(PYTHON_MODULES.map((name) => download(name, "text")));
  wheel.catch(() => {}); sources.catch(() => {}); // awaited below; an early failure must not go unhandled meanwhile
  pyodide = await timed("pyodide_boot_ms", () => {
    importScripts(indexURL + "pyodide.js");
    return loadPyodide({ indexURL });
  });
  await timed("packages_ms", () => pyodide.loadPackage([...new Set(["numpy", ...(config.packages || [])])]));
  await timed("engine_install_ms", async () => {
    pyodide.unpackArchive(await wheel, "zip", { extractDir: pyodide.runPython(SITE_PACKAGES) });
  });
  self.peBridge.heap = () => pyodide._module.HEAPU8;
  self.peBridge.onLost((reason) => post({ event: "device-lost", reason }));
  const texts = await sources;
  PYTHON_MODULES.forEach((name, i) => pyodide.FS.writeFile("/home/pyodide/" + name, texts[i]));
  const cacheKey = await bytecodeKey([pyodide.version, indexURL, config.engine_wheel_url, ...(config.packages || []), ...texts]);
  const bytecodeFiles = await timed("bytecode_restore_ms", () => restoreBytecode(cacheKey));
  if (!bytecodeFiles) bytecodeToSave = cacheKey;
  pyodide.setStdout({ batched: (line) => printed("stdout", line) });
  pyodide.setStderr({ batched: (line) => printed("stderr", line) });
  await timed("import_ms", () => {
    pyodide.runPython("import sys; sys.dont_write_bytecode = False"); // Pyodide's default is True
    py = pyodide.pyimport("playground");
    runner = pyodide.pyimport("playground_run");
  });
  if (interruptBuffer) setInterruptBuffer(interruptBuffer);
  const info = await timed("engine_start_ms", async () => plain(await py.start(backendAtStart)));
  return { ...info, pyodide_version: pyodide.version, bytecode_cached_files: bytecodeFiles, timings: { ...timings } };
}

// Bytecode cache. Pyodide's stdlib and package wheels carry only .py files and its file system starts empty, so
// every visit compiles numpy, py_engine and the page's modules from source again (about 3x the import itself).
// After the first boot, the .pyc files the imports wrote are stored in the browser's Cache Storage, marked
// "unchecked hash-based" (PEP 552: used without comparing them with their source, whose mtime is the time of this
// visit's unpacking), under a key that hashes everything they were compiled from: the Pyodide version and URL
// (numpy is pinned by its lock file), the engine wheel's content-addressed URL, the packages, and the module texts.
// A changed source gives a new key, so a stale .pyc is never used; the entry of an old key is deleted.
const BYTECODE_CACHE = "py-bytecode-v1";
// Pyodide's purelib path starts with "//", which names the same folder but not as the prefix of module paths.
const SITE_PACKAGES = "import sysconfig; '/' + sysconfig.get_path('purelib').lstrip('/')";
let bytecodeToSave = null; // the key to store this visit's bytecode under, when the cache had none

async function bytecodeKey(parts) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(JSON.stringify(parts)));
  const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return new URL(`bytecode/${hex}`, self.location.href).href;
}

// The cached files written into place; how many (0 when there is no entry, or no Cache Storage: then Python compiles).
async function restoreBytecode(key) {
  let archive;
  try {
    const response = await (await caches.open(BYTECODE_CACHE)).match(key);
    if (!response) return 0;
    archive = new Uint8Array(await response.arrayBuffer());
  } catch (error) {
    console.warn("bytecode cache unavailable:", error);
    return 0;
  }
  const indexLength = new DataView(archive.buffer).getUint32(0, true);
  const index = JSON.parse(new TextDecoder().decode(archive.subarray(4, 4 + indexLength)));
  let offset = 4 + indexLength;
  for (const [path, size] of index) {
    pyodide.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
    pyodide.FS.writeFile(path, archive.subarray(offset, offset + size));
    offset += size;
  }
  return index.length;
}

// [u32 index length][index JSON: [[path, size], ...]][the files' bytes, in index order]
async function saveBytecode(key) {
  const packed = pyodide.runPython(`
import json, os, sys
def _pack_bytecode(site_packages):
    roots = (site_packages + "/", "/home/pyodide/")
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
_pack_bytecode`);
  let index, bytes;
  try {
    const result = packed(pyodide.runPython(SITE_PACKAGES));
    [index, bytes] = result.toJs();
    result.destroy();
  } finally {
    packed.destroy();
  }
  const archive = new Uint8Array(4 + index.length + bytes.length);
  new DataView(archive.buffer).setUint32(0, index.length, true);
  archive.set(index, 4);
  archive.set(bytes, 4 + index.length);
  const cache = await caches.open(BYTECODE_CACHE);
  for (const old of await cache.keys()) await cache.delete(old);
  await cache.put(key, new Response(archive, { headers: { "Content-Type": "application/octet-stream" } }));
  return JSON.parse(new TextDecoder().decode(index)).length;
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

function flushOutput() {
  clearTimeout(flushTimer);
  flushTimer = null;
  lastFlush = performance.now();
  if (!batch.length && !dropped) return;
  post({ event: "output", chunks: batch, dropped });
  batch = [];
  batchLines = batchChars = dropped = 0;
}

// A run of the page's code; Stop may interrupt it from the moment "running" is posted until its end.
async function run(message, result) {
  if (interruptBuffer) Atomics.store(interruptBuffer, 0, 0); // a Stop meant for an earlier run must not hit this one
  running = message.id;
  post({ event: "run", run: message.id, running: true });
  try {
    return plain(await runner.run(message.code, result));
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
}

async function handle(message) {
  if (!py) throw new Error("the Python runtime did not start: " + bootError);
  switch (message.op) {
    case "run": {
      const outcome = await run(message, "json");
      if (!outcome.ok) throw new Error(outcome.error.traceback);
      return outcome.value;
    }
    case "exec": return run(message, "display");
    case "clearNamespace": return plain(py.clear_namespace());
    case "memory": return plain(py.memory());
    case "stats": return plain(py.stats());
    case "info": return plain(py.backend_info());
    case "setBackend": return plain(await py.start(message.name));
    case "loadClassifier": return plain(await py.load_classifier(progress, message.model || undefined));
    case "classify": {
      const load = plain(await py.load_classifier(progress, message.model || undefined));
      const result = plain(await py.classify(new Uint8Array(message.pixels), message.height, message.width));
      return { ...result, load };
    }
    case "teach": return self.teachRequest(pyodide, plain, message, progress);
    default: throw new Error(`unknown request ${JSON.stringify(message.op)}`);
  }
}

const booted = boot().then(
  (info) => {
    post({ event: "ready", info });
    // Its Python part runs now, before the first request; storing it finishes in the background.
    if (bytecodeToSave) {
      saveBytecode(bytecodeToSave).then(
        (files) => post({ event: "bytecode-cached", files }),
        (error) => post({ event: "bytecode-cached", files: 0, error: String(error) }),
      );
    }
  },
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
      try { post({ event: "memory", value: plain(py.memory()), stats: plain(py.stats()) }); } catch (error) { console.error(error); }
    }
  }
  draining = false;
}

self.onmessage = ({ data: message }) => {
  if (message.op === "interrupt") {
    interruptBuffer = message.buffer;
    if (runner) setInterruptBuffer(interruptBuffer);
  } else if (message.op === "stop") {
    stop(message.id);
  } else {
    queue.push(message);
    drain();
  }
};
