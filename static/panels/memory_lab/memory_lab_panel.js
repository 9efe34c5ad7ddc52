// The Memory lab panel: the session's memory timeline (drawn by charts_panel.js), pe.leaks() as a table of creation
// sites (the "Find leaks" button; static/panels/memory_lab/memory_lab.py in the worker, static/panels/memory_lab/memory_lab_worker.js), and the backend's
// pe.stats() counters, refreshed after every request (the worker sends them with each memory snapshot).
//
// Adds to window.playground:
//   findLeaks()  Promise -> {debug, sites: [{site: "file:line", source, count, bytes, shapes}]}: pe.leaks() of the
//                page's Python, shown in the lab's table (creation sites need pe.set_debug(True))
//   lastStats    the latest pe.stats() the lab shows (null before the first request)

import { bytes, lastLine } from "../../page/format.js";
import { registerPanel } from "../../page/panels.js";

const $ = (id) => document.getElementById(id);
const ui = { find: $("find-leaks"), leaks: $("leaks"), summary: $("leaks-summary"), hint: $("leaks-hint"), stats: $("stats") };

function cell(tag, text, className) {
  const element = document.createElement(tag);
  element.textContent = text;
  if (className) element.className = className;
  return element;
}

function showLeaks({ debug, sites }) {
  const rows = sites.map(({ site, source, count, bytes: n, shapes }) => {
    const row = document.createElement("tr");
    const where = cell("td", site, "site");
    if (source) where.append(cell("code", source));
    row.append(where, cell("td", count), cell("td", bytes(n)), cell("td", shapes.map((s) => `(${s.join(", ")})`).join(" ")));
    return row;
  });
  ui.leaks.tBodies[0].replaceChildren(...rows);
  ui.leaks.hidden = sites.length === 0;
  const total = sites.reduce((sum, s) => sum + s.count, 0);
  ui.summary.textContent = sites.length
    ? `${total} live tensors (variables not counted) from ${sites.length} creation sites, most first.`
    : "No live tensors besides variables.";
  // Without debug mode the engine records no creation sites: everything falls under one "unknown site" row.
  ui.hint.hidden = debug && !sites.some((s) => s.site.startsWith("unknown site"));
}

async function findLeaks(request) {
  ui.find.disabled = true;
  ui.summary.textContent = "Looking for live tensors...";
  try {
    const found = await request("memory-lab.leaks");
    showLeaks(found);
    return found;
  } catch (error) {
    ui.summary.textContent = "Could not list the live tensors: " + lastLine(error.message);
    throw error;
  } finally {
    ui.find.disabled = false;
  }
}

// The counters shown, in order, with the bytes that go with them.
const COUNTERS = [
  ["Pipelines compiled", "pipeline_compiles"], ["Dispatches", "dispatches"], ["Submits", "submits"],
  ["Uploads", "uploads", "upload_bytes"], ["Readbacks", "readbacks", "readback_bytes"],
];

function showStats(playground, stats) {
  playground.lastStats = stats;
  const rows = [["Backend", stats.backend ?? "-"], ...COUNTERS.map(([label, count, size]) => {
    if (stats[count] === undefined) return [label, "-"];
    return [label, size && stats[size] !== undefined ? `${stats[count]} (${bytes(stats[size])})` : String(stats[count])];
  })];
  ui.stats.replaceChildren(...rows.flatMap(([label, value]) => [cell("dt", label), cell("dd", value)]));
}

function init({ playground, request }) {
  // Restart: the tensors listed lived in the runtime that is gone
  window.addEventListener("playground:memory-reset", () => {
    ui.leaks.hidden = true;
    ui.summary.textContent = "";
  });
  ui.find.addEventListener("click", () => findLeaks(request).catch((error) => console.error(error)));
  window.addEventListener("playground:memory", (event) => { if (event.detail.stats) showStats(playground, event.detail.stats); });
  playground.findLeaks = () => findLeaks(request);
  playground.lastStats = null;
}

registerPanel({ id: "memory-lab", worker: "panels/memory_lab/memory_lab_worker.js", init });
