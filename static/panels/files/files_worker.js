// The user's files in the Pyodide worker: the working directory the page's code runs in (FOLDER) is an Emscripten
// IDBFS mount, so its files live in Pyodide's in-memory file system while the page is open (Python reads and writes
// them as ordinary files) and in the browser's IndexedDB across reloads and restarts. static/worker.js loads this
// script while Pyodide boots, calls peFiles.mount() once it has booted and peFiles.useFolder() before "ready";
// static/panels/files/playground_files.py makes the folder Python's current one and its modules importable.
//
// Persistence: a boot copies IndexedDB's files into the folder (syncfs(true)); each request below that changes a file
// copies the changes back (syncfs(false): only the files whose time stamps changed), and so does files.list, which
// the page asks for after every run, so what Python wrote persists too.
//
// Requests (the Files panel, static/panels/files/files_panel.js, and the editor's tabs, static/panels/code/code.js):
//   {op: "files.list"}                       -> {files: [{name, size, modified}], persistent, reason, limit}
//                                               (persistent: false with the reason where IndexedDB refused; limit:
//                                               the largest file an upload takes, in bytes)
//   {op: "files.upload", files: [File]}      -> {files, written: [{name, size, replaced}]}
//   {op: "files.save", files: [{name, text}]} -> {files, changed: [names whose bytes changed]}
//   {op: "files.read", name}                 -> Blob of the file's bytes
//   {op: "files.rename", from, to}           -> {files}
//   {op: "files.delete", name}               -> {files}
// names are paths relative to FOLDER ("data.csv", "out/plot.csv"); a new name is a plain file name.
"use strict";

self.peFiles = (() => {
  const FOLDER = "/files";
  // IDBFS stores a file as one IndexedDB record, and Chromium takes none over 127 MiB (133169152 bytes with the
  // record's keys): a bigger file would be refused when stored. Memory is not the bound: a 250 MiB upload went into
  // the file system, where only IndexedDB refused it.
  const MAX_FILE_BYTES = 120 * 2 ** 20;
  const HIDDEN = new Set(["__pycache__"]);
  let pyodide = null, files = null;
  let mounted = false; // IndexedDB may be missing (a private window of some browsers)
  let persistent = true, reason = null; // how the last copy to IndexedDB went
  let syncing = Promise.resolve();

  const mib = (n) => (n / 2 ** 20).toFixed(1) + " MiB";
  const tooBig = (name, size) =>
    `${name} is ${mib(size)}: a file can have ${mib(MAX_FILE_BYTES)} at most here (the browser's storage keeps no ` +
    "bigger one); nothing was uploaded";
  const path = (name) => FOLDER + "/" + name;
  const exists = (name) => pyodide.FS.analyzePath(path(name)).exists;

  // One syncfs at a time (Emscripten warns about overlapping ones, which redo each other's work). A refused copy (a
  // file Python wrote over the limit, a full disk) leaves the files in the page, and the panel says so.
  function sync(populate) {
    if (!mounted) return Promise.resolve();
    const next = syncing.then(() => new Promise((resolve, reject) => {
      pyodide.FS.syncfs(populate, (error) => (error ? reject(error) : resolve()));
    }));
    syncing = next.catch(() => {});
    return next.then(() => {
      persistent = true;
      reason = null;
    }, (error) => {
      persistent = false;
      reason = `the browser's storage refused them (${error.message || error}); files of up to ${mib(MAX_FILE_BYTES)} ` +
        "are kept, and until then none last beyond this page";
    });
  }

  // The folder, with IndexedDB's files copied in once the promise resolves: boot() mounts it as soon as Pyodide has
  // booted, so that IndexedDB is read while numpy and the engine go into place.
  function mount(instance) {
    pyodide = instance;
    pyodide.FS.mkdirTree(FOLDER);
    try {
      if (typeof indexedDB === "undefined") throw new Error("this browser gives the page no IndexedDB");
      pyodide.FS.mount(pyodide.FS.filesystems.IDBFS, {}, FOLDER);
      mounted = true;
      return sync(true);
    } catch (error) {
      persistent = false;
      reason = `${error.message || error}; the files last until the page closes`;
      return Promise.resolve();
    }
  }

  // The folder becomes Python's current one (once the page's modules are in place and mount's copy is over).
  function useFolder() {
    files = pyodide.pyimport("playground_files");
    files.use_folder(FOLDER);
  }

  // Every file under FOLDER (Python may make folders), by name; __pycache__ folders left out.
  function listing() {
    const found = [];
    const walk = (dir, prefix) => {
      for (const entry of pyodide.FS.readdir(dir)) {
        if (entry === "." || entry === ".." || HIDDEN.has(entry)) continue;
        const full = dir + "/" + entry;
        const stat = pyodide.FS.stat(full);
        if (pyodide.FS.isDir(stat.mode)) walk(full, prefix + entry + "/");
        else if (pyodide.FS.isFile(stat.mode)) {
          found.push({ name: prefix + entry, size: stat.size, modified: stat.mtime.getTime() });
        }
      }
    };
    walk(FOLDER, "");
    return found.sort((a, b) => a.name.localeCompare(b.name));
  }

  const state = () => ({ files: listing(), persistent, reason, limit: MAX_FILE_BYTES });

  // A name the page may give a file: a plain file name, no folder.
  function checkName(name) {
    if (typeof name !== "string" || !name.trim()) throw new Error("a file needs a name");
    if (name !== name.trim()) throw new Error(`"${name}": a file name cannot start or end with a space`);
    if (/[/\\]/.test(name)) {
      throw new Error(`"${name}": a file name cannot hold / or \\ (files go straight into the working directory)`);
    }
    if (name === "." || name === ".." || HIDDEN.has(name)) throw new Error(`"${name}" cannot be a file's name`);
    if (name.length > 200) throw new Error(`"${name.slice(0, 40)}...": a file name can have 200 characters at most`);
  }

  function checkExisting(name) {
    if (typeof name !== "string" || name.split("/").some((part) => part === "" || part === "." || part === "..")
        || !exists(name) || !pyodide.FS.isFile(pyodide.FS.stat(path(name)).mode)) {
      throw new Error(`there is no file "${name}" in the working directory`);
    }
  }

  // Changed files: the modules imported from FOLDER are imported afresh by the next run, and IndexedDB follows.
  async function changed() {
    files.forget_modules();
    await sync(false);
  }

  async function upload({ files: given }) {
    const written = [];
    for (const file of given) checkName(file.name);
    const big = given.find((file) => file.size > MAX_FILE_BYTES);
    if (big) throw new Error(tooBig(big.name, big.size));
    for (const file of given) {
      const replaced = exists(file.name);
      pyodide.FS.writeFile(path(file.name), new Uint8Array(await file.arrayBuffer()));
      written.push({ name: file.name, size: file.size, replaced });
    }
    await changed();
    return { ...state(), written };
  }

  async function save({ files: given }) {
    const encoder = new TextEncoder();
    const names = [];
    for (const { name, text } of given) {
      checkName(name);
      const bytes = encoder.encode(text);
      if (exists(name)) {
        const old = pyodide.FS.readFile(path(name));
        if (old.length === bytes.length && old.every((byte, i) => byte === bytes[i])) continue;
      }
      pyodide.FS.writeFile(path(name), bytes);
      names.push(name);
    }
    if (names.length) await changed();
    return { ...state(), changed: names };
  }

  function read({ name }) {
    checkExisting(name);
    return new Blob([pyodide.FS.readFile(path(name))]);
  }

  // The file keeps its folder: `to` is its new file name.
  async function rename({ from, to }) {
    checkExisting(from);
    checkName(to);
    const target = from.slice(0, from.lastIndexOf("/") + 1) + to;
    if (exists(target)) throw new Error(`there is a file "${target}" already: delete or rename it first`);
    pyodide.FS.rename(path(from), path(target));
    await changed();
    return state();
  }

  async function remove({ name }) {
    checkExisting(name);
    pyodide.FS.unlink(path(name));
    await changed();
    return state();
  }

  handleRequest("files.list", async () => {
    await sync(false); // what the last run wrote
    return state();
  });
  handleRequest("files.upload", upload);
  handleRequest("files.save", save);
  handleRequest("files.read", read);
  handleRequest("files.rename", rename);
  handleRequest("files.delete", remove);

  return { mount, useFolder };
})();
