// The Classify panel's requests in the Pyodide worker (static/worker.js loads this script with the first of them):
//   {op: "classify.load", model}  -> {download_ms, download_bytes, load_ms, warmup_ms, cached}
//   {op: "classify.image", pixels: ArrayBuffer (RGBA, transferred), width, height, model} -> {top, timings, backend, load}
// model: a model folder's URL, or null for the one loaded (else the default); static/worker/playground.py does the work.
"use strict";

handleRequest("classify.load", async (message, { py, plain, progress }) =>
  plain(await py.load_classifier(progress, message.model || undefined)));

handleRequest("classify.image", async (message, { py, plain, progress }) => {
  const load = plain(await py.load_classifier(progress, message.model || undefined));
  const result = plain(await py.classify(new Uint8Array(message.pixels), message.height, message.width));
  return { ...result, load };
});
