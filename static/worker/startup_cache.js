// What one boot of the worker leaves in the browser's Cache Storage so that the next one (a repeat visit, a reload,
// Restart) does less work; static/worker.js uses it through self.startupCache. Three entries, each replaced whole:
//
// - A memory snapshot of a Pyodide taken right after its boot and the import of the standard-library modules the
//   page's boot imported, before any package is loaded or any JS object has entered Python (Pyodide 0.27.7 refuses
//   a snapshot after that: "Unexpected hiwire entry"); made in a worker of its own (makeSnapshot) after a boot that
//   found none, or whose snapshot lacked a standard-library module the boot imported. Restoring it skips the
//   interpreter's start-up and those imports: Pyodide's standard library is a zip of sources without bytecode, so
//   each boot compiled every module it imported (about 50 for numpy's loading and the page's imports: email, http,
//   urllib, tarfile, importlib.metadata...), about 0.5 s a visit. The snapshot's entry lists the modules it was asked
//   to hold (PRELOADED_HEADER). Pyodide checks that the snapshot comes from the same build and throws otherwise:
//   then the boot starts from scratch and stores a new one. The snapshot froze `random`'s state, so it is reseeded
//   from the OS after each restore; str hashes keep the seed of the visit that made the snapshot (hash randomization
//   guards servers against crafted keys; nothing here needs it).
// - The bytecode of the modules imported from site-packages and the page's folder by the time it is packed (the boot's,
//   and the engine's half that the worker imports right after "ready"). Pyodide's package
//   wheels carry only .py files and its file system starts empty, so each visit would compile numpy, py_engine and
//   the page's modules from source again (about 3x the import itself). The .pyc files the imports wrote are stored
//   marked "unchecked hash-based" (PEP 552: used without comparing them with their source, whose mtime is the time
//   of each visit's unpacking), under a key that hashes everything they were compiled from (the worker passes
//   Pyodide's URL, the engine wheel's content-addressed URL, the packages and the module texts), so a changed source
//   gives a new key and a stale .pyc is never used. The key does not hold Pyodide's version, which only a booted
//   Pyodide knows, so that the entry is read while Pyodide boots; the entry records it (VERSION_HEADER) and
//   compiledBy checks it after the boot.
// - The files the boot installed into site-packages (numpy, by Pyodide's loadPackage, and the engine wheel), with
//   the packages loadPackage recorded. loadPackage fetched numpy's wheel (a request after Pyodide's boot), unzipped
//   its 12 MB in Python and loaded its 19 wasm modules: with the engine wheel's unpacking, 400-900 ms of a repeat
//   visit here; writing the stored files takes ~15 ms. Of the wasm modules, those whose extension modules were
//   imported by the time the entry was packed (3 of numpy's: the boot's and the engine's imports need them) load as
//   loadPackage loads them (Pyodide's own loadDynlib, off this thread); the others (numpy.random's, numpy.fft's,
//   numpy's tests) stay files that Python's import loads when first imported (a worker may compile wasm
//   synchronously): the restore's median 206 -> 119 ms over 28 and 40 repeat visits here. The key hashes Pyodide's URL, the package
//   names and the engine wheel's URL; the entry records the Pyodide version and each package's sha256 from Pyodide's
//   lock file, checked after the boot, so another numpy or Pyodide misses. Only packages of Pyodide's lock file that
//   install into site-packages are stored this way (a shared library installs elsewhere); the page loads numpy alone.
//
// The bytecode and site-packages entries carry their SHA-256 (DIGEST_HEADER): one that does not match is refused,
// and the boot takes the slow path and stores it again; a malformed snapshot is refused before Pyodide sees it.
// Without Cache Storage (a page that is not a secure context) or when it fails, the boot takes the slow path.
"use strict";

self.startupCache = (() => {
  const SNAPSHOT_CACHE = "pyodide-snapshot-v1";
  const BYTECODE_CACHE = "py-bytecode-v1";
  const INSTALLED_CACHE = "py-installed-v1";
  const DIGEST_HEADER = "X-Content-SHA256";
  const SNAPSHOT_MAGIC = 1886286592;
  const PRELOADED_HEADER = "X-Preloaded-Modules"; // the snapshot's standard-library modules, space-separated
  const VERSION_HEADER = "X-Pyodide-Version"; // the Pyodide whose Python compiled a bytecode entry
  const WASM_PAGE = 65536;
  const PYTHON_HALF = "startup_cache.py"; // its Python half, a module of the page's (static/worker/startup_cache.py)
  let python = null; // that module, imported once Pyodide has booted

  // Writes the Python half (its source, as the worker downloaded it) into Pyodide's file system and imports it.
  function importPythonHalf(pyodide, source) {
    pyodide.FS.writeFile(`/home/pyodide/${PYTHON_HALF}`, source);
    return pyodide.pyimport(PYTHON_HALF.replace(/\.py$/, ""));
  }

  // The Python half's function `name` called with `args`, its result as plain JS data.
  function callPython(name, ...args) {
    const result = python[name](...args);
    if (!(result instanceof Object) || typeof result.toJs !== "function") return result;
    try {
      return result.toJs();
    } finally {
      result.destroy();
    }
  }

  async function sha256(bytes) {
    const digest = await crypto.subtle.digest("SHA-256", bytes);
    return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  }

  // An entry's key: a URL of this origin that is never fetched, the same in the page's worker (static/worker.js) and
  // in the snapshot's (static/worker/snapshot_worker.js), which sit in different folders.
  async function keyURL(kind, parts) {
    return new URL(`/${kind}/${await sha256(new TextEncoder().encode(JSON.stringify(parts)))}`, self.location.href).href;
  }

  // The caches, opened as this script loads, while config.json arrives: the first open of a profile's Cache Storage
  // takes tens of ms, which the snapshot's lookup, and with it loadPyodide, would wait for.
  const opened = new Map();
  const open = (cacheName) => {
    if (!opened.has(cacheName)) opened.set(cacheName, caches.open(cacheName));
    return opened.get(cacheName);
  };
  try {
    [SNAPSHOT_CACHE, BYTECODE_CACHE, INSTALLED_CACHE].forEach((name) => open(name).catch(() => {})); // find() reports
  } catch {
    // no Cache Storage (not a secure context): find() says so
  }

  // The entry's response, or null.
  async function find(cacheName, key) {
    try {
      return (await (await open(cacheName)).match(key)) || null;
    } catch (error) {
      console.warn(`${cacheName}: Cache Storage unavailable (${error}); booting without it`);
      return null;
    }
  }

  // The entry's bytes and headers, or null; with `verified`, null too when its bytes are not those it was stored with.
  async function read(cacheName, key, { verified = false } = {}) {
    const response = await find(cacheName, key);
    if (!response) return null;
    let bytes;
    try {
      bytes = new Uint8Array(await response.arrayBuffer());
    } catch (error) {
      console.warn(`${cacheName}: the stored entry could not be read (${error}); booting without it`);
      return null;
    }
    if (verified && response.headers.get(DIGEST_HEADER) !== (await sha256(bytes))) {
      console.warn(`${cacheName}: the stored entry is corrupt (its SHA-256 does not match); booting without it`);
      return null;
    }
    return { bytes, headers: response.headers };
  }

  // An archive of files: [u32 index length][index JSON][the files' bytes, in the order of the index's files].
  function archive(index, chunks) {
    const json = new TextEncoder().encode(JSON.stringify(index));
    const bytes = new Uint8Array(4 + json.length + chunks.reduce((sum, chunk) => sum + chunk.length, 0));
    new DataView(bytes.buffer).setUint32(0, json.length, true);
    bytes.set(json, 4);
    let offset = 4 + json.length;
    for (const chunk of chunks) {
      bytes.set(chunk, offset);
      offset += chunk.length;
    }
    return bytes;
  }

  // The archive's index, and a function that writes its files ([[path, size], ...]) into Pyodide's file system.
  function unarchive(bytes) {
    const indexLength = new DataView(bytes.buffer, bytes.byteOffset).getUint32(0, true);
    const index = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + indexLength)));
    const writeFiles = (pyodide, files) => {
      const folders = new Set();
      let offset = 4 + indexLength;
      for (const [path, size] of files) {
        const folder = path.slice(0, path.lastIndexOf("/"));
        if (!folders.has(folder)) pyodide.FS.mkdirTree(folder);
        folders.add(folder);
        // canOwn: the file keeps its slice of the archive instead of a copy
        pyodide.FS.writeFile(path, bytes.subarray(offset, offset + size), { canOwn: true });
        offset += size;
      }
      return files.length;
    };
    return { index, writeFiles };
  }

  // Pyodide 0.27.7's snapshot: a header (u32 magic, u32 offset of the heap, u32 JSON length, 0, 256-bit build id,
  // JSON) and then the heap, whole WebAssembly pages. Pyodide sizes the heap from the snapshot before it reads the
  // header, and a heap that is not whole pages never finishes booting: anything else is refused here. (A snapshot
  // of another build is well formed; Pyodide throws on it, and the boot falls back.)
  function wellFormed(bytes) {
    if (bytes.length < 48) return false;
    const header = new DataView(bytes.buffer, bytes.byteOffset, 8);
    const heapStart = header.getUint32(4, true), heap = bytes.length - heapStart;
    return header.getUint32(0, true) === SNAPSHOT_MAGIC && heapStart >= 48 && heap > 0 && heap % WASM_PAGE === 0;
  }

  // The stored snapshot's response, or null, once Cache Storage has found it (its body is read while Pyodide loads);
  // started before pyodide.js loads.
  async function findSnapshot(indexURL) {
    return find(SNAPSHOT_CACHE, await snapshotKey(indexURL));
  }

  // Pyodide, from the stored snapshot (findSnapshot's promise) when there is a usable one, else booted from scratch;
  // with the standard-library modules the snapshot was asked to hold (none without a snapshot) and those Pyodide
  // holds now. requested() is called once loadPyodide has made its own requests (its wasm, lock file, runtime script).
  async function bootPyodide(indexURL, snapshotFound, pythonHalf, requested) {
    const load = (options) => {
      const loading = loadPyodide({ indexURL, ...options });
      setTimeout(requested); // after the reactions loadPyodide queued: its requests are out by then
      return loading;
    };
    const snapshot = await snapshotFound;
    if (snapshot) {
      // loadPyodide starts fetching its wasm, its lock file and pyodide.asm.js before it awaits the snapshot, so they
      // overlap the read of its 20-25 MB; it gets the bytes only when they are well formed (else this promise and
      // loadPyodide reject)
      const bytes = snapshot.arrayBuffer().then((buffer) => {
        const heap = new Uint8Array(buffer);
        if (!wellFormed(heap)) throw new Error(`the stored Pyodide snapshot is malformed (${heap.length} bytes)`);
        return heap;
      });
      bytes.catch(() => {}); // loadPyodide awaits it, unless it failed before
      try {
        const pyodide = await load({ _loadSnapshot: bytes });
        python = importPythonHalf(pyodide, await pythonHalf);
        callPython("reseed_random");
        const preloaded = (snapshot.headers.get(PRELOADED_HEADER) || "").split(" ").filter(Boolean);
        return { pyodide, fromSnapshot: true, preloaded, stdlibAtBoot: stdlibFromZip() };
      } catch (error) {
        console.warn("the stored Pyodide snapshot cannot be used, booting from scratch:", error);
      }
    }
    const pyodide = await load({});
    python = importPythonHalf(pyodide, await pythonHalf);
    return { pyodide, fromSnapshot: false, preloaded: [], stdlibAtBoot: stdlibFromZip() };
  }

  function stdlibFromZip() {
    return callPython("stdlib_from_zip");
  }

  // Where packages install (Pyodide's purelib).
  function sitePackages() {
    return callPython("site_packages");
  }

  // Lets imports write their .pyc files (Pyodide's default is not to), which packBytecode stores.
  function writeBytecode() {
    callPython("write_bytecode");
  }

  // Boots a Pyodide of its own, only to snapshot it (static/worker/snapshot_worker.js): in snapshot-making mode Pyodide
  // hands Python a recording proxy of the JS globals, on which native functions such as fetch throw "Illegal
  // invocation", so the session's own Pyodide never runs in that mode. The standard-library modules in `preload`
  // are imported first (one that fails to import is left out); should Pyodide refuse the snapshot with them, a
  // fresh Pyodide is snapshotted without them. The entry lists `preload` either way: the next boots then do not
  // ask for this snapshot again.
  async function makeSnapshot(indexURL, preload, pythonHalf) {
    let bytes;
    try {
      const pyodide = await loadPyodide({ indexURL, _makeSnapshot: true });
      // the names as one string: a JS array passed into Python would be a JS object in the snapshot; the Python
      // half forgets itself after, so that a boot from this snapshot imports the page's current file
      const half = importPythonHalf(pyodide, pythonHalf);
      half.preload_for_snapshot(preload.join(" "));
      half.destroy();
      bytes = pyodide.makeMemorySnapshot();
    } catch (error) {
      console.warn("Pyodide refused a snapshot with the standard-library modules preloaded; taking one without:", error);
      bytes = (await loadPyodide({ indexURL, _makeSnapshot: true })).makeMemorySnapshot();
    }
    const key = await snapshotKey(indexURL);
    const headers = { [PRELOADED_HEADER]: preload.join(" ") };
    return store([{ cacheName: SNAPSHOT_CACHE, key, bytes, headers, what: "snapshot_bytes", count: bytes.length }]);
  }

  function snapshotKey(indexURL) {
    return keyURL("pyodide-snapshot", [indexURL]);
  }

  function bytecodeKey(parts) {
    return keyURL("bytecode", parts);
  }

  // The stored bytecode of `key` (an archive whose index is its files), or null; read while Pyodide boots.
  function readBytecode(key) {
    return read(BYTECODE_CACHE, key, { verified: true });
  }

  // readBytecode's entry if Pyodide `version` compiled it, else null (then it is compiled and stored again).
  function compiledBy(entry, version) {
    if (!entry || entry.headers.get(VERSION_HEADER) === version) return entry;
    console.warn(`the stored bytecode is of Pyodide ${entry.headers.get(VERSION_HEADER)}, not ${version}; compiling`);
    return null;
  }

  // A first visit's bytecode from the server (config.json's `bytecode`: compiled ahead by the Pyodide it serves, as
  // checked hash-based .pyc files, app/bytecode.py), as an entry for restoreBytecode; null when the server has none,
  // or it cannot be fetched or is not the file config.json named (then Python compiles).
  async function fetchServedBytecode(served) {
    if (!served) return null;
    try {
      const response = await fetch(new URL(served.url, self.location.href).href);
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const bytes = new Uint8Array(await response.arrayBuffer());
      if ((await sha256(bytes)) !== served.sha256) throw new Error("its SHA-256 is not the one config.json named");
      return { bytes };
    } catch (error) {
      console.warn(`${served.url}: the server's bytecode cannot be used (${error.message || error}); compiling`);
      return null;
    }
  }

  // Writes the .pyc files of a bytecode entry into Pyodide's file system; how many (0: none, Python compiles). The
  // server's entry holds the standard library's too: the zip importer then looks for them.
  function restoreBytecode(pyodide, entry) {
    if (!entry) return 0;
    const { index, writeFiles } = unarchive(entry.bytes);
    const count = writeFiles(pyodide, index);
    if (index.some(([path]) => path.startsWith(python.STDLIB_BYTECODE + "/"))) callPython("use_precompiled_stdlib");
    return count;
  }

  // The .pyc files of the modules imported so far, as an entry for store(); runs Python now (synchronously).
  function packBytecode(pyodide, key) {
    const [index, bytes] = callPython("pack_bytecode", sitePackages());
    const files = JSON.parse(new TextDecoder().decode(index));
    const headers = { [VERSION_HEADER]: pyodide.version };
    return {
      cacheName: BYTECODE_CACHE, key, bytes: archive(files, [bytes]), headers, what: "bytecode_files", count: files.length,
    };
  }

  function installedKey(parts) {
    return keyURL("installed", parts);
  }

  // The stored site-packages of `key`, or null; read while Pyodide boots.
  function readInstalled(key) {
    return read(INSTALLED_CACHE, key, { verified: true });
  }

  // What loadPackage would do for the packages of readInstalled's entry (`entryRead`), from the stored files: writes
  // them, loads the dynamic libraries the last boot's imports needed and records the packages as loaded. How many
  // files; 0 when there is no entry, or it is for another Pyodide or another wheel of a package (then loadPackage and
  // the engine wheel do it).
  async function restoreInstalled(pyodide, entryRead) {
    const entry = await entryRead;
    if (!entry) return 0;
    const { index, writeFiles } = unarchive(entry.bytes);
    const lock = pyodide._api.lockfile_packages || {};
    const stale = Object.entries(index.packages).filter(([name, { sha256 }]) => lock[name]?.sha256 !== sha256);
    if (index.pyodide !== pyodide.version || stale.length) {
      console.warn(`the stored site-packages are for Pyodide ${index.pyodide}; ${stale.map(([name]) => name)} changed`);
      return 0;
    }
    try {
      const count = writeFiles(pyodide, index.files);
      for (const lib of index.dynlibs) await pyodide._api.loadDynlib(lib, false, index.lib_dirs);
      pyodide._module.reportUndefinedSymbols(); // as loadPackage does once its libraries are in
      for (const [name, { channel }] of Object.entries(index.packages)) pyodide.loadedPackages[name] = channel;
      callPython("forget_listings");
      return count;
    } catch (error) {
      // loadPackage then writes the same files again and loads the libraries not loaded yet
      console.warn("the stored site-packages could not be restored; installing the packages:", error);
      return 0;
    }
  }

  // site-packages as the boot left it (but bytecode, stored apart), as an entry for store(); null when a package
  // loadPackage loaded is not one restoreInstalled can check for staleness, or installs outside site-packages.
  function packInstalled(pyodide, key) {
    const site = sitePackages();
    const lock = pyodide._api.lockfile_packages || {};
    const packages = {};
    for (const [name, channel] of Object.entries(pyodide.loadedPackages)) {
      const { sha256, file_name, install_dir } = lock[name] || {};
      if (!sha256 || install_dir !== "site") return null;
      packages[name] = { channel, sha256, file_name };
    }
    const files = [], chunks = [];
    const walk = (dir) => {
      for (const name of pyodide.FS.readdir(dir)) {
        if (name === "." || name === ".." || name === "__pycache__") continue;
        const path = `${dir}/${name}`;
        if (pyodide.FS.isDir(pyodide.FS.stat(path).mode)) walk(path);
        else {
          const data = pyodide.FS.readFile(path);
          files.push([path, data.length]);
          chunks.push(data);
        }
      }
    };
    walk(site);
    const imported = new Set(callPython("imported_extensions"));
    const index = {
      pyodide: pyodide.version,
      packages,
      // the wasm modules loaded from site-packages (by path; Pyodide also records each under its file name) that
      // imported extension modules need
      dynlibs: Object.keys(pyodide._module.LDSO.loadedLibsByName)
        .filter((lib) => lib.startsWith(`${site}/`) && imported.has(lib)),
      // where loadPackage looks for the libraries those depend on (a package's vendored .libs folder)
      lib_dirs: Object.values(packages).map(({ file_name }) => `${site}/${file_name.split("-")[0]}.libs`),
      files,
    };
    return { cacheName: INSTALLED_CACHE, key, bytes: archive(index, chunks), what: "installed_files", count: files.length };
  }

  // Stores the entries, each replacing whatever its cache held (an older key's entry is never used again);
  // resolves to {what: count} of what was stored.
  async function store(entries) {
    const stored = {};
    for (const { cacheName, key, bytes, headers, what, count } of entries) {
      const cache = await caches.open(cacheName);
      for (const old of await cache.keys()) await cache.delete(old);
      const digest = cacheName === SNAPSHOT_CACHE ? {} : { [DIGEST_HEADER]: await sha256(bytes) };
      const all = { "Content-Type": "application/octet-stream", ...digest, ...headers };
      await cache.put(key, new Response(bytes, { headers: all }));
      stored[what] = count;
    }
    return stored;
  }

  return {
    sitePackages, writeBytecode, findSnapshot, bootPyodide, stdlibFromZip, makeSnapshot, bytecodeKey, readBytecode, compiledBy,
    fetchServedBytecode, restoreBytecode, packBytecode, installedKey, readInstalled, restoreInstalled, packInstalled,
    store,
  };
})();
