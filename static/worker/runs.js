// A run of the page's code and its Stop: the interrupt buffer Pyodide reads SIGINT from, the input channel input()
// waits on, and the "run" and "stopping" events. Shares the worker's globals (static/worker.js: pyodide, runner,
// interruptBuffer, inputChannel, running).
"use strict";

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
  const module = pyodide._module;
  if (module && module.Py_EmscriptenSignalBuffer === buffer) module.Py_EmscriptenSignalBuffer = takenAtomically(buffer);
  else console.warn("Pyodide keeps its interrupt buffer elsewhere: a Stop that lands inside its check may be lost");
  runner.set_interrupt_buffer(buffer);
}

// CPython's check of the buffer (Python/emscripten_signal.c, every 50th time its eval loop checks) reads the signal,
// then writes 0: two plain accesses. A Stop that the page writes between them is overwritten and never seen (1 Stop
// in about 40 of a `while True: pass` on a loaded 2-core machine, where the worker is often descheduled between the
// two). Read through this view, the read and the reset are one Atomics.exchange, and the check's write does nothing.
function takenAtomically(buffer) {
  return {
    get 0() { return Atomics.exchange(buffer, 0, 0); },
    set 0(_) {},
  };
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
