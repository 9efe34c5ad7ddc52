// The user's code: the editor (CodeMirror from static/src/, bundled into static/vendor/ by static/src/build.sh; until
// it has loaded, or if it cannot, the page's plain text box serves) with one tab per open file, and share links that
// carry the active file's code in their #code= fragment.
//
// The editor's files are .py files in the working directory the code runs in (static/panels/files/files_worker.js), so they
// import each other: Ctrl+S (Cmd+S) saves the active file there, Run saves every open file first, and Close saves it
// too (the file stays in the Files panel, whose Open brings it back). The open tabs and their unsaved text are kept
// in localStorage, so a reload shows them at once, before Python has started.
//
// createCode({output, onRun, request, complete}) -> {code (the active file's), setCode(text) (replaces it, as the
//   user's code),
//   openFile(name, text, {asCopy}), activeFile, openFiles(), save(), saveAll(), focus(), markError(line | null),
//   share() -> Promise of the link, load() -> Promise (the editor bundle)}
//   openFile: a tab already open with exactly `text` is shown; else a new tab named `name` (name_2.py where that
//   name is taken), or with {asCopy: false} the open tab of that name, if any.

import { askName } from "../../page/dialogs.js";

const STORAGE_KEY = "py_engine.playground.files"; // {files: [{name, text, unsaved}], active: name}
const SINGLE_CODE_KEY = "py_engine.playground.code"; // the one script of the page before it had tabs
const SHARE_PREFIX = "#code=";
const FIRST_FILE = "main.py";
const SHARED_FILE = "shared.py";

const base64url = {
  encode(text) {
    let binary = "";
    for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
    return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  },
  decode(text) {
    const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    return new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
  },
};

function stored(key) {
  try {
    return localStorage.getItem(key);
  } catch {
    return null; // storage disabled: start from the example
  }
}

// The tabs of the last visit: [{name, text, unsaved}] and the active one's index; else main.py with `firstCode`.
function savedTabs(firstCode) {
  try {
    const { files, active } = JSON.parse(stored(STORAGE_KEY));
    const tabs = files.filter((f) => typeof f.name === "string" && typeof f.text === "string")
      .map(({ name, text, unsaved }) => ({ name, text, unsaved: Boolean(unsaved), doc: null }));
    if (tabs.length) return { tabs, active: Math.max(0, tabs.findIndex((f) => f.name === active)) };
  } catch {
    // nothing kept, or not readable: a fresh start
  }
  return { tabs: [{ name: FIRST_FILE, text: stored(SINGLE_CODE_KEY) ?? firstCode, unsaved: true, doc: null }], active: 0 };
}

export function createCode({ output, onRun, request, complete }) {
  const $ = (id) => document.getElementById(id);
  const host = $("editor");
  const textBox = $("code");
  const ui = {
    tabs: $("file-tabs"), new: $("file-new"), rename: $("file-rename"), close: $("file-close"), status: $("file-status"),
  };
  let { tabs, active } = savedTabs(textBox.value);
  let known = new Set(); // the working directory's files, as the Files panel last listed them

  // Until CodeMirror has loaded (or when it cannot), the plain text box of index.html is the editor.
  let editor = {
    get code() { return textBox.value; },
    setCode(text) { textBox.value = text; },
    focus() { textBox.focus(); },
    markError() {},
    show(tab) { textBox.value = tab.text; },
    keep() {},
  };
  textBox.addEventListener("input", () => edited(textBox.value));
  textBox.addEventListener("keydown", (event) => {
    if (!(event.ctrlKey || event.metaKey)) return;
    if (event.key === "Enter") onRun();
    else if (event.key === "s") save();
    else return;
    event.preventDefault();
  });

  const current = () => tabs[active];

  function persist() {
    try {
      localStorage.setItem(STORAGE_KEY, JSON.stringify({
        files: tabs.map(({ name, text, unsaved }) => ({ name, text, unsaved })), active: current().name,
      }));
    } catch {
      // storage full or disabled: the tabs live only in the page
    }
  }

  // After the user's first edit the code is theirs: the share fragment goes, so a reload shows what they typed.
  function edited(text) {
    const tab = current();
    tab.text = text;
    if (!tab.unsaved) {
      tab.unsaved = true;
      render();
    }
    persist();
    if (location.hash.startsWith(SHARE_PREFIX)) history.replaceState(null, "", location.pathname + location.search);
  }

  function say(text) {
    ui.status.textContent = text;
  }

  // The tabs drawn anew; the focus stays on the tab list when it was there.
  function render() {
    const hadFocus = ui.tabs.contains(document.activeElement);
    ui.tabs.replaceChildren(...tabs.map((tab, k) => {
      const button = Object.assign(document.createElement("button"), {
        type: "button", id: `file-tab-${k}`, textContent: tab.name,
      });
      button.setAttribute("role", "tab");
      button.setAttribute("aria-selected", String(k === active));
      button.setAttribute("aria-controls", "editor");
      button.tabIndex = k === active ? 0 : -1; // Tab reaches the active file's tab; the arrows reach the others
      if (tab.unsaved) {
        button.title = "Unsaved changes (Ctrl+S saves)";
        const dot = Object.assign(document.createElement("span"), { className: "unsaved", textContent: "•" });
        dot.setAttribute("aria-hidden", "true");
        button.append(dot);
      }
      button.addEventListener("click", () => select(k));
      button.addEventListener("keydown", (event) => {
        const to = { ArrowRight: k + 1, ArrowLeft: k - 1, Home: 0, End: tabs.length - 1 }[event.key];
        if (to === undefined) return;
        event.preventDefault();
        select((to + tabs.length) % tabs.length);
      });
      return button;
    }));
    host.setAttribute("aria-labelledby", `file-tab-${active}`);
    ui.rename.setAttribute("aria-label", `Rename ${current().name}`);
    ui.close.setAttribute("aria-label", `Close ${current().name}`);
    ui.close.disabled = tabs.length === 1;
    if (hadFocus) $(`file-tab-${active}`).focus();
  }

  function select(k) {
    if (k !== active) {
      editor.keep(current());
      active = k;
      editor.show(current());
      editor.markError(null);
      persist();
    }
    render();
  }

  const taken = (name) => tabs.some((t) => t.name === name) || known.has(name);
  // Why `name` cannot be a new name for an editor file, or null: the worker checks the rest when it saves.
  function refused(name) {
    if (/[/\\]/.test(name)) return `${name}: a file name cannot hold / or \\ (the files are in one folder).`;
    if (tabs.some((t) => t.name === name)) return `There is a file ${name} open already: choose another name.`;
    if (known.has(name)) return `There is a file ${name} already: choose another name, or open it from the Files panel.`;
    return null;
  }
  function freeName(name) {
    const dot = name.lastIndexOf(".");
    const [stem, extension] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ""];
    let free = name;
    for (let n = 2; taken(free); n++) free = `${stem}_${n}${extension}`;
    return free;
  }

  function openFile(name, text, { asCopy = true } = {}) {
    let k = tabs.findIndex((t) => t.text === text);
    if (!asCopy && k < 0) k = tabs.findIndex((t) => t.name === name);
    if (k < 0) {
      tabs.push({ name: asCopy ? freeName(name) : name, text, unsaved: asCopy, doc: null });
      k = tabs.length - 1;
    }
    select(k);
    return tabs[k].name;
  }

  const filesChanged = (reply) => window.dispatchEvent(new CustomEvent("playground:files", { detail: reply }));

  async function write(list) {
    const reply = await request("files.save", { files: list.map(({ name, text }) => ({ name, text })) });
    for (const tab of list) tab.unsaved = false;
    persist();
    render();
    filesChanged(reply);
    return reply.changed;
  }

  async function save() {
    const tab = current();
    try {
      await write([tab]);
      say(`Saved ${tab.name}.`);
    } catch (error) {
      say(`Could not save ${tab.name}: ${error.message}`);
    }
  }

  const saveAll = () => write(tabs);

  async function newFile() {
    const name = await askName({ title: "New file", label: "File name", value: freeName("untitled.py"), action: "Create" });
    if (!name) return;
    if (refused(name)) {
      say(refused(name));
      return;
    }
    tabs.push({ name, text: "", unsaved: true, doc: null });
    select(tabs.length - 1);
    editor.focus();
  }

  async function rename() {
    const tab = current();
    const name = await askName({ title: `Rename ${tab.name}`, label: "New name", value: tab.name, action: "Rename" });
    if (!name || name === tab.name) return;
    if (refused(name)) {
      say(refused(name));
      return;
    }
    try {
      if (known.has(tab.name)) filesChanged(await request("files.rename", { from: tab.name, to: name }));
      say(`Renamed ${tab.name} to ${name}.`);
      tab.name = name;
      persist();
      render();
    } catch (error) {
      say(`Could not rename ${tab.name}: ${error.message}`);
    }
  }

  async function close() {
    const tab = current();
    if (tabs.length === 1) return;
    try {
      await write([tab]);
    } catch (error) {
      say(`Could not save ${tab.name}, so it stays open: ${error.message}`);
      return;
    }
    const k = tabs.indexOf(tab);
    tabs.splice(k, 1);
    active = Math.min(k, tabs.length - 1);
    editor.show(current());
    persist();
    render();
    say(`Closed ${tab.name}: it is saved in Files, where Open brings it back.`);
  }

  ui.new.addEventListener("click", () => newFile());
  ui.rename.addEventListener("click", () => rename());
  ui.close.addEventListener("click", () => close());
  window.addEventListener("playground:files", (event) => {
    known = new Set(event.detail.files.map((f) => f.name));
    // an open file that is not in the folder (deleted there) is unsaved: Run or Ctrl+S writes it again
    const gone = tabs.filter((t) => !t.unsaved && !known.has(t.name));
    for (const tab of gone) tab.unsaved = true;
    if (gone.length) {
      persist();
      render();
    }
  });
  // A file open in a tab was replaced (an upload of the same name): the tab shows the new text, or Run would write
  // the old one back.
  window.addEventListener("playground:file-replaced", ({ detail: { name, text } }) => {
    const tab = tabs.find((t) => t.name === name);
    if (!tab) return;
    Object.assign(tab, { text, unsaved: false, doc: null });
    if (tab === current()) editor.show(tab);
    persist();
    render();
  });
  window.addEventListener("playground:file-renamed", ({ detail: { from, to } }) => {
    const tab = tabs.find((t) => t.name === from);
    if (!tab) return;
    tab.name = to;
    persist();
    render();
  });

  function sharedCode() {
    if (!location.hash.startsWith(SHARE_PREFIX)) return null;
    try {
      return base64url.decode(location.hash.slice(SHARE_PREFIX.length));
    } catch (error) {
      output.note(`The link's code could not be read (${error.message}); showing your own code instead.`, "failed");
      return null;
    }
  }

  editor.show(current());
  render();
  const shared = sharedCode();
  if (shared !== null) {
    const name = openFile(SHARED_FILE, shared);
    output.note(`This link holds the code shown in the editor (${name}). Nothing has run: press Run to run it.`);
  }

  async function load() {
    const response = await fetch("vendor/editor.json", { cache: "no-cache" });
    if (!response.ok) throw new Error(`vendor/editor.json: HTTP ${response.status} (build it with static/src/build.sh)`);
    const { createEditor } = await import(new URL((await response.json()).editor, location.href).href);
    const hadFocus = document.activeElement === textBox;
    current().text = textBox.value;
    textBox.remove();
    const view = createEditor({
      host, doc: current().text, label: "Python code", id: "code", description: $("editor-keys").textContent,
      onRun, onSave: save, onChange: edited, complete,
    });
    current().doc = view.document;
    // each tab keeps its document (and so its undo history) while another is shown
    editor = {
      get code() { return view.code; },
      setCode: (text) => view.setCode(text),
      focus: () => view.focus(),
      markError: (line) => view.markError(line),
      show(tab) { view.document = tab.doc ??= view.createDocument(tab.text); },
      keep(tab) { tab.doc = view.document; },
    };
    if (hadFocus) editor.focus();
  }

  async function share() {
    const url = new URL(location.href);
    url.hash = SHARE_PREFIX.slice(1) + base64url.encode(editor.code);
    history.replaceState(null, "", url.href);
    try {
      await navigator.clipboard.writeText(url.href);
      output.note("Link copied to the clipboard: opening it shows this code, and runs it only when Run is pressed.");
    } catch {
      output.note("The link is in the address bar: opening it shows this code, and runs it only when Run is pressed.");
    }
    return url.href;
  }

  return {
    get code() { return editor.code; },
    setCode(text) {
      editor.setCode(text);
      edited(text);
    },
    openFile,
    get activeFile() { return current().name; },
    openFiles: () => tabs.map(({ name, unsaved }) => ({ name, unsaved })),
    save,
    saveAll,
    focus: () => editor.focus(),
    markError: (line) => editor.markError(line),
    share,
    load,
  };
}
