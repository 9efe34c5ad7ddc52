// The page's charts: live training curves (the "training" events of pe.browser.training_progress), the plots Python
// posts with pe.browser.plot (event "plot"), and the memory timeline of the whole session (every pe.memory() the
// page receives: after each request, and with each training report). The charts are uPlot
// (static/src/line_chart.js), bundled by static/src/build.sh into static/vendor/ (named in vendor/editor.json);
// without the bundle the data is still kept.
//
// Adds to window.playground:
//   charts()   -> {training: null | {epochs, epoch: {x, series: {loss, accuracy, val_loss, ...}},
//                  memory: {x, tensors, gpu_bytes} (per epoch), batch: {x, series, tensors} (per batch, when
//                  posted)}, timeline: {t_s, tensors, bytes, gpu_bytes}, plots: [{title, x_label, x, series}]}
//                 what the charts show, as plain data (a copy); a new fit replaces `training`.
//   chartsReady  Promise -> true once the chart bundle has loaded (false, with a notice, if it could not)
import { registerPanel } from "../../page/panels.js";

function init({ playground }) {
  const empty = document.getElementById("charts-empty"); // the Charts panel's line while nothing is charted
  const trainingHost = document.getElementById("charts-training");
  const plotsHost = document.getElementById("charts-plots");
  const timelineHost = document.getElementById("memory-timeline");
  const MAX_SAMPLES = 5000; // per series: a long session keeps its latest samples
  const MAX_PLOTS = 6; // the latest plots; a plot with a title already shown replaces that one

  let training = null;
  const timeline = { t_s: [], tensors: [], bytes: [], gpu_bytes: [] };
  const plots = [];
  let lineChart = null; // from the bundle
  const views = new Map(); // name -> {element, chart, signature}

  // ---- the data ------------------------------------------------------------------------------------------------

  function sample(memory) {
    timeline.t_s.push(performance.now() / 1000);
    timeline.tensors.push(memory.num_tensors);
    timeline.bytes.push(memory.num_bytes);
    timeline.gpu_bytes.push(memory.num_bytes_in_gpu);
    if (timeline.t_s.length > MAX_SAMPLES) for (const values of Object.values(timeline)) values.shift();
    redraw();
  }

  // A row of a table {x, series: {name: values}}: a name seen for the first time gets gaps before, one missing now
  // gets a gap here, so every series stays aligned with x.
  function addRow(table, x, values) {
    table.x.push(x);
    for (const [name, value] of Object.entries(values)) {
      table.series[name] ??= new Array(table.x.length - 1).fill(null);
      table.series[name].push(value);
    }
    for (const column of Object.values(table.series)) if (column.length < table.x.length) column.push(null);
  }

  // Where a report stands in a fit: batches of an epoch come before its end. A report that is not after the last
  // one (or a different number of epochs) starts a new fit.
  const position = (p) => [p.epoch, p.kind === "batch" ? p.batch : Infinity];
  const isAfter = ([e1, b1], [e2, b2]) => e1 > e2 || (e1 === e2 && b1 > b2);

  function onTraining(p) {
    const at = position(p);
    if (!training || training.epochs !== p.epochs || !isAfter(at, training.last)) {
      training = {
        epochs: p.epochs, last: null,
        epoch: { x: [], series: {} }, memory: { x: [], tensors: [], gpu_bytes: [] }, batch: { x: [], series: {}, tensors: [] },
      };
    }
    training.last = at;
    const logs = Object.fromEntries(Object.entries(p.logs || {})
      .filter(([name, value]) => name !== "batch" && name !== "size" && typeof value === "number"));
    if (p.kind === "batch") {
      addRow(training.batch, training.batch.x.length + 1, logs);
      training.batch.tensors.push(p.memory.num_tensors);
    } else {
      addRow(training.epoch, p.epoch + 1, logs);
      training.memory.x.push(p.epoch + 1);
      training.memory.tensors.push(p.memory.num_tensors);
      training.memory.gpu_bytes.push(p.memory.num_bytes_in_gpu);
    }
    sample(p.memory);
  }

  function onPlot(message) {
    const same = plots.findIndex((p) => p.title === message.title);
    if (same >= 0) plots.splice(same, 1);
    plots.push(message);
    if (plots.length > MAX_PLOTS) plots.shift();
    redraw();
  }

  // ---- drawing ---------------------------------------------------------------------------------------------------

  // The chart `name` in `host`, made again when its series change; null until the bundle has loaded. A host's
  // charts stay in the order of their `rank`.
  function view(name, host, { title, xLabel, series, rightBytes = false, rank = 0 }) {
    let v = views.get(name);
    const signature = JSON.stringify([title, xLabel, series, rightBytes]);
    if (v && v.signature !== signature) {
      v.chart?.destroy();
      v.element.remove();
      v = null;
    }
    if (!v) {
      const element = document.createElement("div");
      element.className = "chart";
      element.setAttribute("role", "figure");
      element.setAttribute("aria-label", title);
      element.dataset.rank = rank;
      host.insertBefore(element, [...host.children].find((child) => Number(child.dataset.rank) > rank) ?? null);
      v = { element, signature, chart: null };
      views.set(name, v);
    }
    if (!v.chart && lineChart) v.chart = lineChart({ host: v.element, title, xLabel, series, rightBytes });
    return v;
  }

  function drop(name) {
    const v = views.get(name);
    if (!v) return;
    v.chart?.destroy();
    v.element.remove();
    views.delete(name);
  }

  function draw(name, host, spec, x, ys) {
    view(name, host, spec).chart?.setData(x, ys);
  }

  let frame = null;
  function redraw() {
    if (frame === null) frame = requestAnimationFrame(drawAll);
  }

  function drawAll() {
    frame = null;
    if (timeline.t_s.length) {
      const t0 = timeline.t_s[0];
      draw("timeline", timelineHost, {
        title: "Memory over the session", xLabel: "seconds",
        series: [{ label: "tensors" }, { label: "bytes", scale: "right" }, { label: "GPU bytes", scale: "right" }],
        rightBytes: true,
      }, timeline.t_s.map((t) => t - t0), [timeline.tensors, timeline.bytes, timeline.gpu_bytes]);
    }
    empty.hidden = Boolean(training || plots.length);
    if (training) {
      const names = Object.keys(training.epoch.series);
      draw("epochs", trainingHost, {
        title: "Training: loss and metrics per epoch", xLabel: "epoch", series: names.map((label) => ({ label })), rank: 0,
      }, training.epoch.x, names.map((n) => training.epoch.series[n]));
      draw("training-memory", trainingHost, {
        title: "Training: tensors and GPU bytes per epoch", xLabel: "epoch",
        series: [{ label: "tensors" }, { label: "GPU bytes", scale: "right" }], rightBytes: true, rank: 1,
      }, training.memory.x, [training.memory.tensors, training.memory.gpu_bytes]);
      if (training.batch.x.length) {
        const batchNames = Object.keys(training.batch.series);
        draw("batches", trainingHost, {
          title: "Training: per batch", xLabel: "batch",
          series: [...batchNames.map((label) => ({ label })), { label: "tensors", scale: "right" }], rank: 2,
        }, training.batch.x, [...batchNames.map((n) => training.batch.series[n]), training.batch.tensors]);
      } else {
        drop("batches");
      }
    }
    const shown = new Set(plots.map((p) => "plot:" + p.title));
    for (const name of views.keys()) if (name.startsWith("plot:") && !shown.has(name)) drop(name);
    for (const p of plots) {
      const names = Object.keys(p.series);
      const v = view("plot:" + p.title, plotsHost, { title: p.title, xLabel: p.x_label, series: names.map((label) => ({ label })) });
      plotsHost.append(v.element); // in the plots' order: the latest comes last
      v.chart?.setData(p.x, names.map((n) => p.series[n]));
    }
  }

  async function loadBundle() {
    try {
      const response = await fetch("vendor/editor.json", { cache: "no-cache" });
      if (!response.ok) throw new Error(`vendor/editor.json: HTTP ${response.status} (build it with static/src/build.sh)`);
      const manifest = await response.json();
      if (!manifest.charts) throw new Error("vendor/editor.json names no chart bundle (rebuild it with static/src/build.sh)");
      if (manifest.chartsCss) {
        const link = Object.assign(document.createElement("link"), { rel: "stylesheet", href: manifest.chartsCss });
        document.head.append(link);
      }
      ({ lineChart } = await import(new URL(manifest.charts, location.href).href));
      redraw();
      return true;
    } catch (error) {
      console.error(error);
      const notice = document.getElementById("charts-notice");
      notice.textContent = `The charts could not load (${error.message}); their data is still in playground.charts().`;
      notice.hidden = false;
      return false;
    }
  }

  window.addEventListener("playground:training", (event) => onTraining(event.detail));
  window.addEventListener("playground:plot", (event) => onPlot(event.detail));
  window.addEventListener("playground:memory", (event) => sample(event.detail.memory));
  playground.charts = () => {
    const shown = training && { epochs: training.epochs, epoch: training.epoch, memory: training.memory, batch: training.batch };
    return structuredClone({ training: shown, timeline, plots });
  };
  playground.chartsReady = loadBundle();
}

registerPanel({ id: "charts", init });
