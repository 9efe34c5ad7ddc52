// The Files panel: the files of the working directory the page's code runs in (static/panels/files/files_worker.js keeps them in
// Pyodide's file system and, across reloads, in IndexedDB). Upload files with the button or by dropping them anywhere
// on the page; each file has Download, Rename and Delete (.py files also Open, in an editor tab). The list is read
// again after every run, so what the code wrote shows.
//
// Adds to window.playground:
//   files.list()               Promise -> [{name, size, modified}]
//   files.upload([File])       Promise -> [{name, size, replaced}]: what was written (a file over the size limit
//                              rejects them all, with its size and the limit)
//   files.download(name)       Promise: the file saved by the browser; -> its Blob
//   files.rename(from, to)     Promise -> the new listing
//   files.remove(name)         Promise -> the new listing
import { askName, confirmAction } from "../../page/dialogs.js";
import { bytes } from "../../page/format.js";
import { registerPanel } from "../../page/panels.js";

const EDITABLE = /\.py$/;
const MAX_OPEN_BYTES = 2 ** 20; // a bigger .py file is downloaded, not opened in the editor

function init({ playground, request }) {
  const $ = (id) => document.getElementById(id);
  const ui = {
    list: $("files-list"), empty: $("files-empty"), status: $("files-status"), notice: $("files-notice"),
    upload: $("files-upload"), input: $("files-input"), storage: $("files-storage"), limit: $("files-limit"),
  };
  let listed = [];

  const say = (text) => {
    ui.status.textContent = text;
    ui.notice.hidden = true;
  };
  const fail = (text) => {
    ui.notice.textContent = text;
    ui.notice.hidden = false;
  };

  function button(label, name, action) {
    const b = Object.assign(document.createElement("button"), { type: "button", textContent: label });
    b.setAttribute("aria-label", `${label} ${name}`);
    b.addEventListener("click", () => action(name).catch((error) => fail(`${label} ${name}: ${error.message}`)));
    return b;
  }

  // The listing shown; announced to the editor's tabs (static/panels/code/code.js), which mind the names taken, unless
  // it came from them.
  function show({ files, persistent, reason, limit }, { announce = true } = {}) {
    listed = files;
    if (announce) window.dispatchEvent(new CustomEvent("playground:files", { detail: { files, persistent, reason, limit } }));
    ui.limit.textContent = ` (${bytes(limit)} at most each)`;
    ui.storage.hidden = persistent;
    ui.storage.textContent = persistent ? "" : `Files are not kept across reloads here: ${reason}.`;
    ui.empty.hidden = files.length > 0;
    ui.list.replaceChildren(...files.map(({ name, size }) => {
      const item = document.createElement("li");
      const label = Object.assign(document.createElement("span"), { className: "file-name", textContent: name });
      const info = Object.assign(document.createElement("span"), { className: "file-size", textContent: bytes(size) });
      const actions = Object.assign(document.createElement("span"), { className: "file-actions" });
      if (EDITABLE.test(name) && size <= MAX_OPEN_BYTES) actions.append(button("Open", name, openInEditor));
      actions.append(button("Download", name, download), button("Rename", name, rename), button("Delete", name, remove));
      item.append(label, info, actions);
      return item;
    }));
    return files;
  }

  const list = async () => show(await request("files.list")).map((file) => ({ ...file }));

  async function upload(given) {
    const files = [...given];
    if (!files.length) return [];
    const names = files.map((f) => f.name).join(", ");
    say(playground.running !== null ? `Uploading ${names} once the run ends...` : `Uploading ${names}...`);
    const reply = await request("files.upload", { files });
    show(reply);
    const open = new Set(playground.editorFiles().map((f) => f.name));
    for (const { name } of reply.written.filter((w) => open.has(w.name))) {
      const text = await (await request("files.read", { name })).text();
      window.dispatchEvent(new CustomEvent("playground:file-replaced", { detail: { name, text } }));
    }
    say("Uploaded " + reply.written.map(({ name, size, replaced }) =>
      `${name} (${bytes(size)}${replaced ? ", replacing the old one" : ""})`).join(", ") + ".");
    return reply.written;
  }

  async function download(name) {
    const blob = await request("files.read", { name });
    const url = URL.createObjectURL(blob);
    const link = Object.assign(document.createElement("a"), { href: url, download: name.split("/").pop() });
    link.click();
    setTimeout(() => URL.revokeObjectURL(url), 60_000); // the browser has read it by then
    say(`Downloaded ${name} (${bytes(blob.size)}).`);
    return blob;
  }

  async function rename(from, to) {
    if (to === undefined) {
      to = await askName({ title: `Rename ${from}`, label: "New name", value: from.split("/").pop(), action: "Rename" });
      if (!to || to === from.split("/").pop()) return listed;
    }
    const files = show(await request("files.rename", { from, to }));
    const renamed = from.slice(0, from.lastIndexOf("/") + 1) + to;
    window.dispatchEvent(new CustomEvent("playground:file-renamed", { detail: { from, to: renamed } }));
    say(`Renamed ${from} to ${renamed}.`);
    return files;
  }

  async function remove(name, { ask = true } = {}) {
    const message = `${name} leaves the working directory and this browser's storage.`;
    if (ask && !await confirmAction({ title: `Delete ${name}?`, message, action: "Delete" })) return listed;
    const files = show(await request("files.delete", { name }));
    say(`Deleted ${name}.`);
    return files;
  }

  async function openInEditor(name) {
    const text = await (await request("files.read", { name })).text();
    playground.openFile(name, text, { asCopy: false });
    say(`${name} is open in the editor.`);
  }

  const reportFailure = (error) => fail(`Could not upload: ${error.message}`);
  ui.upload.addEventListener("click", () => ui.input.click());
  ui.input.addEventListener("change", () => {
    upload(ui.input.files).catch(reportFailure);
    ui.input.value = ""; // the same file chosen again is a change too
  });

  // Files dropped anywhere on the page, but where a panel takes them itself (Classify's and Teach's images), and on
  // the editor too, where CodeMirror would paste a file's text into the code.
  const hasFiles = (event) => event.dataTransfer && [...event.dataTransfer.types].includes("Files");
  function onDrop(event) {
    if (!hasFiles(event) || event.defaultPrevented) return;
    event.preventDefault();
    event.stopPropagation();
    document.body.classList.remove("dropping");
    playground.showPanel("files");
    upload(event.dataTransfer.files).catch(reportFailure);
  }
  document.addEventListener("dragover", (event) => {
    if (!hasFiles(event)) return;
    event.preventDefault();
    document.body.classList.add("dropping");
  });
  document.addEventListener("dragleave", (event) => {
    if (event.relatedTarget === null) document.body.classList.remove("dropping");
  });
  document.addEventListener("drop", onDrop);
  $("editor").addEventListener("drop", onDrop, { capture: true });

  window.addEventListener("playground:files", (event) => {
    if (event.detail.files !== listed) show(event.detail, { announce: false });
  });
  // after every run: what the code wrote (the worker also stores it for the next visit)
  window.addEventListener("playground:run", (event) => {
    if (event.detail.running === null) list().catch((error) => fail(error.message));
  });
  // once main.js has started the worker, right after the panels (the request waits for the runtime to be ready)
  queueMicrotask(() => list().catch((error) => fail(`The files could not be listed: ${error.message}`)));

  playground.files = { list, upload, download, rename, remove: (name) => remove(name, { ask: false }) };
}

registerPanel({ id: "files", worker: "panels/files/files_worker.js", init });
