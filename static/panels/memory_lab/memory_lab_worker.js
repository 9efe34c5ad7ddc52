// The Memory lab's request in the Pyodide worker (static/worker.js loads this script with the first):
//   {op: "memory-lab.leaks"} -> {debug, sites: [{site, source, count, bytes, shapes}]}, from static/panels/memory_lab/memory_lab.py
"use strict";

handleRequest("memory-lab.leaks", (message, { pyodide, plain }) => {
  const lab = pyodide.pyimport("memory_lab");
  try {
    return plain(lab.leak_sites());
  } finally {
    lab.destroy();
  }
});
