// The default classifier's files, downloaded while the page boots: model.json, its weight shards, labels.json and
// metadata.json of the folder /config.json names, at low priority, from when Pyodide has booted (worker.js). A fetch
// in this worker takes little network time but much of this thread's and the browser's (18.8 MB of shards: 160-340
// ms on 2 cores, even from the HTTP cache), so the first classification used to spend about as long loading as
// classifying. Each file is held in memory once its body has arrived, and the worker's fetch() answers the first GET
// of that URL with it (Pyodide's pyfetch, so py_engine's loader, goes through it); later requests go to the network
// as before. The bytes are the server's, checked as any fetched ones (the shards' sizes and sha256). A prefetch that
// fails holds nothing: the loader's own request then meets the error and reports it.
//
// Adds self.peModelPrefetch = {start(folderURL)}.
"use strict";

(() => {
  const networkFetch = self.fetch.bind(self);
  const held = new Map(); // absolute URL -> Promise<{body, init} | null> (null: the prefetch failed)
  const SIDECARS = ["labels.json", "metadata.json"];

  function hold(url) {
    const file = networkFetch(url, { priority: "low" }).then(
      async (response) => ({
        body: await response.arrayBuffer(),
        init: { status: response.status, statusText: response.statusText, headers: response.headers },
      }),
      () => null,
    ).catch(() => null); // a body cut short
    held.set(url, file);
    return file;
  }

  function start(folder) {
    const base = new URL(folder, self.location.href);
    const modelURL = new URL("model.json", base).href;
    SIDECARS.forEach((name) => hold(new URL(name, base).href));
    hold(modelURL).then((model) => {
      if (!model || model.init.status !== 200) return;
      for (const group of JSON.parse(new TextDecoder().decode(model.body)).weightsManifest || []) {
        for (const path of group.paths || []) hold(new URL(path, modelURL).href);
      }
    }).catch(() => {}); // not a model.json: the loader says so when it reads it
  }

  // The held bytes as a stream of one chunk: a reader of the body (py_engine's loader) gets the held bytes themselves,
  // arrayBuffer() copies them once; a Response made from the buffer itself copies them twice (18.8 MB of shards:
  // 2.4 ms read, 17-19 ms by arrayBuffer(), 30-37 ms from a Response of the buffer).
  function oneChunk(buffer) {
    return new ReadableStream({
      start(controller) {
        controller.enqueue(new Uint8Array(buffer));
        controller.close();
      },
    });
  }

  self.fetch = (input, init) => {
    const url = typeof input === "string" ? new URL(input, self.location.href).href : null;
    const file = url === null ? undefined : held.get(url);
    if (file === undefined || (init?.method && init.method.toUpperCase() !== "GET")) return networkFetch(input, init);
    held.delete(url);
    return file.then((got) => (got ? new Response(oneChunk(got.body), got.init) : networkFetch(input, init)));
  };

  self.peModelPrefetch = { start };
})();
