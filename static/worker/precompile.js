// The classifier's pipelines compiled while the page boots, on a device opened ahead of the engine
// (static/worker/gpu_device.js), which static/worker/bridge.js hands to the engine's first open().
"use strict";

self.pePrecompile = (() => {
  const { onCpuAdapter } = self.peBackendChoice;

  // The pipelines the server planned for the classifier (app/classifier_pipelines.py), compiled while the page boots: the list
  // downloads at once; once `start` resolves (the host picks when: Pyodide's own compiles use every core) the device
  // opens ahead of the engine, whose first open() takes it, and every compile starts. They are in flight or done when
  // the engine asks for them (compileAsync shares them). A missing or unreadable list only loses the head start.
  // precompiled: the device's list (its model folder's URL, how many it lists, how many it began before the engine
  // asked, whether all of those have finished); a device opened later (after a loss) compiled nothing ahead.
  const NOTHING_AHEAD = Object.freeze({ model: null, listed: 0, started: 0, settled: true });
  let opened = null, precompiled = NOTHING_AHEAD;

  function precompile({ url, model }, start) {
    const record = precompiled = { ...NOTHING_AHEAD, model, settled: false };
    const list = fetch(url).then((response) => (response.ok ? response.json() : { adapters: {} }));
    list.catch(() => {}); // awaited below
    opened = start.then(self.peGpuDevice.open);
    Promise.all([opened, list]).then(([device, { adapters }]) => compileListed(device, adapters, record))
      .catch(() => {}) // open's error goes to the engine
      .finally(() => { record.settled = true; });
  }

  function compileListed(device, adapters, record) {
    const listed = adapters[onCpuAdapter(device.info) ? "cpu" : "gpu"] || [];
    record.listed = listed.length;
    const started = [];
    for (const [key, source, nIn, nOut] of listed) {
      if (device.knows(key)) continue;
      record.started++;
      started.push(device.compileAsync(key, source, nIn, nOut)); // a rejected one fails again, loudly, when used
    }
    return Promise.allSettled(started);
  }

  // The device opened ahead, for the engine's first open(); null when none was (a device opened later, after a
  // loss, compiled nothing ahead).
  function takeOpened() {
    const ahead = opened;
    opened = null;
    if (!ahead) precompiled = NOTHING_AHEAD;
    return ahead;
  }

  return { precompile, precompiled: () => ({ ...precompiled }), takeOpened };
})();
