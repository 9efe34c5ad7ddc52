// The worker's boot (static/worker.js calls boot() once it has loaded this script): Pyodide, numpy, py_engine and the
// page's Python modules into place, taking what the last visit stored (static/worker/startup_cache.js), then the
// engine started; the progress of each phase posted as "status" events. Shares the worker's globals (static/worker.js:
// pyodide, py, runner, post, plain, download, configFetch) and calls into output.js (printed), runs.js
// (setInterruptBuffer) and next_boot.js (what to store), which it loads once Pyodide has booted (loadTheRest).
"use strict";

const backendRequested = new URL(self.location.href).searchParams.get("backend"); // ?backend=NAME, else the page picks
// ?offline-copy: a static export's service worker keeps what this page downloads for offline visits (static/page/boot.js)
const offlineCopy = new URL(self.location.href).searchParams.has("offline-copy");
// The page's Python modules (config.json's python_modules: static/worker/*.py and static/panels/NAME/*.py), written
// into /home/pyodide by name; startup_cache.py is imported first, by startup_cache.js right after Pyodide has booted.
const moduleName = (path) => path.slice(path.lastIndexOf("/") + 1);
const STARTUP_CACHE_PY = "startup_cache.py";
const timings = {};

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

// Boot order: everything that needs no Python (the engine wheel, the page's modules) downloads while Pyodide boots
// (from the last visit's memory snapshot when there is one, static/worker/startup_cache.js) and Cache Storage reads what
// the last visit stored. numpy and the engine go into site-packages from the last visit's files when stored, else
// numpy by loadPackage and the engine wheel's files, unzipped while Pyodide boots, written straight into
// site-packages (a pure-Python wheel needs no installer, and micropip would cost a package load and an import);
// the last visit's bytecode (on a first visit, the server's, app/bytecode.py) goes into place before the first
// import. What this boot could not take from the cache is stored after "ready" (storeForNextBoot).
// What the cache lacked: the snapshot to make ({indexURL, preload}); the bytecode's and site-packages' keys.
let snapshotToMake = null, bytecodeToPack = null, installedToPack = null;

async function boot() {
  const config = await timed("config_ms", async () => JSON.parse(await configFetch));
  const indexURL = new URL(config.pyodide_index_url, self.location.href).href;
  const packages = [...new Set(["numpy", ...(config.packages || [])])];
  const wheelURL = new URL(config.engine_wheel_url, self.location.href).href;
  const wheel = download(wheelURL, "bytes");
  const modules = config.python_modules;
  const sources = Promise.all(modules.map((path) => download(path, "text")));
  const startupCachePy = modules.findIndex((path) => moduleName(path) === STARTUP_CACHE_PY);
  wheel.catch(() => {}); sources.catch(() => {}); // awaited below; an early failure must not go unhandled meanwhile
  const snapshot = startupCache.findSnapshot(indexURL); // Cache Storage looks while pyodide.js loads
  self.pePrefetch.lockFile(indexURL); // one request for Pyodide's boot and the wheels' prefetch
  let requested;
  const pyodideRequested = new Promise((resolve) => { requested = resolve; });
  const booting = timed("pyodide_boot_ms", () => {
    importScripts(indexURL + "pyodide.js");
    return startupCache.bootPyodide(indexURL, snapshot, sources.then((texts) => texts[startupCachePy]), requested);
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
  // Nothing stored: the engine wheel is unzipped while Pyodide boots (static/worker/unzip.js), so that installing it
  // is writing its files; unzip.js loads once Pyodide's own requests are out (an importScripts is a request this
  // thread waits for)
  await Promise.race([pyodideRequested, booting.catch(() => {})]);
  importScripts("worker/unzip.js");
  const unzipWheel = () => wheel.then(self.unzip).catch((error) => {
    throw new Error(`the engine wheel ${wheelURL} cannot be read: ${error.message || error}`);
  });
  const engineFiles = installed.then((found) => (found ? null : unzipWheel()));
  engineFiles.catch(() => {}); // awaited below
  const booted = await booting;
  // The worker's other scripts load once Pyodide has booted: each importScripts is a request this thread waits for.
  // Before loadPyodide they delayed its start by 100-300 ms; during its boot they held up its wasm, whose download
  // this thread takes in (compiling it as it arrives): the wasm's last byte came 110-160 ms later (2026-12-06).
  // The webgpu backend's side first (self.peBridge), in this order: each uses the ones before it.
  importScripts("worker/gpu_device.js", "worker/backend_choice.js", "worker/precompile.js", "worker/bridge.js");
  loadTheRest(); // static/worker.js
  // The backend: the one the address names, else webgpu on a GPU and wasm on a CPU (static/worker/backend_choice.js).
  const choice = backendRequested ? Promise.resolve({ backend: backendRequested, reason: null })
    : self.peBridge.preferredBackend();
  // The classifier's shaders compile on another core while numpy loads and Python imports and starts
  // (static/worker/precompile.js); started earlier, they would slow Pyodide's own compiles, which use every core.
  // Called before the engine starts (it awaits `choice` below), so the engine takes the device that compiles them.
  choice.then(({ backend }) => {
    if (backend === "webgpu" && config.pipelines) self.peBridge.precompile(config.pipelines, booting);
  });
  // The classifier's files download ahead of a first classification, at low priority (static/worker/prefetch.js): once
  // the page's modules are imported, so that the 18.8 MB do not share the cores with numpy's install and the import
  // (from the end of Pyodide's boot, they cost a first visit's ready about 12%); where a static export's service worker
  // keeps them for offline visits (static/isolation_sw.js), from here, so that a visit that ends soon after ready has
  // kept them all. Not before the scripts above: those would wait for the shards' connections.
  const prefetchModel = () => config.classifier && self.pePrefetch.model(config.classifier);
  if (offlineCopy) prefetchModel();
  pyodide = booted.pyodide;
  const filesMounted = self.peFiles.mount(pyodide); // the user's files: IndexedDB is read while the rest goes on
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
      const site = startupCache.sitePackages(), folders = new Set();
      // stored site-packages that could not be used: unzipped now
      for (const [path, bytes] of (await engineFiles) ?? (await unzipWheel())) {
        const folder = `${site}/${path}`.slice(0, site.length + 1 + path.lastIndexOf("/"));
        if (!folders.has(folder)) pyodide.FS.mkdirTree(folder);
        folders.add(folder);
        pyodide.FS.writeFile(`${site}/${path}`, bytes, { canOwn: true });
      }
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
  if (!offlineCopy) prefetchModel();
  await timed("files_ms", async () => { // the user's files, in place before any of their code runs
    await filesMounted;
    self.peFiles.useFolder();
  });
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

// On wasm, a model's first load and run (its warm-up) ran each of Pyodide's functions and the kernels they reach for
// the first time, on V8's baseline code, and wrote each new page of the heap for the first time: tens of ms, paid
// ahead once no request has run for IDLE_MS (static/worker/playground_ahead.py).
function compileAhead() {
  try {
    pyodide.pyimport("playground_ahead").compile_ahead(navigator.deviceMemory ?? 0);
  } catch (error) {
    console.warn("a first model's path could not be compiled ahead:", error);
  }
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
