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
  // The files of the extension modules imported so far (wasm modules, each loaded as a dynamic library).
  const IMPORTED_EXTENSIONS = `
import sys
[file for module in list(sys.modules.values()) if (file := getattr(module, "__file__", None) or "").endswith(".so")]`;
  // After files were written under sys.path: the import system's folder listings and importlib.metadata's caches
  // are stale. (importlib.invalidate_caches(), what loadPackage calls, also rereads the standard library's zip
  // directory: 50-65 ms here.)
  const FORGET_LISTINGS = `
import importlib.machinery, importlib.metadata, sys
for finder in list(sys.path_importer_cache.values()):
    if isinstance(finder, importlib.machinery.FileFinder):
        finder.invalidate_caches()
importlib.metadata.MetadataPathFinder.invalidate_caches()`;
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

  // The standard library's zip importer, given the server's bytecode for its modules (app/precompile.mjs writes one
  // .pyc per module under STDLIB_BYTECODE): a module's code comes from its .pyc when that holds the hash of the
  // module's source in the zip, else from compiling the source, as before. Modules keep the zip as their loader's
  // archive and their file, so tracebacks show their source. Set before the first import that could use it
  // (loadPackage's tarfile and email).
  const STDLIB_BYTECODE = "/lib/python312-bytecode";
  const PRECOMPILED_STDLIB = `
def _precompiled_stdlib():
    import _imp, importlib.util, marshal, sys, zipimport

    class PrecompiledStdlib(zipimport.zipimporter):
        def get_code(self, fullname):
            relative = fullname.replace(".", "/") + ("/__init__.py" if self.is_package(fullname) else ".py")
            try:
                with open(f"${STDLIB_BYTECODE}/{relative}c", "rb") as f:
                    pyc = f.read()
            except OSError:
                return super().get_code(fullname)
            magic = importlib.util.MAGIC_NUMBER
            source = self.get_data(f"{self.archive}/{relative}")
            if pyc[:4] != magic or pyc[8:16] != _imp.source_hash(int.from_bytes(magic, "little"), source):
                return super().get_code(fullname)
            return marshal.loads(memoryview(pyc)[16:])

    for path in sys.path:
        if path.endswith(".zip") and isinstance(sys.path_importer_cache.get(path), zipimport.zipimporter):
            sys.path_importer_cache[path] = PrecompiledStdlib(path)
_precompiled_stdlib()
del _precompiled_stdlib`;

  async function sha256(bytes) {
    const digest = await crypto.subtle.digest("SHA-256", bytes);
    return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  }

  async function keyURL(kind, parts) {
    return new URL(`${kind}/${await sha256(new TextEncoder().encode(JSON.stringify(parts)))}`, self.location.href).href;
  }

  // The entry's response, or null.
  async function find(cacheName, key) {
    try {
      return (await (await caches.open(cacheName)).match(key)) || null;
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
  // holds now.
  async function bootPyodide(indexURL, snapshotFound) {
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
        const pyodide = await loadPyodide({ indexURL, _loadSnapshot: bytes });
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
    if (index.some(([path]) => path.startsWith(STDLIB_BYTECODE + "/"))) pyodide.runPython(PRECOMPILED_STDLIB);
    return count;
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
      pyodide.runPython(FORGET_LISTINGS);
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
    const sitePackages = pyodide.runPython(SITE_PACKAGES);
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
    walk(sitePackages);
    const extensions = pyodide.runPython(IMPORTED_EXTENSIONS);
    const imported = new Set(extensions.toJs());
    extensions.destroy();
    const index = {
      pyodide: pyodide.version,
      packages,
      // the wasm modules loaded from site-packages (by path; Pyodide also records each under its file name) that
      // imported extension modules need
      dynlibs: Object.keys(pyodide._module.LDSO.loadedLibsByName)
        .filter((lib) => lib.startsWith(`${sitePackages}/`) && imported.has(lib)),
      // where loadPackage looks for the libraries those depend on (a package's vendored .libs folder)
      lib_dirs: Object.values(packages).map(({ file_name }) => `${sitePackages}/${file_name.split("-")[0]}.libs`),
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
    SITE_PACKAGES, findSnapshot, bootPyodide, stdlibFromZip, makeSnapshot, bytecodeKey, readBytecode, compiledBy,
    fetchServedBytecode, restoreBytecode, packBytecode, installedKey, readInstalled, restoreInstalled, packInstalled,
    store,
  };
})();
