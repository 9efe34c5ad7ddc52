// The backend a page starts on when its address names none (static/worker.js asks before the engine starts), and
// which pipelines suit the adapter: the policy, apart from the device (static/worker/gpu_device.js).
"use strict";

self.peBackendChoice = (() => {
  const { adapterInfo, noGpuReason, requestAdapter } = self.peGpuDevice;

  // The backend a page starts on when its address names none, and why when it is not webgpu: webgpu on a GPU; wasm
  // (our SIMD kernels on the CPU) without WebGPU, or where WebGPU itself runs on the CPU (SwiftShader, a fallback
  // adapter): there those kernels are faster.
  async function preferredBackend() {
    const wasm = (why, gain) => ({ backend: "wasm", reason: `${why}; our SIMD kernels ${gain}` });
    if (!self.navigator || !navigator.gpu) return wasm(noGpuReason(), "run faster than numpy");
    const adapter = await requestAdapter().catch(() => null);
    if (!adapter) return wasm("WebGPU found no adapter here (no usable GPU, or it is off)", "run faster than numpy");
    const info = adapterInfo(adapter);
    if (info.architecture.toLowerCase().includes("swiftshader")) {
      return wasm("WebGPU here is SwiftShader, a CPU renderer", "are faster");
    }
    if (onCpuAdapter(info)) return wasm("WebGPU here is a fallback adapter on the CPU", "are faster");
    return { backend: "webgpu", reason: null };
  }

  // py_engine/backends/webgpu/backend.py's on_cpu_adapter: the kernel variants, so the list, follow it
  function onCpuAdapter(info) {
    const kind = `${info.adapter_type || ""} ${info.architecture || ""}`.toLowerCase();
    return kind.includes("cpu") || kind.includes("swiftshader");
  }

  return { preferredBackend, onCpuAdapter };
})();
