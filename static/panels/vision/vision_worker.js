// The Vision panel's request in the Pyodide worker (static/worker.js loads this script with the first):
//   {op: "vision.detect", task: "objects"|"pose"|"faces"|"hands", pixels: ArrayBuffer (RGBA, transferred), width, height}
//     -> {task, results: [to_dict() of each detection], backend, timings: {detect_ms}, load_ms}
// static/panels/vision/vision_panel.py does the work.
"use strict";

handleRequest("vision.detect", async (message, { pyodide, plain }) => {
  const vision = pyodide.pyimport("vision_panel");
  try {
    return plain(await vision.detect(message.task, new Uint8Array(message.pixels), message.height, message.width));
  } finally {
    vision.destroy();
  }
});
