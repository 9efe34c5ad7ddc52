// The page's side of the Pyodide worker (static/worker.js, which lists the messages): starts it (taking over the one
// static/page/boot.js started early), sends requests and matches their replies, hands its events on, stops runs and
// answers input().

import { workerScriptOf } from "./panels.js";

const INPUT = { LINE: 1, STOPPED: 2 }; // the input channel's states (static/worker.js, INPUT)
const INPUT_BYTES = 64 * 1024; // the longest line input() gets, in UTF-8 bytes

export function createWorkerClient({ onEvent, onBootError }) {
  const boot = window.playgroundBoot; // static/page/boot.js: the first worker, started before the page's modules ran
  let worker = null;
  let interruptBuffer = null; // shared with the worker: Stop writes SIGINT (2) into it
  let input = null; // {control, bytes}: the input channel, shared with the worker
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

  // Starts the worker: the early one of boot.js the first time, else a new one on `backend` (a restart keeps the
  // backend in use), or on the one boot.js picked.
  function start(backend = null) {
    const onerror = (event) => onBootError(event.message || "the worker failed to load");
    worker = boot.take(onMessage, onerror);
    if (!worker) {
      const url = new URL(boot.url);
      if (backend) url.searchParams.set("backend", backend);
      worker = new Worker(url);
      worker.onmessage = onMessage;
      worker.onerror = onerror;
    }
    // Only a cross-origin-isolated page may share memory with its worker; elsewhere Stop reaches awaits only.
    interruptBuffer = input = null;
    if (!self.crossOriginIsolated) return;
    interruptBuffer = new Int32Array(new SharedArrayBuffer(4));
    const channel = new SharedArrayBuffer(8 + INPUT_BYTES);
    input = { control: new Int32Array(channel, 0, 2), bytes: new Uint8Array(channel, 8) };
    worker.postMessage({ op: "interrupt", buffer: interruptBuffer, input: channel });
  }

  // Asks run `id` to stop; false when only an await can be interrupted (the page is not cross-origin isolated).
  function stop(id) {
    if (interruptBuffer) {
      Atomics.store(interruptBuffer, 0, 2); // Python checks it as it executes
      Atomics.notify(interruptBuffer, 0); // and time.sleep waits on it
      Atomics.store(input.control, 0, INPUT.STOPPED); // input() waits on this one
      Atomics.notify(input.control, 0);
    }
    worker.postMessage({ op: "stop", id }); // and the worker cancels a run that waits at an await
    return interruptBuffer !== null;
  }

  // Gives the waiting input() its line (cut to INPUT_BYTES).
  function answer(line) {
    const encoded = new TextEncoder().encode(line);
    let length = Math.min(encoded.length, INPUT_BYTES);
    while (length < encoded.length && (encoded[length] & 0xc0) === 0x80) length--; // not inside a character
    input.bytes.set(encoded.subarray(0, length));
    Atomics.store(input.control, 1, length);
    Atomics.store(input.control, 0, INPUT.LINE);
    Atomics.notify(input.control, 0);
  }

  // Answers a question Python asked the page (the worker's peAsk), at once, even while a run waits for it.
  function reply(ask, outcome, transfer = []) {
    worker.postMessage({ op: "answer", ask, ...outcome }, transfer);
  }

  // Ends the worker; every pending request rejects with an error marked `restarted`.
  function terminate() {
    worker.terminate();
    for (const { reject } of waiting.values()) {
      reject(Object.assign(new Error("the Python runtime was restarted"), { restarted: true }));
    }
    waiting.clear();
  }

  return { request, start, stop, answer, reply, terminate };
}
