// self.peBridge: what the webgpu backend's Python side (py_engine/backends/webgpu/bridge_device.py) and the worker
// (static/worker.js) call, made of the device (gpu_device.js), the backend choice (backend_choice.js) and the
// classifier's precompile (precompile.js), which static/worker.js loads before this script.
"use strict";

(() => {
  // constants: BridgeDevice's BRIDGE_CONSTANTS (py_engine/backends/webgpu/device.py), for the device's useConstants()
  async function openOnce(constants) {
    const device = await (self.pePrecompile.takeOpened() || self.peGpuDevice.open());
    device.useConstants(constants);
    return device;
  }

  self.peBridge = {
    open: openOnce,
    precompile: self.pePrecompile.precompile,
    precompiled: self.pePrecompile.precompiled,
    onCpuAdapter: self.peBackendChoice.onCpuAdapter,
    preferredBackend: self.peBackendChoice.preferredBackend,
    heap: () => { throw new Error("peBridge.heap is not set: the host sets it to Pyodide's HEAPU8"); },
    onLost: self.peGpuDevice.onLost, // the host's notice of any device loss
  };
})();
