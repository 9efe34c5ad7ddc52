// What the page says about its runtime: the status line and the boot's progress bar, the backend in use, the Memory
// panel's counts, the training line, and the notice of a lost GPU device.

import { bytes, ms } from "./format.js";

const $ = (id) => document.getElementById(id);
const ui = {
  status: $("status"), boot: $("boot-progress"), notice: $("notice"), backend: $("backend"), training: $("training-status"),
  memory: { tensors: $("mem-tensors"), buffers: $("mem-buffers"), bytes: $("mem-bytes"), gpu: $("mem-gpu"), pool: $("mem-pool") },
};

// The boot's phases in order (worker.js's timed() names); a boot from the cache skips some.
const BOOT_PHASES = ["config", "pyodide boot", "bytecode restore", "installed restore", "packages", "engine install",
  "import", "engine start"];

export function setStatus(text, kind) {
  ui.status.textContent = text;
  ui.status.className = "status " + kind;
}

export function showBootProgress({ text, phase, downloaded }) {
  const step = BOOT_PHASES.indexOf(phase);
  ui.boot.hidden = false;
  ui.boot.max = BOOT_PHASES.length;
  if (step >= 0) ui.boot.value = step;
  let line = `Starting the Python runtime: ${text}`;
  if (downloaded) line += ` (${bytes(downloaded)} downloaded)`;
  setStatus(line, "");
}

export function hideBootProgress() {
  ui.boot.hidden = true;
}

export function showInfo(info) {
  const parts = [`Backend: ${info.backend}`];
  if (info.adapter) parts.push(`adapter: ${[info.adapter.vendor, info.adapter.architecture, info.adapter.description].filter(Boolean).join(" ") || "unknown"}`);
  if (info.warmup_ms !== undefined) parts.push(`warm-up: ${ms(info.warmup_ms)}`);
  if (info.restart_ms !== undefined) parts.push(`restarted in ${ms(info.restart_ms)}`);
  else if (info.ready_ms !== undefined) parts.push(`ready in ${ms(info.ready_ms)}`);
  let text = parts.join(" · ");
  if (info.fallback_reason) text += ` — running on numpy because ${info.fallback_reason}`;
  else if (info.default_reason) text += ` — ${info.default_reason}. Switch in the Backend menu.`;
  else if (info.backend === "webgpu" && softwareAdapter(info.adapter)) text += ` — ${softwareAdapter(info.adapter)}`;
  setStatus(text, "ready");
  ui.backend.value = info.backend;
  if (info.backend === "webgpu") ui.notice.hidden = true;
}

// Why webgpu is slow on this adapter, or null on a GPU: a software one renders on the CPU (static/worker/backend_choice.js,
// preferredBackend, picks wasm there by itself).
function softwareAdapter(adapter) {
  if (!adapter) return null;
  const kind = `${adapter.architecture} ${adapter.adapter_type} ${adapter.description}`.toLowerCase();
  const why = kind.includes("swiftshader") ? "WebGPU here is SwiftShader, which renders on the CPU"
    : kind.includes("cpu") ? "WebGPU here is a fallback adapter on the CPU" : null;
  return why && `${why}: it is slow, and wasm (our SIMD kernels on the CPU) is faster. Switch in the Backend menu.`;
}

export function showDeviceLost(reason) {
  ui.notice.textContent = `The GPU device was lost (${reason}). New work runs on numpy; switch back to webgpu to get a new device.`;
  ui.notice.hidden = false;
}

export function showMemory(m) {
  ui.memory.tensors.textContent = m.num_tensors;
  ui.memory.buffers.textContent = m.num_data_buffers;
  ui.memory.bytes.textContent = bytes(m.num_bytes);
  ui.memory.gpu.textContent = bytes(m.num_bytes_in_gpu);
  ui.memory.pool.textContent = bytes(m.num_bytes_in_gpu_allocated);
}

// The Memory panel and the lab's counters of a runtime that is gone, until the new one reports.
export function clearMemory() {
  for (const value of Object.values(ui.memory)) value.textContent = "-";
  ui.training.hidden = true;
  window.dispatchEvent(new CustomEvent("playground:memory-reset"));
}

// One line per fit epoch (or batch) posted by pe.browser.training_progress(): where training is, and its counts.
export function showTraining(p) {
  const at = p.kind === "batch" ? `epoch ${p.epoch + 1}/${p.epochs}, batch ${p.batch + 1}` : `epoch ${p.epoch + 1}/${p.epochs}`;
  const logs = Object.entries(p.logs || {}).filter(([k, v]) => k !== "batch" && k !== "size" && typeof v === "number");
  ui.training.textContent = `Training: ${at} · ${logs.map(([k, v]) => `${k} ${v.toPrecision(4)}`).join(" · ")} · ${p.memory.num_tensors} tensors`;
  ui.training.hidden = false;
}
