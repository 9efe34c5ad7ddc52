// The wasm backend's threads (py_engine/backends/wasm/threads.py drives them): a shared WebAssembly.Memory, the
// shared variant of the kernels (kernels_shared.wasm) instantiated on it here, in the Python worker, and in a pool of
// workers (static/worker/wasm_pool_worker.js, which loads this file for the layout and runShare), which run the same kernels
// on the rows of an op.
//
// Pyodide's own memory is not shared, so an op's operands are copied in (copyIn; a model's weights once, kept there
// while their tensor lives; the last op's output stays there for the next), the threads compute its rows, and the
// output is copied back (copyOut). The threads meet through a control block at the start of the shared memory
// (Int32 words): the caller writes the call into the block in one go (run: the export, each thread's arguments in its
// slot, the chunks' rows), opens the call's chunks in NEXT and bumps GENERATION, and every thread, the caller too,
// takes chunks of rows from NEXT until none are left (runShare): a thread that gets less of the CPU (a busy machine, a
// slower core) takes fewer, and one that wakes late takes none. The caller then waits (Atomics.wait) until DONE
// counts every chunk: it never waits for a worker that holds no chunk. NEXT holds the call's generation beside the
// next chunk, so a worker that woke for an earlier call (and may have read that call's arguments) can take no chunk
// of a later one.
//
// Loaded by the Python worker on first use (static/worker.js: self.pyEngineWasmPool), and by tests/pyodide/run.mjs
// in Node, whose worker_threads run the same worker script.
"use strict";

const WASM_POOL = {
  GENERATION: 0, // bumped once per parallel call
  DONE: 1, // chunks of the current call computed
  READY: 2, // workers that have instantiated the module
  FAILED: 3, // set by a worker whose module failed to instantiate or whose kernel threw
  NEXT: 4, // (the call's generation & GENERATION_MASK) << 16 | the first chunk no thread has taken yet
  CALL: 6, // run's image of the call is written from here on:
  CHUNKS: 6, // the call's chunks
  FN: 7, // the export's index
  ARGC: 8, // its argument count
  FIRST: 16, // argument i is slot[i] + first * FIRST[i] + last * LAST[i] for rows first .. last
  LAST: 32,
  SLOTS: 64, // thread t's base arguments at word SLOTS + t * SLOT (the caller's: t = workers)
  SLOT: 16,
  BOUNDS: 320, // chunk c is rows BOUNDS[c] .. BOUNDS[c + 1] (up to the block's end: 703 chunks at most)
  MAX_THREADS: 16,
  ARENA: 4096, // the first byte operands may use
  MAX_PAGES: 16384, // the module's declared maximum (scripts/build_wasm_kernels.py SHARED_MAX_PAGES)
  SPIN: 20000, // loads of GENERATION / DONE before sleeping: a wake-up costs more than the gap between ops
  GENERATION_MASK: 0x7fff,
  CLOSED: 0xffff, // NEXT's chunk once a call has ended: more than any call has
};

// Thread `t`'s part of call `generation`: chunks of rows taken from NEXT while that call has any left; each chunk
// computed is counted in DONE (the last one wakes the caller); a kernel that throws sets FAILED and wakes it too.
function runShare(control, kernels, t, generation) {
  const P = WASM_POOL, tag = (generation & P.GENERATION_MASK) << 16;
  const chunks = control[P.CHUNKS], argc = control[P.ARGC], kernel = kernels[control[P.FN]];
  const base = P.SLOTS + t * P.SLOT, args = new Array(argc);
  for (;;) {
    const next = Atomics.load(control, P.NEXT);
    if ((next & ~0xffff) !== tag || (next & 0xffff) >= chunks) return;
    if (Atomics.compareExchange(control, P.NEXT, next, next + 1) !== next) continue;
    const first = control[P.BOUNDS + (next & 0xffff)], last = control[P.BOUNDS + (next & 0xffff) + 1];
    for (let i = 0; i < argc; i++) args[i] = control[base + i] + first * control[P.FIRST + i] + last * control[P.LAST + i];
    try {
      kernel(...args);
    } catch (error) {
      Atomics.store(control, P.FAILED, 1); // the call's output is not whole: the caller gives up and ends the pool
      Atomics.add(control, P.DONE, 1);
      Atomics.notify(control, P.DONE);
      throw error;
    }
    if (Atomics.add(control, P.DONE, 1) + 1 === chunks) Atomics.notify(control, P.DONE);
  }
}

// A started pool: `workers` workers (makeWorker() makes one: a Web Worker or Node's worker_threads.Worker) running
// `module` (a compiled kernels_shared.wasm) on one shared memory; `heap` is Pyodide's memory, copied from and to.
// Resolves once every worker has instantiated the module; rejects (and ends the workers) after `timeoutMs`.
async function startWasmPool(module, workers, makeWorker, heap, timeoutMs = 10000) {
  const P = WASM_POOL;
  if (workers >= P.MAX_THREADS) throw new Error(`at most ${P.MAX_THREADS - 1} workers`);
  const memory = new WebAssembly.Memory({ initial: 1, maximum: P.MAX_PAGES, shared: true });
  const exports = new WebAssembly.Instance(module, { env: { memory } }).exports;
  const names = WebAssembly.Module.exports(module).map((e) => e.name);
  const kernels = names.map((name) => exports[name]);
  const control = new Int32Array(memory.buffer, 0, P.ARENA / 4);
  const started = [];
  const close = () => started.forEach((w) => w.terminate());
  try {
    for (let index = 0; index < workers; index++) {
      const worker = makeWorker();
      started.push(worker);
      worker.postMessage({ memory, module, index });
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
  // null once all `chunks` are computed, else what went wrong: a kernel threw, or a worker has not finished its
  // chunk within timeoutMs (it died or hangs)
  const join = (chunks, timeoutMs) => {
    const deadline = Date.now() + timeoutMs;
    for (let spins = 0; ; spins++) {
      const done = Atomics.load(control, P.DONE);
      if (done === chunks || Atomics.load(control, P.FAILED)) break; // failed: the chunks left are given up
      if (spins < P.SPIN) continue;
      const left = deadline - Date.now();
      if (left <= 0) return `a worker did not finish its share within ${timeoutMs} ms`;
      Atomics.wait(control, P.DONE, done, left);
    }
    return Atomics.load(control, P.FAILED) ? "a kernel failed" : null;
  };
  let generation = Atomics.load(control, P.GENERATION);
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
    // a gradient's output, which the kernels add into; 8 bytes at a time where it can: V8 fills a shared memory one
    // element at a time (1.4 MB: 0.35 ms by bytes, 0.065 by 8 bytes, in Node)
    zero(at, size) {
      const wide = at % 8 === 0 ? Math.floor(size / 8) : 0;
      new BigUint64Array(memory.buffer, at, wide).fill(0n);
      new Uint8Array(memory.buffer, at + wide * 8, size - wide * 8).fill(0);
    },
    // a call on every thread: `call` (an Int32Array, written at word CALL) holds its chunks, the export's index and
    // argument count, the coefficients (FIRST, LAST), each thread's base arguments (SLOTS; t = workers: the
    // caller's) and the chunks' rows (BOUNDS), in the control block's layout. Returns join's answer.
    run(call, timeoutMs) {
      control.set(call, P.CALL);
      const chunks = control[P.CHUNKS];
      Atomics.store(control, P.DONE, 0);
      generation = (generation + 1) | 0;
      Atomics.store(control, P.NEXT, (generation & P.GENERATION_MASK) << 16); // open: chunk 0 is next
      Atomics.store(control, P.GENERATION, generation);
      Atomics.notify(control, P.GENERATION);
      try {
        runShare(control, kernels, workers, generation);
      } catch {} // a trap: FAILED is set, the pool ends
      const failed = join(chunks, timeoutMs);
      Atomics.store(control, P.NEXT, ((generation & P.GENERATION_MASK) << 16) | P.CLOSED); // no late worker takes any
      return failed;
    },
    close,
  };
}

globalThis.startWasmPool = startWasmPool;
globalThis.runShare = runShare;
globalThis.WASM_POOL = WASM_POOL;
