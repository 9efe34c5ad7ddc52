// The page's messages to the worker (static/worker.js lists them): requests queued and answered one at a time in
// arrival order (the runtime's own here, a panel's by its worker script), completion beside the queue, Stop, input
// and Python's questions to the page answered at once.
"use strict";

// The requests this worker answers, by op: the runtime's own below; a panel's ("ID.ACTION") come from its worker
// script (static/panels/NAME/NAME_worker.js), which the page names with each (the panel's registration,
// static/page/panels.js) and which is loaded with the first. Each handler gets the message and the worker's tools and returns the reply's value.
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

const queue = [];
let draining = false;

// The editor's completion (static/panels/code/playground_completion.py, jedi) is answered beside the queue, so it
// never waits for a run: while a request is in progress (a run that awaits included) it gets nothing at once, and
// while Python runs without awaiting, the page stops waiting for it (static/panels/code/completion.js).
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

function receive(message) {
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
}

self.onmessage = ({ data: message }) => receive(message);
for (const message of earlyMessages.splice(0)) receive(message); // those that came while this script was not loaded
