// The wasm backend's threads (py_engine/backends/wasm/threads.py drives them): a shared WebAssembly.Memory, the
// shared variant of the kernels (kernels_shared.wasm) instantiated on it here, in the Python worker, and in a pool of
// workers (static/wasm_pool_worker.js), which run the same kernels on their share of an op's rows.
//
// Pyodide's own memory is not shared, so an op's operands are copied in (copyIn), each thread computes its rows, and
// the output is copied back (copyOut). The threads meet through a control block at the start of the shared memory
// (Int32 words): the caller writes each worker's call into its slot (post), bumps GENERATION and sets PENDING
// (start), computes its own share, and waits with Atomics.wait until the workers have brought PENDING to 0 (join).
//
// Loaded by the Python worker on first use (static/worker.js: self.pyEngineWasmPool), and by tests/pyodide/run.mjs
// in Node, whose worker_threads run the same worker script.
"use strict";

const WASM_POOL = {
  GENERATION: 0, // bumped once per parallel call
  PENDING: 1, // workers still computing the current call
  READY: 2, // workers that have instantiated the module
  FAILED: 3, // set by a worker whose module failed to instantiate
  SLOTS: 16, // worker t's call at word SLOTS + t * SLOT: export index, argument count, arguments
  SLOT: 16,
  ARENA: 4096, // the first byte operands may use
  MAX_PAGES: 16384, // the module's declared maximum (app/wasm_kernels.py SHARED_MAX_PAGES)
  SPIN: 20000, // loads of GENERATION / PENDING before sleeping: a wake-up costs more than the gap between ops
};

// A started pool: `workers` workers (makeWorker() makes one: a Web Worker or Node's worker_threads.Worker) running
// `module` (a compiled kernels_shared.wasm) on one shared memory; `heap` is Pyodide's memory, copied from and to.
// Resolves once every worker has instantiated the module; rejects (and ends the workers) after `timeoutMs`.
async function startWasmPool(module, workers, makeWorker, heap, timeoutMs = 10000) {
  const P = WASM_POOL;
  const memory = new WebAssembly.Memory({ initial: 1, maximum: P.MAX_PAGES, shared: true });
  const exports = new WebAssembly.Instance(module, { env: { memory } }).exports;
  const names = WebAssembly.Module.exports(module).map((e) => e.name);
  const control = new Int32Array(memory.buffer, 0, P.ARENA / 4);
  const started = [];
  const close = () => started.forEach((w) => w.terminate());
  try {
    for (let index = 0; index < workers; index++) {
      const worker = makeWorker();
      started.push(worker);
      worker.postMessage({ memory, module, index, layout: P });
    }
    const deadline = Date.now() + timeoutMs;
    while (Atomics.load(control, P.READY) < workers) {
      if (Atomics.load(control, P.FAILED)) throw new Error("a worker could not instantiate the shared module");
      if (Date.now() > deadline) throw new Error(`the workers did not start within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  } catch (error) {
    close();
    throw error;
  }
  return {
    exports,
    names,
    // the shared memory's size in bytes, grown (never shrunk) to at least `size`
    reserve(size) {
      const have = memory.buffer.byteLength;
      if (size > have) memory.grow(Math.ceil((size - have) / 65536));
      return memory.buffer.byteLength;
    },
    copyIn(to, from, size) {
      new Uint8Array(memory.buffer, to, size).set(new Uint8Array(heap.buffer, from, size));
    },
    copyOut(to, from, size) {
      new Uint8Array(heap.buffer, to, size).set(new Uint8Array(memory.buffer, from, size));
    },
    // worker t's share of the next call: export `fn` (an index into names) with up to 14 integer arguments
    post(t, fn, ...args) {
      const at = P.SLOTS + t * P.SLOT;
      control[at] = fn;
      control[at + 1] = args.length;
      control.set(args, at + 2);
    },
    start() {
      Atomics.store(control, P.PENDING, workers);
      Atomics.add(control, P.GENERATION, 1);
      Atomics.notify(control, P.GENERATION);
    },
    // null once every worker has finished its share, else what went wrong: a worker's kernel threw, or one has not
    // finished within timeoutMs (it died or hangs)
    join(timeoutMs = 10000) {
      const deadline = Date.now() + timeoutMs;
      for (let spins = 0; ; spins++) {
        const pending = Atomics.load(control, P.PENDING);
        if (pending === 0) break;
        if (spins < P.SPIN) continue;
        const left = deadline - Date.now();
        if (left <= 0) return `a worker did not finish its share within ${timeoutMs} ms`;
        Atomics.wait(control, P.PENDING, pending, left);
      }
      return Atomics.load(control, P.FAILED) ? "a worker's kernel failed" : null;
    },
    close,
  };
}

globalThis.startWasmPool = startWasmPool;
globalThis.WASM_POOL = WASM_POOL;
