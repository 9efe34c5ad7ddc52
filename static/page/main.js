// The playground page's entry module: starts the Pyodide worker (worker_client.js), makes window.playground of the
// page's parts (status.js, code.js, run_controls.js, output_log.js), starts the panels registered with panels.js
// (examples, files, charts, memory lab, classify, vision, teach) and the tabs that show them (tabs.js).
//
// window.playground (for the devtools console and the e2e tests; every call goes to the worker):
//   ready                  Promise -> {backend: "webgpu"|"wasm"|"numpy", adapter: {vendor, architecture, device,
//                          description, adapter_type} | null, fallback_reason: str|null, default_reason: str|null
//                          (why the page started on wasm: no WebGPU, or WebGPU on the CPU; null on a GPU or when
//                          the address named the backend, ?backend=webgpu|wasm|numpy), details: pe.backend_info(),
//                          backend_start_ms, warmup_ms, pyodide_version, pyodide_from_snapshot (booted from the
//                          last visit's memory snapshot), bytecode_cached_files (.pyc files taken from the cache; 0 on
//                          a first visit; see static/worker/startup_cache.js),
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
//   run()                  Promise -> {ok, ms}: runs the editor's active file as the Run button does (every open
//                          file saved into the working directory first, so they import each other): the Output log is
//                          cleared, shows what the code prints while it runs, then its last value (tensors as a
//                          table with shape, dtype and statistics) or its traceback (the line is marked in the editor)
//   idle()                 Promise, resolved once no code runs and the Run button's last result is shown
//   running                the id of the run in progress (runPython or run), else null; each change fires the DOM
//                          event "playground:run" with {running} as `detail`
//   setCode(text)          puts `text` in the editor's active file as the user's code (kept across reloads)
//   openFile(name, text, {asCopy})  -> the tab's name: opens `text` in an editor tab (static/panels/code/code.js: a
//                          tab already holding it, else a new one, name_2.py where `name` is taken); the Examples
//                          gallery and the Files panel use it
//   editorFiles()          [{name, unsaved}] of the editor's tabs; activeFile: the name of the one shown (Run runs it)
//   files                  the Files panel's (static/panels/files/files_panel.js): list(), upload([File]),
//                          download(name), rename(from, to), remove(name)
//   stop()                 Promise -> true if a run was asked to stop: KeyboardInterrupt in the running Python, within
//                          moments (at an `await`, in time.sleep and input() too); `with pe.scope()` and tidy() release
//                          what they hold. Needs the page to be cross-origin isolated (crossOriginIsolated, COOP/COEP
//                          from the server) to interrupt code that does not await; false when no run is in progress.
//                          A run that has not answered a second later (KeyboardInterrupt raised) is inside a call
//                          Python cannot interrupt (a long numpy operation): the worker is restarted, as restart()
//                          does, and the Output says so
//   restart()              Promise -> like ready: terminates the worker (every pending call rejects) and boots a fresh
//                          runtime on the backend in use; names, tensors and the loaded classifier are gone, the
//                          editor's code stays
//   clearNamespace()       Promise -> {names, tensors}: forgets the names the code defined and disposes every tensor
//                          and variable except the classifier's
//   share()                Promise -> the URL of the editor's code (in its #code= fragment), also put in the address
//                          bar and, when allowed, the clipboard. Opening it shows the code and runs nothing.
//   memory()               Promise -> pe.memory().to_dict(): num_tensors, num_data_buffers, num_bytes,
//                          num_bytes_in_gpu, num_bytes_in_gpu_allocated, unreliable, reasons, num_bytes_in_threads
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
//                          loadClassifier() use; the Classify panel's model picker (static/panels/classify/model_picker.js) sets it
//   teach                  the Teach panel (static/panels/teach/teach_panel.js; transfer learning in the worker on
//                          EfficientNet-Lite0's 1280 pooled features for images, MoveNet's 51 keypoint features for
//                          poses): kind() -> "image"|"pose"; setKind(kind) (forgets the examples); classes() -> names;
//                          addClass(name?) -> index; removeClass(i); addExample(classIndex, urlOrBlob) -> {counts};
//                          embed(urlOrBlob) -> Float32Array (the features); train({epochs}) -> {classes, examples,
//                          history} ("training" events per epoch meanwhile); predict(urlOrBlob) -> [{index, label,
//                          probability}] for every class, best first; live {start(), stop(), running(), frames()}: the
//                          camera's frames predicted live; exportModel({full}) -> {modelJson, weights: ArrayBuffer,
//                          files: [{name, blob}]} (the TF.js layers files model.save wrote; full: for images the body
//                          and the head, a 224x224 image in; else the head; class names in
//                          modelJson.userDefinedMetadata.teach); download({full}) saves those files;
//                          loadModel([File | {name, blob}]) loads a head back -> {classes, kind}; clear() forgets every
//                          class; restored: Promise -> whether the last visit's classes came back (IndexedDB)
//   vision                 the Vision panel (static/panels/vision/vision_panel.js): detect(task, urlOrBlob) -> {task,
//                          results: [to_dict() of each], backend, timings: {detect_ms}, load_ms}, task "objects" |
//                          "pose" | "faces" | "hands"; start(task) and stop() the camera's live detection; running(),
//                          frames(), fps(); last: the latest answer
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
//                          and pe.browser.show_image(...) posts "image" {title, width, height, rgba, boxes, points,
//                          lines}, drawn in the Output (static/page/image_output.js)
// Requests are answered one at a time in order (a memory() sent during a long run waits for it); stop() is not a
// request: it reaches the running code at once.

import "../panels/list.js";
import { createCode } from "../panels/code/code.js";
import { createCompletion } from "../panels/code/completion.js";
import { createAsks } from "./page_asks.js";
import { imageFigure } from "./image_output.js";
import { decodeImage } from "./images.js";
import { createOutputLog } from "./output_log.js";
import { panelEvent, startPanels } from "./panels.js";
import { createRunControls } from "./run_controls.js";
import {
  clearMemory, hideBootProgress, setStatus, showBootProgress, showDeviceLost, showInfo, showMemory, showTraining,
} from "./status.js";
import { initTabs } from "./tabs.js";
import { createWorkerClient } from "./worker_client.js";

const output = createOutputLog(document.getElementById("output"));

// What Python posted with pe.browser.post(name, data), oldest first; kept bounded so a long fit cannot grow it.
const posted = [];
const MAX_POSTED = 2000;

let settleReady;
let restartedAt = null; // when Restart was pressed, while the new runtime boots
let backendInUse = null; // the backend of the runtime's last report: a restart boots on it

const client = createWorkerClient({ onEvent, onBootError: (reason) => { if (playground.state === "starting") bootFailed(reason); } });
const request = client.request;
const onAsk = createAsks(client);

const playground = {
  ready: null,
  startupCache: undefined,
  runPython: (code) => request("run", { code: String(code), pixelRatio: window.devicePixelRatio }),
  run: () => controls.run(),
  idle: () => controls.idle(),
  running: null,
  stop: () => controls.stop(),
  restart: () => restart(),
  clearNamespace: () => controls.clearNamespace(),
  share: () => code.share(),
  memory: () => request("memory"),
  stats: () => request("stats"),
  info: () => request("info"),
  setBackend: (name) => request("setBackend", { name }).then((info) => {
    backendInUse = info.backend;
    showInfo(info);
    return info;
  }),
  model: null,
  setCode: (text) => code.setCode(String(text)),
  openFile: (name, text, options) => code.openFile(String(name), String(text), options),
  editorFiles: () => code.openFiles(),
  get activeFile() { return code.activeFile; },
  state: "starting",
  lastMemory: null,
  onDeviceLost: null,
  events: (name) => posted.filter((e) => name === undefined || e.name === name).map((e) => e.data),
};
window.playground = playground;

const code = createCode({
  output, onRun: () => controls.run(), request, complete: createCompletion({ playground, request }),
});
const controls = createRunControls({
  playground, request, client, code, output, restart: (why) => restart(why), setBackend: playground.setBackend,
});
startPanels({ playground, request, decodeImage });
initTabs(playground);

function startWorker(backend) {
  playground.state = "starting";
  const wasRunning = playground.running !== null;
  playground.running = null;
  playground.ready = new Promise((resolve, reject) => { settleReady = { resolve, reject }; });
  playground.ready.catch(() => {}); // the reason is shown in the status line; callers still get the rejection
  controls.update();
  if (wasRunning) window.dispatchEvent(new CustomEvent("playground:run", { detail: { running: null } }));
  client.start(backend);
}

function bootFailed(reason) {
  playground.state = "failed";
  setStatus("The Python runtime could not start: " + reason, "failed");
  settleReady.reject(new Error(reason));
  controls.update();
}

function onEvent(m) {
  switch (m.event) {
    case "status": showBootProgress(m); break;
    case "ready": {
      const { time_origin: workerOrigin, ...rest } = m.info;
      const info = { ...rest, ready_ms: performance.now() };
      info.timings = { worker_start_ms: workerOrigin - performance.timeOrigin, ...rest.timings };
      if (restartedAt !== null) info.restart_ms = performance.now() - restartedAt;
      restartedAt = null;
      backendInUse = info.backend;
      hideBootProgress();
      showInfo(info);
      playground.state = "ready";
      settleReady.resolve(info);
      controls.update();
      break;
    }
    case "failed": bootFailed(m.error); break;
    case "cache-stored": playground.startupCache = m.error ? { error: m.error } : m.stored; break;
    case "run":
      if (!m.running) output.endInput();
      playground.running = m.running ? m.run : null;
      controls.update();
      window.dispatchEvent(new CustomEvent("playground:run", { detail: { running: playground.running } }));
      break;
    case "output": output.print(m.chunks, m.dropped); break;
    case "input": output.ask(m.prompt, (line) => client.answer(line)); break;
    case "stopping": controls.stopping(m.run); break;
    case "memory":
      playground.lastMemory = m.value;
      showMemory(m.value);
      window.dispatchEvent(new CustomEvent("playground:memory", { detail: { memory: m.value, stats: m.stats } }));
      break;
    case "python":
      posted.push({ name: m.name, data: m.data });
      if (posted.length > MAX_POSTED) posted.splice(0, posted.length - MAX_POSTED);
      if (m.name === "training") showTraining(m.data);
      if (m.name === "image") output.figure(imageFigure(m.data));
      window.dispatchEvent(new CustomEvent("playground:" + m.name, { detail: m.data }));
      break;
    case "ask": onAsk(m); break;
    case "device-lost":
      playground.onDeviceLost = m.reason;
      showDeviceLost(m.reason);
      break;
    default: panelEvent(m); // a panel's event (static/page/panels.js)
  }
}

// why: "button" (Restart, or restart() from the console) or "stuck" (a run that Stop did not end, run_controls.js)
function restart(why = "button") {
  restartedAt = performance.now();
  client.terminate();
  output.endInput();
  if (why === "stuck") {
    const cause = self.crossOriginIsolated ? "it was inside a call Python cannot interrupt (such as a long numpy operation)"
      : "this page is not cross-origin isolated, where Stop interrupts only code that awaits";
    output.note(`The program did not stop within 1.5 s of Stop: ${cause}, so the Python worker was restarted. ` +
      "Variables are gone, your code is kept.", "failed");
  } else {
    output.note("Restarting the Python runtime: names, tensors and the classifier are gone.");
  }
  setStatus("Restarting the Python runtime...", "");
  playground.lastMemory = null;
  clearMemory();
  startWorker(backendInUse);
  // the new runtime's memory (nothing but the engine's own), and its counters for the Memory lab
  playground.ready.then(() => request("memory")).catch(() => {});
  return playground.ready;
}

startWorker();
code.load().catch((error) => {
  console.error(error);
  const notice = document.getElementById("editor-notice");
  notice.textContent = `The code editor could not load (${error.message}); the plain text box serves instead.`;
  notice.hidden = false;
});
