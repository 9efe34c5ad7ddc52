// The page's side of the Pyodide worker (static/worker.js, which lists the messages): starts it (taking over the one
// static/boot.js started early), sends requests and matches their replies, hands its events on, and stops runs.

import { workerScriptOf } from "./panels.js";

export function createWorkerClient({ onEvent, onBootError }) {
  const boot = window.playgroundBoot; // static/boot.js: the first worker, started before the page's modules ran
  let worker = null;
  let interruptBuffer = null; // shared with the worker: Stop writes SIGINT (2) into it
  let nextId = 1;
  const waiting = new Map();

  // Promise -> the reply's value; a panel's request names the worker script that answers it (panels.js).
  function request(op, args = {}, transfer = []) {
    return new Promise((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, { resolve, reject });
      const script = workerScriptOf(op);
      worker.postMessage({ id, op, ...(script ? { script } : {}), ...args }, transfer);
    });
  }

  function onMessage({ data: m }) {
    if (m.id === undefined) {
      onEvent(m);
      return;
    }
    const w = waiting.get(m.id);
    waiting.delete(m.id);
    if (m.ok) w.resolve(m.value);
    else w.reject(new Error(m.error));
  }

  function start() {
    const onerror = (event) => onBootError(event.message || "the worker failed to load");
    worker = boot.take(onMessage, onerror);
    if (!worker) {
      worker = new Worker(boot.url);
      worker.onmessage = onMessage;
      worker.onerror = onerror;
    }
    // Only a cross-origin-isolated page may share memory with its worker; elsewhere Stop reaches awaits only.
    interruptBuffer = self.crossOriginIsolated ? new Int32Array(new SharedArrayBuffer(4)) : null;
    if (interruptBuffer) worker.postMessage({ op: "interrupt", buffer: interruptBuffer });
  }

  // Asks run `id` to stop; false when only an await can be interrupted (the page is not cross-origin isolated).
  function stop(id) {
    if (interruptBuffer) Atomics.store(interruptBuffer, 0, 2); // Python checks it as it executes
    worker.postMessage({ op: "stop", id }); // and the worker cancels a run that waits at an await
    return interruptBuffer !== null;
  }

  // Answers a question Python asked the page (the worker's peAsk), at once, even while a run waits for it.
  function answer(ask, outcome, transfer = []) {
    worker.postMessage({ op: "answer", ask, ...outcome }, transfer);
  }

  // Ends the worker; every pending request rejects.
  function terminate() {
    worker.terminate();
    for (const { reject } of waiting.values()) reject(new Error("the Python runtime was restarted"));
    waiting.clear();
  }

  return { request, answer, start, stop, terminate };
}
