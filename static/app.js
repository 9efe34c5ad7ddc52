// The playground page: starts the Pyodide worker, exposes window.playground, runs the plain UI.
//
// window.playground (for the devtools console and the e2e tests; every call goes to the worker):
//   ready                  Promise -> {backend: "webgpu"|"numpy", adapter: {vendor, architecture, device,
//                          description, adapter_type} | null, fallback_reason: str|null, details: pe.backend_info(),
//                          backend_start_ms, warmup_ms, pyodide_version,
//                          timings: {pyodide_boot_ms, packages_ms, engine_install_ms, engine_start_ms},
//                          ready_ms (since navigation start)}; rejects with the reason if the runtime cannot start
//   runPython(code)        Promise -> the value of the last expression as JSON-able data; top-level `await`
//                          works (pyodide.runPythonAsync), `pe` (py_engine) and `np` are predefined and names
//                          persist between runs. Tensors and numpy arrays become {shape, dtype, values} (values
//                          nested lists; a disposed tensor gives {shape, dtype, disposed: true}), numpy scalars
//                          numbers, tuples lists, dict keys strings, objects with to_dict() that dict, anything
//                          else its repr(). Rejects with an Error whose message is the Python traceback.
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
//   state                  "starting" | "ready" | "failed"
//   lastMemory             the latest memory() snapshot, updated after every request (null before the first)
//   onDeviceLost           null or the reason, once the GPU device was lost
//   events(name?)          what Python code posted with pe.browser.post(name, data), oldest first (the last 2000);
//                          each also fires the DOM event "playground:" + name with the data as `detail`. They
//                          arrive while the code still runs: pe.browser.training_progress() is a fit callback
//                          posting "training" events {kind, epoch, epochs, batch, logs, memory} per epoch
// Requests are answered one at a time in order (a memory() sent during a long run waits for it).
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const ui = {
    classify: {
      file: $("classify-file"), drop: $("classify-drop"), preview: $("classify-preview"), progress: $("classify-progress"),
      status: $("classify-status"), results: $("classify-results"), samples: document.querySelectorAll("[data-sample]"),
    },
    status: $("status"), notice: $("notice"), code: $("code"), run: $("run"), output: $("output"),
    backend: $("backend"), memory: {
      tensors: $("mem-tensors"), buffers: $("mem-buffers"), bytes: $("mem-bytes"), gpu: $("mem-gpu"), pool: $("mem-pool"),
    },
  };

  const workerURL = new URL("worker.js", location.href);
  const requested = new URLSearchParams(location.search).get("backend");
  if (requested) workerURL.searchParams.set("backend", requested);
  const worker = new Worker(workerURL);

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
  const ready = new Promise((resolve, reject) => { settleReady = { resolve, reject }; });

  const playground = {
    ready,
    runPython: (code) => request("run", { code: String(code) }),
    memory: () => request("memory"),
    stats: () => request("stats"),
    info: () => request("info"),
    setBackend: (name) => request("setBackend", { name }).then((info) => { showInfo(info); return info; }),
    classify: (image) => classifyImage(image),
    loadClassifier: () => request("loadClassifier"),
    state: "starting",
    lastMemory: null,
    lastClassification: null,
    onDeviceLost: null,
    events: (name) => posted.filter((e) => name === undefined || e.name === name).map((e) => e.data),
  };
  window.playground = playground;

  worker.onmessage = ({ data: m }) => {
    if (m.id !== undefined) {
      const w = waiting.get(m.id);
      waiting.delete(m.id);
      if (m.ok) w.resolve(m.value);
      else w.reject(new Error(m.error));
      return;
    }
    switch (m.event) {
      case "status": setStatus(m.text, ""); break;
      case "ready": {
        const info = { ...m.info, ready_ms: performance.now() };
        showInfo(info);
        ui.run.disabled = ui.backend.disabled = false;
        playground.state = "ready";
        settleReady.resolve(info);
        break;
      }
      case "failed":
        playground.state = "failed";
        setStatus("The Python runtime could not start: " + m.error, "failed");
        settleReady.reject(new Error(m.error));
        break;
      case "memory": showMemory(m.value); break;
      case "python":
        posted.push({ name: m.name, data: m.data });
        if (posted.length > MAX_POSTED) posted.splice(0, posted.length - MAX_POSTED);
        if (m.name === "training") showTraining(m.data);
        window.dispatchEvent(new CustomEvent("playground:" + m.name, { detail: m.data }));
        break;
      case "classifier-progress":
        ui.classify.progress.hidden = false;
        ui.classify.progress.max = m.total || 1;
        ui.classify.progress.value = m.loaded;
        ui.classify.status.textContent = `Loading EfficientNet-Lite0: ${bytes(m.loaded)} of ${bytes(m.total)}`;
        break;
      case "device-lost":
        playground.onDeviceLost = m.reason;
        ui.notice.textContent = `The GPU device was lost (${m.reason}). New work runs on numpy; switch back to webgpu to get a new device.`;
        ui.notice.hidden = false;
        break;
    }
  };
  worker.onerror = (event) => {
    if (playground.state !== "starting") return; // after boot, failures reach the request that caused them
    const reason = event.message || "the worker failed to load";
    playground.state = "failed";
    setStatus("The Python runtime could not start: " + reason, "failed");
    settleReady.reject(new Error(reason));
  };

  function setStatus(text, kind) {
    ui.status.textContent = text;
    ui.status.className = "status " + kind;
  }

  const ms = (x) => (x >= 1000 ? (x / 1000).toFixed(1) + " s" : Math.round(x) + " ms");

  function showInfo(info) {
    const parts = [`Backend: ${info.backend}`];
    if (info.adapter) parts.push(`adapter: ${[info.adapter.vendor, info.adapter.architecture, info.adapter.description].filter(Boolean).join(" ") || "unknown"}`);
    if (info.warmup_ms !== undefined) parts.push(`warm-up: ${ms(info.warmup_ms)}`);
    if (info.ready_ms !== undefined) parts.push(`ready in ${ms(info.ready_ms)}`);
    let text = parts.join(" · ");
    if (info.fallback_reason) text += ` — running on numpy because ${info.fallback_reason}`;
    setStatus(text, "ready");
    ui.backend.value = info.backend;
    if (info.backend === "webgpu") ui.notice.hidden = true;
  }

  const bytes = (n) => (n < 1024 ? n + " B" : n < 1 << 20 ? (n / 1024).toFixed(1) + " KiB" : (n / (1 << 20)).toFixed(1) + " MiB");

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

  // Indented JSON with arrays of plain values on one line, so tensors stay readable.
  function pretty(value) {
    return JSON.stringify(value, null, 2).replace(/\[([^[\]{}]*)\]/g, (_, body) => `[${body.replace(/\n\s*/g, " ").trim()}]`);
  }

  async function runCode() {
    ui.run.disabled = true;
    ui.output.className = "output";
    ui.output.textContent = "running...";
    const start = performance.now();
    try {
      const value = await playground.runPython(ui.code.value);
      const text = value === null ? "None" : pretty(value);
      ui.output.textContent = `${text.length > 20000 ? text.slice(0, 20000) + "\n..." : text}\n\n(${ms(performance.now() - start)})`;
    } catch (error) {
      ui.output.className = "output error";
      ui.output.textContent = error.message;
    } finally {
      ui.run.disabled = false;
    }
  }

  // Photos are shrunk by the browser (antialiased) until their short side is at most this, before upload: the
  // GPU's bilinear resize to 224 px reads only 4 of every 18x18 pixels of a 4000 px photo (aliasing), and its
  // int32 pixels would need ~150 MB of GPU memory. Smaller images go to the GPU as they are.
  const MAX_SHORT_SIDE = 512;

  // An image as RGBA pixels. Blobs go through createImageBitmap; URLs through an <img> (the page's CSP allows
  // images from self, data: and blob:, but fetch() only from self).
  async function decodeImage(image) {
    const options = { premultiplyAlpha: "none", colorSpaceConversion: "none" };
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
      const what = image instanceof File ? image.name
        : image instanceof Blob ? `a ${image.type || "untyped"} blob` : String(image).slice(0, 100);
      throw new Error(`${what}: the browser could not decode it as an image; use a PNG, JPEG or WebP file (${error.message})`);
    }
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
    const result = await request("classify", { pixels, width, height }, [pixels]);
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
    // On a GPU, forward only records the dispatches; the readback waits for the GPU to run them.
    const readback = backend === "numpy" ? "readback" : "readback (with the GPU's work)";
    let text = `${backend}: preprocess ${ms(t.preprocess_ms)} · forward ${ms(t.forward_ms)} · ${readback} ${ms(t.readback_ms)}`;
    const { original: o, uploaded: u } = image;
    if (o.width !== u.width) text = `${o.width}x${o.height} shrunk to ${u.width}x${u.height} · ` + text;
    if (load && !load.cached) text += ` · model loaded in ${ms(load.load_ms)} (weights downloaded in ${ms(load.download_ms)}), warm-up ${ms(load.warmup_ms)}`;
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

  ui.run.addEventListener("click", runCode);
  ui.code.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      if (!ui.run.disabled) runCode();
    }
  });
  ui.backend.addEventListener("change", async () => {
    ui.backend.disabled = true;
    setStatus(`Starting ${ui.backend.value}...`, "");
    try {
      await playground.setBackend(ui.backend.value);
    } catch (error) {
      setStatus("Could not switch the backend: " + error.message, "failed");
    } finally {
      ui.backend.disabled = false;
    }
  });
})();
