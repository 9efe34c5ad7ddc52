// Files the worker will ask for, downloaded while the page boots and held in memory until it does: the worker's
// fetch() answers the first GET of a held URL with the held bytes (py_engine's loader and Pyodide's own loadPackage
// call it); later requests go to the network as before. The bytes are the server's,
// checked as any fetched ones. A prefetch that fails holds nothing: the worker's own request then meets the error.
//
// - The default classifier's files: model.json, its weight shards, labels.json and metadata.json of the folder
//   /config.json names, at low priority, from when Pyodide has booted (worker.js). A fetch in this worker takes little
//   network time but much of this thread's and the browser's (18.8 MB of shards: 160-340 ms on 2 cores, even from the
//   HTTP cache), so the first classification used to spend about as long loading as classifying.
// - Pyodide's lock file, from before Pyodide's boot, which requests it; packages() reads it too.
// - On a visit with no stored site-packages, the packages' wheels (numpy's: 3 MB), from the start of Pyodide's boot:
//   loadPackage asked for them only once Pyodide had booted, and waited 100-140 ms for the download here.
//   They are requested with the integrity Pyodide's lock file gives them, as loadPackage requests them.
//
// - A model py_engine's loader starts to load (fetch.Location.files_ahead): its model.json and, as soon as it is here,
//   the shards its manifest lists, requested from this thread before Python has read model.json, at the priority of
//   the loader's own requests: they went out only once Python had read and parsed model.json (4-5 ms later for
//   movenet-lightning, on the way to its first run).
//
// Adds self.pePrefetch = {model(folderURL), modelFiles(modelURL), dropModelFiles(modelURL), lockFile(indexURL),
// packages(indexURL, names), heldURLs()}, and self.peReadBody(response): a body's chunks (below).
"use strict";

(() => {
  const networkFetch = self.fetch.bind(self);
  const held = new Map(); // absolute URL -> {integrity, file: Promise<{body, init} | null>} (null: the prefetch failed)
  const SIDECARS = ["labels.json", "metadata.json"];
  let locked = null; // Promise of the lock file's packages, or null when it could not be read

  function hold(url, { integrity, priority = "low" } = {}) {
    if (held.has(url)) return held.get(url).file; // requested already, not yet asked for
    const file = networkFetch(url, { priority, ...(integrity && { integrity }) }).then(
      async (response) => ({
        body: joined(await readBody(response)),
        init: { status: response.status, statusText: response.statusText, headers: response.headers },
      }),
      () => null,
    ).catch(() => null); // a body cut short
    held.set(url, { integrity, file });
    return file;
  }

  function model(folder) {
    const base = new URL(folder, self.location.href);
    SIDECARS.forEach((name) => hold(new URL(name, base).href));
    withShards(new URL("model.json", base).href, "low");
  }

  const loads = new Map(); // model.json's URL -> the URLs a load's modelFiles held for it (shards once it is read)

  function modelFiles(modelURL) {
    const url = new URL(modelURL, self.location.href).href;
    const urls = [url];
    loads.set(url, urls);
    withShards(url, "auto", (shard) => loads.get(url) === urls && urls.push(shard));
  }

  // A load that ended: what modelFiles held for it and no request took goes (a model refused before its shards were
  // read), the shards too where model.json arrives later
  function dropModelFiles(modelURL) {
    const url = new URL(modelURL, self.location.href).href;
    (loads.get(url) || []).forEach((heldURL) => held.delete(heldURL));
    loads.delete(url);
  }

  // model.json at modelURL, then the shards its manifest lists (each unless `wanted(url)` says no)
  function withShards(modelURL, priority, wanted = () => true) {
    hold(modelURL, { priority }).then((model) => {
      if (!model || model.init.status !== 200) return;
      for (const group of JSON.parse(new TextDecoder().decode(model.body)).weightsManifest || []) {
        for (const path of group.paths || []) {
          const url = new URL(path, modelURL).href;
          if (wanted(url)) hold(url, { priority });
        }
      }
    }).catch(() => {}); // not a model.json: the loader says so when it reads it
  }

  function lockFile(indexURL) {
    const file = hold(new URL("pyodide-lock.json", indexURL).href, { priority: "auto" }); // the boot waits for it
    // parsed before Pyodide's request reads the held bytes (reactions run in the order they were added)
    const parse = (got) => JSON.parse(new TextDecoder().decode(got.body)).packages;
    locked = file.then((got) => (got?.init.status === 200 ? parse(got) : null));
    locked.catch(() => {}); // not JSON: packages() says so, Pyodide's boot fails on it
  }

  // The wheels of `names` and of the packages they depend on, as the lock file (lockFile) names them.
  async function packages(indexURL, names) {
    try {
      const lock = await locked;
      if (!lock) throw new Error("pyodide-lock.json could not be fetched");
      const todo = [...names], seen = new Set();
      while (todo.length) {
        const name = todo.pop();
        if (seen.has(name) || !lock[name]) continue; // loadPackage reports a package the lock file lacks
        seen.add(name);
        todo.push(...(lock[name].depends || []));
        const digest = lock[name].sha256.match(/../g).map((byte) => String.fromCharCode(parseInt(byte, 16)));
        hold(new URL(lock[name].file_name, indexURL).href, { integrity: `sha256-${btoa(digest.join(""))}` });
      }
    } catch (error) {
      console.warn("the packages could not be prefetched; loadPackage downloads them:", error);
    }
  }

  // A body's chunks, read in a loop here: Chromium resolved a worker's arrayBuffer() of movenet-lightning's 4.6 MB
  // shard 8-9 ms after its last byte had come, and a reader Python drives (a turn of Python's event loop per chunk)
  // 6-8 ms after; read so, 1 ms after (docs/journal/graph-models-ahead.md). py_engine's loader reads its bodies with it.
  async function readBody(response) {
    const chunks = [];
    if (!response.body) return chunks;
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return chunks;
      chunks.push(value);
    }
  }

  // A held body as one Uint8Array, joined while it is held: the loader copies each weight out of it, and a copy that
  // crosses chunks takes a call per chunk (EfficientNet-Lite0's held shards in their network chunks: 28 ms to read
  // in the page against 22 as one)
  function joined(chunks) {
    if (chunks.length === 1) return chunks[0];
    const whole = new Uint8Array(chunks.reduce((n, chunk) => n + chunk.length, 0));
    chunks.reduce((at, chunk) => (whole.set(chunk, at), at + chunk.length), 0);
    return whole;
  }

  // The held bytes as a stream of one chunk: a reader of the body (py_engine's loader) gets the held bytes themselves,
  // arrayBuffer() copies them once; a Response made from a buffer copies them twice (18.8 MB of shards: 2.4 ms read,
  // 17-19 ms by arrayBuffer(), 30-37 ms from a Response of the buffer).
  function oneChunk(body) {
    return new ReadableStream({
      start(controller) {
        controller.enqueue(body);
        controller.close();
      },
    });
  }

  self.fetch = (input, init) => {
    const url = typeof input === "string" || input instanceof URL ? new URL(input, self.location.href).href : null;
    const entry = url === null ? undefined : held.get(url);
    const get = !init?.method || init.method.toUpperCase() === "GET";
    // a request for other bytes than the held ones (another integrity) goes to the network
    if (entry === undefined || !get || (init?.integrity && init.integrity !== entry.integrity)) {
      return networkFetch(input, init);
    }
    held.delete(url);
    return entry.file.then((got) => (got ? new Response(oneChunk(got.body), got.init) : networkFetch(input, init)));
  };

  // the URLs held and not yet asked for (what a load that stopped must not leave behind)
  const heldURLs = () => [...held.keys()];

  self.pePrefetch = { model, modelFiles, dropModelFiles, lockFile, packages, heldURLs };
  self.peReadBody = readBody;
})();
