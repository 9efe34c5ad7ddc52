// Makes the Pyodide memory snapshot a later boot of static/worker.js restores (static/worker/startup_cache.js), in a
// Pyodide of its own that nothing else uses, with the standard-library modules in `preload` imported (by pythonHalf,
// the text of static/worker/startup_cache.py), then stores it and says so: {indexURL, preload, pythonHalf} in, {stored} or
// {error} out.
"use strict";

importScripts("startup_cache.js");

self.onmessage = async ({ data: { indexURL, preload, pythonHalf } }) => {
  try {
    importScripts(indexURL + "pyodide.js");
    self.postMessage({ stored: await self.startupCache.makeSnapshot(indexURL, preload, pythonHalf) });
  } catch (error) {
    self.postMessage({ error: (error && error.message) || String(error) });
  }
};
