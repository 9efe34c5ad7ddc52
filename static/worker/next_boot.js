// What this boot stores for the next one, after "ready" (static/worker/startup_cache.js stores it): the Pyodide memory
// snapshot (made by static/worker/snapshot_worker.js), the bytecode and site-packages, each once no request has run
// for IDLE_MS. Shares the worker's globals (static/worker.js) and boot.js's record of what the cache lacked.
"use strict";

// After "ready": what the next boot can take from the cache; the page hears what was stored.
function storeForNextBoot() {
  const tasks = [];
  if (snapshotToMake) tasks.push(whenIdle().then(() => snapshotInWorker(snapshotToMake)));
  // The executors run now: the bytecode and site-packages are packed before any request runs (one could install a
  // package). They are stored once no request has run for IDLE_MS: putting tens of MB into Cache Storage held this
  // thread for 40-60 ms at a time, inside a first classification's load right after "ready".
  const packed = (pack) => new Promise((resolve) => {
    const entry = pack();
    resolve(entry ? whenIdle().then(() => startupCache.store([entry])) : {});
  });
  if (bytecodeToPack) tasks.push(packed(() => startupCache.packBytecode(pyodide, bytecodeToPack)));
  if (installedToPack) tasks.push(packed(() => startupCache.packInstalled(pyodide, installedToPack)));
  bytecodeToPack = installedToPack = null;
  if (!tasks.length) return;
  Promise.all(tasks).then(
    (stored) => post({ event: "cache-stored", stored: Object.assign({}, ...stored) }),
    (error) => post({ event: "cache-stored", error: (error && error.message) || String(error) }),
  );
}

// The snapshot's worker boots a second Pyodide: seconds of CPU. It waits until no request has run here for IDLE_MS,
// so that it does not slow what a visitor does first (a classification's warm-up, a first fit).
const IDLE_MS = 3000;
let lastBusy = performance.now();

function whenIdle() {
  return new Promise((resolve) => {
    const check = () => {
      const idleFor = performance.now() - lastBusy;
      if (!draining && idleFor >= IDLE_MS) resolve();
      else setTimeout(check, Math.max(IDLE_MS - idleFor, 100));
    };
    setTimeout(check, IDLE_MS);
  });
}

// static/worker/snapshot_worker.js boots a Pyodide of its own, snapshots and stores it, and ends; this one keeps serving.
function snapshotInWorker({ indexURL, preload, pythonHalf }) {
  return new Promise((resolve, reject) => {
    const maker = new Worker("worker/snapshot_worker.js");
    maker.onmessage = ({ data }) => {
      maker.terminate();
      if (data.error) reject(new Error(`Pyodide snapshot: ${data.error}`));
      else resolve(data.stored);
    };
    maker.onerror = (event) => {
      maker.terminate();
      reject(new Error(`Pyodide snapshot: ${event.message || "snapshot_worker.js failed to load"}`));
    };
    maker.postMessage({ indexURL, preload, pythonHalf });
  });
}
