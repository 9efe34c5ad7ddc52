// A worker of the wasm backend's pool (static/wasm_pool.js): instantiates the shared kernels on the shared memory
// once, then runs each call the Python worker posts into its slot, and says when it is done (PENDING). A kernel that
// throws (a trap) sets FAILED and ends this worker.
// The one message it gets: {memory, module, index, layout: WASM_POOL}.
"use strict";

self.addEventListener("message", ({ data: { memory, module, index, layout: P } }) => {
  const control = new Int32Array(memory.buffer, 0, P.ARENA / 4);
  let kernels;
  try {
    const { exports } = new WebAssembly.Instance(module, { env: { memory } });
    kernels = WebAssembly.Module.exports(module).map((e) => exports[e.name]);
  } catch (error) {
    Atomics.store(control, P.FAILED, 1);
    throw error;
  }
  const slot = P.SLOTS + index * P.SLOT;
  let seen = Atomics.load(control, P.GENERATION); // read before READY: the first call comes after it
  Atomics.add(control, P.READY, 1);
  for (;;) {
    let spins = 0;
    while (Atomics.load(control, P.GENERATION) === seen && spins++ < P.SPIN);
    Atomics.wait(control, P.GENERATION, seen);
    seen = Atomics.load(control, P.GENERATION);
    const args = Array.from(control.subarray(slot + 2, slot + 2 + control[slot + 1]));
    try {
      kernels[control[slot]](...args);
    } catch (error) {
      Atomics.store(control, P.FAILED, 1); // the caller ends the pool: its output is not whole
      throw error;
    } finally {
      if (Atomics.sub(control, P.PENDING, 1) === 1) Atomics.notify(control, P.PENDING);
    }
  }
}, { once: true });
