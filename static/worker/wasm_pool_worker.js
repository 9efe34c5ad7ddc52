// A worker of the wasm backend's pool (static/worker/wasm_pool.js: its layout and runShare): instantiates the shared
// kernels on the shared memory once, then takes its part of each call the Python worker starts (runShare counts its
// chunks in DONE). A kernel that throws (a trap) sets FAILED and ends this worker.
// The one message it gets: {memory, module, index}.
"use strict";

importScripts("wasm_pool.js");

self.addEventListener("message", ({ data: { memory, module, index } }) => {
  const P = WASM_POOL;
  const control = new Int32Array(memory.buffer, 0, P.ARENA / 4);
  let kernels;
  try {
    const { exports } = new WebAssembly.Instance(module, { env: { memory } });
    kernels = WebAssembly.Module.exports(module).map((e) => exports[e.name]);
  } catch (error) {
    Atomics.store(control, P.FAILED, 1);
    throw error;
  }
  let seen = Atomics.load(control, P.GENERATION); // read before READY: the first call comes after it
  Atomics.add(control, P.READY, 1);
  for (;;) {
    let spins = 0;
    while (Atomics.load(control, P.GENERATION) === seen && spins++ < P.SPIN);
    Atomics.wait(control, P.GENERATION, seen);
    seen = Atomics.load(control, P.GENERATION);
    runShare(control, kernels, index, seen); // a kernel that throws ends this worker; the caller ends the pool
  }
}, { once: true });
