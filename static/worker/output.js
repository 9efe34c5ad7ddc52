// What Python prints and shows, posted to the page as "output" events in batches (static/worker.js lists the message).
"use strict";

// What Python prints, batched: one message per FLUSH_MS at most, so a loop that prints fast cannot flood the page.
const FLUSH_MS = 50;
const MAX_BATCH_LINES = 1000;
const MAX_BATCH_CHARS = 200_000;
const MAX_LINE = 10_000;
let batch = [], batchLines = 0, batchChars = 0, dropped = 0, lastFlush = 0, flushTimer = null;

function printed(stream, line) {
  if (batchLines >= MAX_BATCH_LINES || batchChars >= MAX_BATCH_CHARS) {
    dropped++;
  } else {
    const text = line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)}... (${line.length - MAX_LINE} more characters)` : line;
    const last = batch[batch.length - 1];
    if (last && last.stream === stream) last.text += "\n" + text;
    else batch.push({ stream, text });
    batchLines++;
    batchChars += text.length + 1;
  }
  // While Python runs without awaiting, no timer fires: the clock decides; at an await, the timer sends the rest.
  if (performance.now() - lastFlush >= FLUSH_MS) flushOutput();
  else if (flushTimer === null) flushTimer = setTimeout(flushOutput, FLUSH_MS);
}

// What Python shows in the Output besides printed text, in order with it (static/worker/playground_packages.py,
// playground_figures.py): {stream: "note", text} (a package load's progress) or {stream: "figure", png, alt, width,
// height}. Sent at once: a figure is large, and a note says what the run waits for.
self.peOutput = (chunk) => {
  batch.push(chunk);
  flushOutput();
};

function flushOutput() {
  clearTimeout(flushTimer);
  flushTimer = null;
  lastFlush = performance.now();
  if (!batch.length && !dropped) return;
  post({ event: "output", chunks: batch, dropped });
  batch = [];
  batchLines = batchChars = dropped = 0;
}
