// The playground page: starts the Pyodide worker, exposes window.playground, runs the editor, the Output log, the
// run controls and the Classify panel.
//
// window.playground (for the devtools console and the e2e tests; every call goes to the worker):
//   ready                  Promise -> {backend: "webgpu"|"wasm"|"numpy", adapter: {vendor, architecture, device,
//                          description, adapter_type} | null, fallback_reason: str|null, default_reason: str|null
//                          (why the page started on wasm: no WebGPU, or WebGPU on the CPU; null on a GPU or when
//                          the address named the backend, ?backend=webgpu|wasm|numpy), details: pe.backend_info(),
//                          backend_start_ms, warmup_ms, pyodide_version, pyodide_from_snapshot (booted from the
//                          last visit's memory snapshot), bytecode_cached_files (.pyc files taken from the cache; 0 on
//                          a first visit; see static/startup_cache.js),
//                          timings: {worker_start_ms (navigation start to the worker's start), config_ms,
//                          pyodide_boot_ms, packages_ms, engine_install_ms, bytecode_restore_ms, import_ms,
//                          engine_start_ms},
//                          ready_ms (since navigation start)}; rejects with the reason if the runtime cannot start.
//                          restart() replaces it with the new runtime's.
//   runPython(code)        Promise -> the value of the last expression as JSON-able data; top-level `await`
//                          works, `pe` (py_engine) and `np` are predefined and names persist between runs. Tensors
//                          and numpy arrays become {shape, dtype, values} (values nested lists; a disposed tensor
//                          gives {shape, dtype, disposed: true}), numpy scalars numbers, tuples lists, dict keys
//                          strings, objects with to_dict() and dataclasses their fields, anything else its repr().
//                          Rejects with an Error whose message is the Python traceback (from the code's first
//                          line on, without Pyodide's and asyncio's frames). What it prints goes to the Output log.
//   run()                  Promise -> {ok, ms}: runs the editor's code as the Run button does: the Output log is
//                          cleared, shows what the code prints while it runs, then its last value (tensors as a
//                          table with shape, dtype and statistics) or its traceback (the line is marked in the editor)
//   idle()                 Promise, resolved once no code runs and the Run button's last result is shown
//   running                the id of the run in progress (runPython or run), else null; each change fires the DOM
//                          event "playground:run" with {running} as `detail`
//   setCode(text)          puts `text` in the editor as the user's code (kept across reloads); the Examples gallery
//                          (static/examples.js) uses it
//   stop()                 Promise -> true if a run was asked to stop: KeyboardInterrupt in the running Python, within
//                          moments (at an `await` too); `with pe.scope()` and tidy() release what they hold. Needs
//                          the page to be cross-origin isolated (crossOriginIsolated, COOP/COEP from the server)
//                          to interrupt code that does not await; false when no run is in progress or it cannot
//   restart()              Promise -> like ready: terminates the worker (every pending call rejects) and boots a fresh
//                          runtime; names, tensors and the loaded classifier are gone
//   clearNamespace()       Promise -> {names, tensors}: forgets the names the code defined and disposes every tensor
//                          and variable except the classifier's
//   share()                Promise -> the URL of the editor's code (in its #code= fragment), also put in the address
//                          bar and, when allowed, the clipboard. Opening it shows the code and runs nothing.
//   memory()               Promise -> pe.memory().to_dict(): num_tensors, num_data_buffers, num_bytes,
//                          num_bytes_in_gpu, num_bytes_in_gpu_allocated, unreliable, reasons
//   stats()                Promise -> pe.stats(): the backend's counters (dispatches, submits, pipeline_compiles, ...)
//   info()                 Promise -> the active backend: {backend, adapter, fallback_reason, details}
//   setBackend(name)       Promise -> like `ready`'s info for the new backend (falls back to numpy with the reason)
//   classify(urlOrBlob)    Promise -> [{index, label, probability}] x5, best first: the image (a Blob/File, or a URL:
//                          same-origin, data: or blob:) decoded by the browser, its RGBA pixels classified by
//                          EfficientNet-Lite0 in the worker (loaded and warmed up on first use); photos with a short
//                          side over 512 px are first shrunk by the browser. lastClassification then holds {top,
//                          timings: {preprocess_ms, forward_ms, readback_ms}, backend, load, image: {original, uploaded}}
//   loadClassifier()       Promise -> {download_ms, download_bytes, load_ms, warmup_ms, cached}: load and warm up
//                          the classifier now (zeros and cached: true once loaded)
//   model                  null (the server's default classifier) or the URL of the model folder that classify() and
//                          loadClassifier() use; the Classify panel's model picker (static/model_picker.js) sets it
//   teach                  the Teach panel (static/teach.js; transfer learning on EfficientNet-Lite0's 1280 pooled
//                          features, in the worker): classes() -> names; addClass(name?) -> index; removeClass(i);
//                          addExample(classIndex, urlOrBlob) -> {counts}; embed(urlOrBlob) -> Float32Array [1280];
//                          train({epochs}) -> {classes, examples, history} ("training" events per epoch meanwhile);
//                          predict(urlOrBlob) -> [{index, label, probability}] for every class, best first;
//                          exportModel() -> {modelJson, weights: ArrayBuffer, files: [{name, blob}]} (the TF.js layers
//                          files model.save wrote; class names in modelJson.userDefinedMetadata.teach); download()
//                          saves those files; loadModel([File | {name, blob}]) loads such files back -> {classes}
//   state                  "starting" | "ready" | "failed"
//   startupCache           undefined until a boot that found its snapshot or bytecode missing from the browser's
//                          cache has stored them for the next boot: then {snapshot_bytes?, bytecode_files?} (what was
//                          stored) or {error}
//   lastMemory             the latest memory() snapshot, updated after every request (null before the first); each
//                          also fires the DOM event "playground:memory" with {memory, stats: pe.stats()} as `detail`
//   onDeviceLost           null or the reason, once the GPU device was lost
//   events(name?)          what Python code posted with pe.browser.post(name, data), oldest first (the last 2000);
//                          each also fires the DOM event "playground:" + name with the data as `detail`. They
//                          arrive while the code still runs: pe.browser.training_progress() is a fit callback
//                          posting "training" events {kind, epoch, epochs, batch, logs, memory} per epoch
// Requests are answered one at a time in order (a memory() sent during a long run waits for it); stop() is not a
// request: it reaches the running code at once.
//
// The editor is CodeMirror (web/, bundled into static/vendor/ by web/build.sh); until it has loaded, or if it cannot,
// the page's plain text box serves. The code is kept in localStorage across reloads.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const ui = {
    classify: {
      file: $("classify-file"), drop: $("classify-drop"), preview: $("classify-preview"), progress: $("classify-progress"),
      status: $("classify-status"), results: $("classify-results"), samples: document.querySelectorAll("[data-sample]"),
    },
    status: $("status"), boot: $("boot-progress"), notice: $("notice"), editor: $("editor"), code: $("code"), run: $("run"), stop: $("stop"),
    share: $("share"), clear: $("clear-namespace"), restart: $("restart"), runState: $("run-state"),
    backend: $("backend"), memory: {
      tensors: $("mem-tensors"), buffers: $("mem-buffers"), bytes: $("mem-bytes"), gpu: $("mem-gpu"), pool: $("mem-pool"),
    },
  };
  const output = window.createOutputLog($("output"));

  const boot = window.playgroundBoot; // static/boot.js: the first worker, started before this script ran

  let worker = null;
  let interruptBuffer = null; // shared with the worker: Stop writes SIGINT (2) into it
  let nextId = 1;
  const waiting = new Map();
  function request(op, args = {}, transfer = []) {
    return new Promise((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, { resolve, reject });
      worker.postMessage({ id, op, ...args }, transfer);
    });
  }

  // What Python posted with pe.browser.post(name, data), oldest first; kept bounded so a long fit cannot grow it.
  const posted = [];
  const MAX_POSTED = 2000;

  let settleReady;
  let restartedAt = null; // when Restart was pressed, while the new runtime boots

  const playground = {
    ready: null,
    startupCache: undefined,
    runPython: (code) => request("run", { code: String(code) }),
    run: () => runFromUI(),
    idle: () => idle(),
    running: null,
    stop: () => stop(),
    restart: () => restart(),
    clearNamespace: () => clearNamespace(),
    share: () => share(),
    memory: () => request("memory"),
    stats: () => request("stats"),
    info: () => request("info"),
    setBackend: (name) => request("setBackend", { name }).then((info) => { showInfo(info); return info; }),
    classify: (image) => classifyImage(image),
    loadClassifier: () => request("loadClassifier", { model: playground.model }),
    model: null,
    setCode: (text) => {
      editor.setCode(String(text));
      codeEdited(String(text));
    },
    state: "starting",
    lastMemory: null,
    lastClassification: null,
    onDeviceLost: null,
    events: (name) => posted.filter((e) => name === undefined || e.name === name).map((e) => e.data),
  };
  window.playground = playground;
  playground.teach = window.createTeachPanel({ host: $("teach"), request, decodeImage });

  function startWorker() {
    playground.state = "starting";
    playground.running = null;
    playground.ready = new Promise((resolve, reject) => { settleReady = { resolve, reject }; });
    playground.ready.catch(() => {}); // the reason is shown in the status line; callers still get the rejection
    setRuntimeControls();
    const onerror = (event) => {
      if (playground.state !== "starting") return; // after boot, failures reach the request that caused them
      bootFailed(event.message || "the worker failed to load");
    };
    worker = boot.take(onWorkerMessage, onerror);
    if (!worker) {
      worker = new Worker(boot.url);
      worker.onmessage = onWorkerMessage;
      worker.onerror = onerror;
    }
    // Only a cross-origin-isolated page may share memory with its worker; elsewhere Stop reaches awaits only.
    interruptBuffer = self.crossOriginIsolated ? new Int32Array(new SharedArrayBuffer(4)) : null;
    if (interruptBuffer) worker.postMessage({ op: "interrupt", buffer: interruptBuffer });
  }

  function bootFailed(reason) {
    playground.state = "failed";
    setStatus("The Python runtime could not start: " + reason, "failed");
    settleReady.reject(new Error(reason));
    setRuntimeControls();
  }

  function onWorkerMessage({ data: m }) {
    if (m.id !== undefined) {
      const w = waiting.get(m.id);
      waiting.delete(m.id);
      if (m.ok) w.resolve(m.value);
      else w.reject(new Error(m.error));
      return;
    }
    switch (m.event) {
      case "status": showBootProgress(m); break;
      case "ready": {
        const { time_origin: workerOrigin, ...rest } = m.info;
        const info = { ...rest, ready_ms: performance.now() };
        info.timings = { worker_start_ms: workerOrigin - performance.timeOrigin, ...rest.timings };
        if (restartedAt !== null) info.restart_ms = performance.now() - restartedAt;
        restartedAt = null;
        ui.boot.hidden = true;
        showInfo(info);
        playground.state = "ready";
        settleReady.resolve(info);
        setRuntimeControls();
        break;
      }
      case "failed": bootFailed(m.error); break;
      case "cache-stored": playground.startupCache = m.error ? { error: m.error } : m.stored; break;
      case "run":
        playground.running = m.running ? m.run : null;
        setRuntimeControls();
        window.dispatchEvent(new CustomEvent("playground:run", { detail: { running: playground.running } }));
        break;
      case "output": output.print(m.chunks, m.dropped); break;
      case "memory":
        showMemory(m.value);
        window.dispatchEvent(new CustomEvent("playground:memory", { detail: { memory: m.value, stats: m.stats } }));
        break;
      case "python":
        posted.push({ name: m.name, data: m.data });
        if (posted.length > MAX_POSTED) posted.splice(0, posted.length - MAX_POSTED);
        if (m.name === "training") showTraining(m.data);
        window.dispatchEvent(new CustomEvent("playground:" + m.name, { detail: m.data }));
        break;
      case "classifier-progress": showClassifierProgress(m); break;
      case "device-lost":
        playground.onDeviceLost = m.reason;
        ui.notice.textContent = `The GPU device was lost (${m.reason}). New work runs on numpy; switch back to webgpu to get a new device.`;
        ui.notice.hidden = false;
        break;
    }
  }

  // Run is offered while the runtime is ready and nothing runs; Stop while something runs.
  function setRuntimeControls() {
    const ready = playground.state === "ready";
    const stopHadFocus = document.activeElement === ui.stop;
    ui.run.disabled = !ready || playground.running !== null;
    ui.stop.disabled = playground.running === null;
    // a disabled button loses focus to the page's body: a keyboard user who pressed Stop continues from Run
    if (stopHadFocus && ui.stop.disabled && !ui.run.disabled) ui.run.focus();
    ui.clear.disabled = ui.backend.disabled = !ready;
    ui.restart.disabled = playground.state === "starting";
  }

  async function stop() {
    const id = playground.running;
    if (id === null) return false;
    if (interruptBuffer) Atomics.store(interruptBuffer, 0, 2); // Python checks it as it executes
    else output.note("Stopping at the code's next await: this page is not cross-origin isolated, so Stop cannot interrupt code that never awaits. If it does not end, press Restart.");
    worker.postMessage({ op: "stop", id }); // and the worker cancels a run that waits at an await
    return true;
  }

  function restart() {
    restartedAt = performance.now();
    worker.terminate();
    for (const { reject } of waiting.values()) reject(new Error("the Python runtime was restarted"));
    waiting.clear();
    output.note("Restarting the Python runtime: names, tensors and the classifier are gone.");
    setStatus("Restarting the Python runtime...", "");
    clearMemory();
    startWorker();
    // the new runtime's memory (nothing but the engine's own), and its counters for the Memory lab
    playground.ready.then(() => request("memory")).catch(() => {});
    return playground.ready;
  }

  async function clearNamespace() {
    const { names, tensors } = await request("clearNamespace");
    output.note(`Namespace cleared: ${names} names forgotten, ${tensors} tensors disposed.`);
    return { names, tensors };
  }

  function setStatus(text, kind) {
    ui.status.textContent = text;
    ui.status.className = "status " + kind;
  }

  // 999.6 ms rounds to "1.0 s", not "1000 ms"
  const ms = (x) => (Math.round(x) >= 1000 ? (x / 1000).toFixed(1) + " s" : Math.round(x) + " ms");

  function showInfo(info) {
    const parts = [`Backend: ${info.backend}`];
    if (info.adapter) parts.push(`adapter: ${[info.adapter.vendor, info.adapter.architecture, info.adapter.description].filter(Boolean).join(" ") || "unknown"}`);
    if (info.warmup_ms !== undefined) parts.push(`warm-up: ${ms(info.warmup_ms)}`);
    if (info.restart_ms !== undefined) parts.push(`restarted in ${ms(info.restart_ms)}`);
    else if (info.ready_ms !== undefined) parts.push(`ready in ${ms(info.ready_ms)}`);
    let text = parts.join(" · ");
    if (info.fallback_reason) text += ` — running on numpy because ${info.fallback_reason}`;
    else if (info.default_reason) text += ` — ${info.default_reason}. Switch in the Backend menu.`;
    setStatus(text, "ready");
    ui.backend.value = info.backend;
    if (info.backend === "webgpu") ui.notice.hidden = true;
  }

  const bytes = (n) => (n < 1024 ? n + " B" : n < 1 << 20 ? (n / 1024).toFixed(1) + " KiB" : (n / (1 << 20)).toFixed(1) + " MiB");

  // The Memory panel and the lab's counters of a runtime that is gone, until the new one reports.
  function clearMemory() {
    playground.lastMemory = null;
    for (const value of Object.values(ui.memory)) value.textContent = "-";
    $("training-status").hidden = true;
    window.dispatchEvent(new CustomEvent("playground:memory-reset"));
  }

  // The boot's phases in order (worker.js's timed() names); a boot from the cache skips some.
  const BOOT_PHASES = ["config", "pyodide boot", "bytecode restore", "installed restore", "packages", "engine install",
    "import", "engine start"];

  function showBootProgress({ text, phase, downloaded }) {
    const step = BOOT_PHASES.indexOf(phase);
    ui.boot.hidden = false;
    ui.boot.max = BOOT_PHASES.length;
    if (step >= 0) ui.boot.value = step;
    let line = `Starting the Python runtime: ${text}`;
    if (downloaded) line += ` (${bytes(downloaded)} downloaded)`;
    setStatus(line, "");
  }

  // The classifier's weights download for Classify or for Teach: the bar shows while they do, the line says when
  // they are in (the Teach panel reports its own work).
  function showClassifierProgress({ loaded, total }) {
    const done = loaded >= total;
    ui.classify.progress.hidden = done;
    ui.classify.progress.max = total || 1;
    ui.classify.progress.value = loaded;
    ui.classify.status.className = "status";
    ui.classify.status.textContent = done ? `EfficientNet-Lite0 downloaded (${bytes(total)}).`
      : `Loading EfficientNet-Lite0: ${bytes(loaded)} of ${bytes(total)}`;
  }

  function showMemory(m) {
    playground.lastMemory = m;
    ui.memory.tensors.textContent = m.num_tensors;
    ui.memory.buffers.textContent = m.num_data_buffers;
    ui.memory.bytes.textContent = bytes(m.num_bytes);
    ui.memory.gpu.textContent = bytes(m.num_bytes_in_gpu);
    ui.memory.pool.textContent = bytes(m.num_bytes_in_gpu_allocated);
  }

  // One line per fit epoch (or batch) posted by pe.browser.training_progress(): where training is, and its counts.
  function showTraining(p) {
    const line = $("training-status");
    const at = p.kind === "batch" ? `epoch ${p.epoch + 1}/${p.epochs}, batch ${p.batch + 1}` : `epoch ${p.epoch + 1}/${p.epochs}`;
    const logs = Object.entries(p.logs || {}).filter(([k, v]) => k !== "batch" && k !== "size" && typeof v === "number");
    line.textContent = `Training: ${at} · ${logs.map(([k, v]) => `${k} ${v.toPrecision(4)}`).join(" · ")} · ${p.memory.num_tensors} tensors`;
    line.hidden = false;
  }

  // ---- the code: editor, persistence, share links ------------------------------------------------------------

  const STORAGE_KEY = "py_engine.playground.code";
  const SHARE_PREFIX = "#code=";

  const base64url = {
    encode(text) {
      let binary = "";
      for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
      return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    },
    decode(text) {
      const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
      return new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
    },
  };

  function sharedCode() {
    if (!location.hash.startsWith(SHARE_PREFIX)) return null;
    try {
      return base64url.decode(location.hash.slice(SHARE_PREFIX.length));
    } catch (error) {
      output.note(`The link's code could not be read (${error.message}); showing your own code instead.`, "failed");
      return null;
    }
  }

  function savedCode() {
    try {
      return localStorage.getItem(STORAGE_KEY);
    } catch {
      return null; // storage disabled: start from the example
    }
  }

  // After the user's first edit the code is theirs: the share fragment goes, so a reload shows what they typed.
  function codeEdited(code) {
    try {
      localStorage.setItem(STORAGE_KEY, code);
    } catch {
      // storage full or disabled: the code lives only in the page
    }
    if (location.hash.startsWith(SHARE_PREFIX)) history.replaceState(null, "", location.pathname + location.search);
  }

  // Until CodeMirror has loaded (or when it cannot), the plain text box of index.html is the editor.
  let editor = {
    get code() { return ui.code.value; },
    setCode(text) { ui.code.value = text; },
    focus() { ui.code.focus(); },
    markError() {},
  };
  ui.code.addEventListener("input", () => codeEdited(ui.code.value));
  ui.code.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      runFromUI();
    }
  });

  const shared = sharedCode();
  const initialCode = shared ?? savedCode();
  if (initialCode !== null) editor.setCode(initialCode);
  if (shared !== null) output.note("This link holds the code shown in the editor. Nothing has run: press Run to run it.");

  async function loadEditor() {
    const response = await fetch("vendor/editor.json", { cache: "no-cache" });
    if (!response.ok) throw new Error(`vendor/editor.json: HTTP ${response.status} (build it with web/build.sh)`);
    const { createEditor } = await import(new URL((await response.json()).editor, location.href).href);
    const hadFocus = document.activeElement === ui.code;
    const code = ui.code.value;
    ui.code.remove();
    editor = createEditor({ host: ui.editor, doc: code, label: "Python code", id: "code", onRun: runFromUI, onChange: codeEdited });
    if (hadFocus) editor.focus();
  }

  async function share() {
    const url = new URL(location.href);
    url.hash = SHARE_PREFIX.slice(1) + base64url.encode(editor.code);
    history.replaceState(null, "", url.href);
    try {
      await navigator.clipboard.writeText(url.href);
      output.note("Link copied to the clipboard: opening it shows this code, and runs it only when Run is pressed.");
    } catch {
      output.note("The link is in the address bar: opening it shows this code, and runs it only when Run is pressed.");
    }
    return url.href;
  }

  // ---- running the editor's code ----------------------------------------------------------------------------

  let ticker = null;
  let shown = null; // the Run button's run until its result is shown (a little after the worker says it ended)

  // Resolves once no code runs and the Run button's last result is shown.
  async function idle() {
    for (;;) {
      if (shown) await shown;
      else if (playground.running !== null) await new Promise((resolve) => window.addEventListener("playground:run", resolve, { once: true }));
      else return;
    }
  }

  function runFromUI() {
    if (playground.state !== "ready" || playground.running !== null || shown) return Promise.resolve({ ok: false, ms: 0 });
    const run = runAndShow();
    shown = run.finally(() => { shown = null; });
    return run;
  }

  async function runAndShow() {
    output.clear();
    editor.markError(null);
    const start = performance.now();
    ui.runState.textContent = "Running...";
    clearInterval(ticker);
    ticker = setInterval(() => { ui.runState.textContent = `Running... ${ms(performance.now() - start)}`; }, 250);
    let outcome;
    try {
      outcome = await request("exec", { code: editor.code });
    } catch (error) {
      outcome = { ok: false, error: { traceback: error.message, line: null } };
    } finally {
      clearInterval(ticker);
    }
    const took = performance.now() - start;
    if (outcome.ok) {
      output.value(outcome.value);
      ui.runState.textContent = `Done in ${ms(took)}`;
    } else {
      output.error(outcome.error);
      editor.markError(outcome.error.line);
      ui.runState.textContent = `${outcome.error.type || "Failed"} after ${ms(took)}`;
    }
    return { ok: outcome.ok, ms: took };
  }

  // Photos are shrunk by the browser (antialiased) until their short side is at most this, before upload: the
  // GPU's bilinear resize to 224 px reads only 4 of every 18x18 pixels of a 4000 px photo (aliasing), and its
  // int32 pixels would need ~150 MB of GPU memory. Smaller images go to the GPU as they are.
  const MAX_SHORT_SIDE = 512;

  // An image as RGBA pixels. Blobs go through createImageBitmap; URLs through an <img> (the page's CSP allows
  // images from self, data: and blob:, but fetch() only from self).
  // Why an http(s) URL gave no image, when the server said so ("404 Not Found"); null for anything else.
  async function httpStatus(image) {
    if (image instanceof Blob || !/^https?:|^\/|^[^:]*$/i.test(String(image))) return null;
    try {
      const response = await fetch(String(image), { method: "HEAD" });
      return response.ok ? null : `${response.status} ${response.statusText}`.trim();
    } catch {
      return null;
    }
  }

  // A camera's frame: a <video> (its current frame), a canvas or an ImageBitmap, drawn as it is.
  const isFrame = (image) => image instanceof HTMLVideoElement || image instanceof HTMLCanvasElement || image instanceof ImageBitmap;

  async function decodeImage(image) {
    const options = { premultiplyAlpha: "none", colorSpaceConversion: "none" };
    if (isFrame(image)) return pixelsOf(await createImageBitmap(image, options), null);
    const what = image instanceof File ? image.name
      : image instanceof Blob ? `a ${image.type || "untyped"} blob` : String(image).slice(0, 100);
    // SVG is vector art: refused the same way whether it comes as a file, a blob or a data: URL
    const svg = image instanceof Blob ? image.type === "image/svg+xml" : /^data:image\/svg\+xml[;,]/i.test(String(image));
    if (svg) throw new Error(`${what}: SVG images are not supported; use a PNG, JPEG or WebP file`);
    let source;
    try {
      if (image instanceof Blob) {
        source = await createImageBitmap(image, options);
      } else {
        source = new Image();
        source.src = String(image);
        await source.decode();
      }
    } catch (error) {
      const status = await httpStatus(image);
      if (status) throw new Error(`${what}: the server answered ${status}; check the address`);
      throw new Error(`${what}: the browser could not decode it as an image; use a PNG, JPEG or WebP file (${error.message})`);
    }
    return pixelsOf(source, options);
  }

  // RGBA pixels of a decoded image (closed afterwards), shrunk first as MAX_SHORT_SIDE says.
  async function pixelsOf(source, options) {
    const original = { width: source.width, height: source.height };
    const scale = Math.min(1, MAX_SHORT_SIDE / Math.min(source.width, source.height));
    if (scale < 1) {
      const resized = await createImageBitmap(source, {
        ...options, resizeWidth: Math.round(source.width * scale), resizeHeight: Math.round(source.height * scale),
        resizeQuality: "high",
      });
      if (source.close) source.close();
      source = resized;
    }
    const width = source.width, height = source.height;
    const canvas = typeof OffscreenCanvas === "function" ? new OffscreenCanvas(width, height)
      : Object.assign(document.createElement("canvas"), { width, height });
    const context = canvas.getContext("2d", { willReadFrequently: true });
    context.drawImage(source, 0, 0);
    if (source.close) source.close();
    return { pixels: context.getImageData(0, 0, width, height).data.buffer, width, height, original };
  }

  async function classifyImage(image) {
    const { pixels, width, height, original } = await decodeImage(image);
    const result = await request("classify", { pixels, width, height, model: playground.model }, [pixels]);
    result.image = { original, uploaded: { width, height } };
    playground.lastClassification = result;
    showClassification(result);
    return result.top;
  }

  function showClassification({ top, timings: t, backend, load, image }) {
    ui.classify.progress.hidden = true;
    ui.classify.results.replaceChildren(...top.map(({ index, label, probability }) => {
      const row = document.createElement("li");
      row.textContent = `${label} (${index}): ${(probability * 100).toFixed(1)}%`;
      return row;
    }));
    // On a GPU, forward only records the dispatches; the readback waits for the GPU to run them, and loading the
    // model waits for its pipelines' compiles (the warm-up). numpy and wasm compute on the host in forward: their
    // readback is a copy, and they compile nothing.
    const onGpu = backend === "webgpu";
    const readback = onGpu ? "readback (with the GPU's work)" : "readback";
    let text = `${backend}: preprocess ${ms(t.preprocess_ms)} · forward ${ms(t.forward_ms)} · ${readback} ${ms(t.readback_ms)}`;
    const { original: o, uploaded: u } = image;
    if (o.width !== u.width) text = `${o.width}x${o.height} shrunk to ${u.width}x${u.height} · ` + text;
    if (load && !load.cached) {
      text += ` · model loaded in ${ms(load.load_ms)} (weights downloaded in ${ms(load.download_ms)})`;
      if (onGpu) text += `, warm-up ${ms(load.warmup_ms)}`;
    }
    ui.classify.status.textContent = text;
  }

  // The last line of a Python traceback is the exception and its message; the whole traceback goes to the console.
  const lastLine = (text) => text.trim().split("\n").pop();

  async function classifyFromUI(image) {
    if (!image) return;
    if (ui.classify.preview.src.startsWith("blob:")) URL.revokeObjectURL(ui.classify.preview.src);
    ui.classify.preview.src = URL.createObjectURL(image);
    ui.classify.preview.hidden = false;
    ui.classify.status.className = "status";
    ui.classify.status.textContent = "Classifying...";
    ui.classify.results.replaceChildren();
    try {
      await classifyImage(image);
    } catch (error) {
      console.error(error);
      ui.classify.progress.hidden = true;
      ui.classify.preview.hidden = true; // not a broken-image icon
      ui.classify.status.className = "status failed";
      ui.classify.status.textContent = "Could not classify the image: " + lastLine(error.message);
    }
  }

  // A bundled sample is fetched from the page's own server, then classified like a chosen file.
  async function classifySample(url) {
    try {
      const response = await fetch(url);
      if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
      await classifyFromUI(await response.blob());
    } catch (error) {
      ui.classify.status.className = "status failed";
      ui.classify.status.textContent = "Could not load the sample: " + error.message;
    }
  }

  ui.classify.file.addEventListener("change", () => classifyFromUI(ui.classify.file.files[0]));
  ui.classify.drop.addEventListener("dragover", (event) => { event.preventDefault(); ui.classify.drop.classList.add("over"); });
  ui.classify.drop.addEventListener("dragleave", () => ui.classify.drop.classList.remove("over"));
  ui.classify.drop.addEventListener("drop", (event) => {
    event.preventDefault();
    ui.classify.drop.classList.remove("over");
    classifyFromUI(event.dataTransfer.files[0]);
  });

  for (const button of ui.classify.samples) button.addEventListener("click", () => classifySample(button.dataset.sample));

  ui.run.addEventListener("click", () => runFromUI());
  ui.stop.addEventListener("click", () => stop());
  ui.restart.addEventListener("click", () => restart().catch(() => {}));
  ui.clear.addEventListener("click", () => clearNamespace().catch((error) => output.note(error.message, "failed")));
  ui.share.addEventListener("click", () => share());
  ui.backend.addEventListener("change", async () => {
    ui.backend.disabled = true;
    setStatus(`Starting ${ui.backend.value}...`, "");
    try {
      await playground.setBackend(ui.backend.value);
    } catch (error) {
      setStatus("Could not switch the backend: " + error.message, "failed");
    } finally {
      ui.backend.disabled = playground.state !== "ready";
    }
  });

  // Where the page is not cross-origin isolated (static/isolation.js), what Stop can and cannot interrupt.
  function showIsolation({ isolated, reason }) {
    const notice = $("stop-notice");
    notice.hidden = isolated || !reason;
    notice.textContent = `Stop is limited here: this page is not cross-origin isolated (${reason}). Stop ends code that ` +
      "waits at an await (asyncio.sleep, a readback), not a loop that never awaits: Restart ends that. " +
      "The project's server (python -m app serve) and hosts that read the export's _headers file send the headers.";
  }
  showIsolation(window.playgroundIsolation);
  window.addEventListener("playground:isolation", (event) => showIsolation(event.detail));

  startWorker();
  loadEditor().catch((error) => {
    console.error(error);
    const notice = $("editor-notice");
    notice.textContent = `The code editor could not load (${error.message}); the plain text box serves instead.`;
    notice.hidden = false;
  });
})();
