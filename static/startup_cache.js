// What one boot of the worker leaves in the browser's Cache Storage so that the next one (a repeat visit, a reload,
// Restart) does less work; static/worker.js uses it through self.startupCache. Two entries, each replaced whole:
//
// - A memory snapshot of a Pyodide taken right after its boot and the import of the standard-library modules the
//   page's boot imported, before any package is loaded or any JS object has entered Python (Pyodide 0.27.7 refuses
//   a snapshot after that: "Unexpected hiwire entry"); made in a worker of its own (makeSnapshot) after a boot that
//   found none, or whose snapshot lacked a standard-library module the boot imported. Restoring it skips the
//   interpreter's start-up and those imports: Pyodide's standard library is a zip of sources without bytecode, so
//   each boot compiled every module it imported (about 50 for numpy's loading and the page's imports: email, http,
//   urllib, tarfile, importlib.metadata...), 0.3-0.5 s a visit. The snapshot's entry lists the modules it was asked
//   to hold (PRELOADED_HEADER). Pyodide checks that the snapshot comes from the same build and throws otherwise:
//   then the boot starts from scratch and stores a new one. The snapshot froze `random`'s state, so it is reseeded
//   from the OS after each restore; str hashes keep the seed of the visit that made the snapshot (hash randomization
//   guards servers against crafted keys; nothing here needs it).
// - The bytecode of the modules the boot imported from site-packages and the page's folder. Pyodide's package
//   wheels carry only .py files and its file system starts empty, so each visit would compile numpy, py_engine and
//   the page's modules from source again (about 3x the import itself). The .pyc files the imports wrote are stored
//   marked "unchecked hash-based" (PEP 552: used without comparing them with their source, whose mtime is the time
//   of each visit's unpacking), under a key that hashes everything they were compiled from (the worker passes the
//   Pyodide version and URL, the engine wheel's content-addressed URL, the packages and the module texts), so a
//   changed source gives a new key and a stale .pyc is never used.
//
// Without Cache Storage (a page that is not a secure context) or when it fails, the boot takes the slow path.
"use strict";

self.startupCache = (() => {
  const SNAPSHOT_CACHE = "pyodide-snapshot-v1";
  const BYTECODE_CACHE = "py-bytecode-v1";
  const SNAPSHOT_MAGIC = 1886286592;
  const PRELOADED_HEADER = "X-Preloaded-Modules"; // the snapshot's standard-library modules, space-separated
  const WASM_PAGE = 65536;
  // Pyodide's purelib path starts with "//", which names the same folder but not as the prefix of module paths.
  const SITE_PACKAGES = "import sysconfig; '/' + sysconfig.get_path('purelib').lstrip('/')";
  // The modules imported so far from the standard library's zip, but those a memory snapshot cannot hold: ctypes
  // opens the main program with dlopen and makes C callbacks when imported, and Pyodide's own modules may hold JS
  // objects, state outside the wasm heap.
  const STDLIB_FROM_ZIP = `
import sys, zipimport
[name for name, module in list(sys.modules.items())
 if isinstance(getattr(module, "__loader__", None), zipimport.zipimporter)
 and name.partition(".")[0] not in ("ctypes", "pyodide", "_pyodide")]`;
  const PACK_BYTECODE = `
import json, os, sys
def _pack_bytecode(site_packages):
    roots = (site_packages + "/", "/home/pyodide/")
    index, chunks = [], []
    for module in list(sys.modules.values()):
        cached = getattr(module, "__cached__", None)
        if isinstance(cached, str) and cached.startswith(roots) and os.path.isfile(cached):
            with open(cached, "rb") as f:
                data = bytearray(f.read())
            data[4:8] = (1).to_bytes(4, "little")  # flags: hash-based, unchecked (PEP 552)
            index.append([cached, len(data)])
            chunks.append(bytes(data))
    return json.dumps(index).encode(), b"".join(chunks)
_pack_bytecode`;

  async function keyURL(kind, parts) {
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(JSON.stringify(parts)));
    const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
    return new URL(`${kind}/${hex}`, self.location.href).href;
  }

  // The entry's bytes and headers, or null.
  async function read(cacheName, key) {
    try {
      const response = await (await caches.open(cacheName)).match(key);
      return response ? { bytes: new Uint8Array(await response.arrayBuffer()), headers: response.headers } : null;
    } catch (error) {
      console.warn(`${cacheName}: Cache Storage unavailable (${error}); booting without it`);
      return null;
    }
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

  // Pyodide, from the stored snapshot when there is a usable one, else booted from scratch; with the
  // standard-library modules the snapshot was asked to hold (none without a snapshot) and those Pyodide holds now.
  async function bootPyodide(indexURL) {
    const snapshot = await read(SNAPSHOT_CACHE, await snapshotKey(indexURL));
    if (snapshot && !wellFormed(snapshot.bytes)) {
      console.warn(`the stored Pyodide snapshot is malformed (${snapshot.bytes.length} bytes)`);
    } else if (snapshot) {
      try {
        const pyodide = await loadPyodide({ indexURL, _loadSnapshot: snapshot.bytes });
        pyodide.runPython("import random; random.seed()");
        const preloaded = (snapshot.headers.get(PRELOADED_HEADER) || "").split(" ").filter(Boolean);
        return { pyodide, fromSnapshot: true, preloaded, stdlibAtBoot: stdlibFromZip(pyodide) };
      } catch (error) {
        console.warn("the stored Pyodide snapshot cannot be used, booting from scratch:", error);
      }
    }
    const pyodide = await loadPyodide({ indexURL });
    return { pyodide, fromSnapshot: false, preloaded: [], stdlibAtBoot: stdlibFromZip(pyodide) };
  }

  function stdlibFromZip(pyodide) {
    const names = pyodide.runPython(STDLIB_FROM_ZIP);
    try {
      return names.toJs();
    } finally {
      names.destroy();
    }
  }

  // Boots a Pyodide of its own, only to snapshot it (static/snapshot_worker.js): in snapshot-making mode Pyodide
  // hands Python a recording proxy of the JS globals, on which native functions such as fetch throw "Illegal
  // invocation", so the session's own Pyodide never runs in that mode. The standard-library modules in `preload`
  // are imported first (one that fails to import is left out); should Pyodide refuse the snapshot with them, a
  // fresh Pyodide is snapshotted without them. The entry lists `preload` either way: the next boots then do not
  // ask for this snapshot again.
  async function makeSnapshot(indexURL, preload) {
    let bytes;
    try {
      const pyodide = await loadPyodide({ indexURL, _makeSnapshot: true });
      // the names as a Python literal: a JS array passed into Python would be a JS object in the snapshot
      pyodide.runPython(`import importlib\nfor name in ${JSON.stringify(preload)}:
    try:
        importlib.import_module(name)
    except Exception:
        pass`);
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

  // Writes the stored .pyc files of `key` into Pyodide's file system; how many (0: none stored, Python compiles).
  // The entry: [u32 index length][index JSON: [[path, size], ...]][the files' bytes, in index order].
  async function restoreBytecode(pyodide, key) {
    const entry = await read(BYTECODE_CACHE, key);
    if (!entry) return 0;
    const archive = entry.bytes;
    const indexLength = new DataView(archive.buffer).getUint32(0, true);
    const index = JSON.parse(new TextDecoder().decode(archive.subarray(4, 4 + indexLength)));
    let offset = 4 + indexLength;
    for (const [path, size] of index) {
      pyodide.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
      pyodide.FS.writeFile(path, archive.subarray(offset, offset + size));
      offset += size;
    }
    return index.length;
  }

  // The .pyc files of the modules imported so far, as an entry for store(); runs Python now (synchronously).
  function packBytecode(pyodide, key) {
    const pack = pyodide.runPython(PACK_BYTECODE);
    let index, bytes;
    try {
      const result = pack(pyodide.runPython(SITE_PACKAGES));
      [index, bytes] = result.toJs();
      result.destroy();
    } finally {
      pack.destroy();
    }
    const archive = new Uint8Array(4 + index.length + bytes.length);
    new DataView(archive.buffer).setUint32(0, index.length, true);
    archive.set(index, 4);
    archive.set(bytes, 4 + index.length);
    const count = JSON.parse(new TextDecoder().decode(index)).length;
    return { cacheName: BYTECODE_CACHE, key, bytes: archive, what: "bytecode_files", count };
  }

  // Stores the entries, each replacing whatever its cache held (an older key's entry is never used again);
  // resolves to {what: count} of what was stored.
  async function store(entries) {
    const stored = {};
    for (const { cacheName, key, bytes, headers, what, count } of entries) {
      const cache = await caches.open(cacheName);
      for (const old of await cache.keys()) await cache.delete(old);
      await cache.put(key, new Response(bytes, { headers: { "Content-Type": "application/octet-stream", ...headers } }));
      stored[what] = count;
    }
    return stored;
  }

  return { SITE_PACKAGES, bootPyodide, stdlibFromZip, makeSnapshot, bytecodeKey, restoreBytecode, packBytecode, store };
})();
