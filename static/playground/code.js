// The user's code: the editor (CodeMirror from static/src/, bundled into static/vendor/ by static/src/build.sh; until
// it has loaded, or if it cannot, the page's plain text box serves), the code kept in localStorage across reloads,
// and share links that carry the code in their #code= fragment.
//
// createCode({output, onRun, complete}) -> {code, setCode(text) (as the user's code), focus(), markError(line | null),
//   share() -> Promise of the link, load() -> Promise (the editor bundle)}

const STORAGE_KEY = "py_engine.playground.code";
const SHARE_PREFIX = "#code=";

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

function savedCode() {
  try {
    return localStorage.getItem(STORAGE_KEY);
  } catch {
    return null; // storage disabled: start from the example
  }
}

// After the user's first edit the code is theirs: the share fragment goes, so a reload shows what they typed.
function codeEdited(code) {
  try {
    localStorage.setItem(STORAGE_KEY, code);
  } catch {
    // storage full or disabled: the code lives only in the page
  }
  if (location.hash.startsWith(SHARE_PREFIX)) history.replaceState(null, "", location.pathname + location.search);
}

export function createCode({ output, onRun, complete }) {
  const host = document.getElementById("editor");
  const textBox = document.getElementById("code");

  function sharedCode() {
    if (!location.hash.startsWith(SHARE_PREFIX)) return null;
    try {
      return base64url.decode(location.hash.slice(SHARE_PREFIX.length));
    } catch (error) {
      output.note(`The link's code could not be read (${error.message}); showing your own code instead.`, "failed");
      return null;
    }
  }

  // Until CodeMirror has loaded (or when it cannot), the plain text box of index.html is the editor.
  let editor = {
    get code() { return textBox.value; },
    setCode(text) { textBox.value = text; },
    focus() { textBox.focus(); },
    markError() {},
  };
  textBox.addEventListener("input", () => codeEdited(textBox.value));
  textBox.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      onRun();
    }
  });

  const shared = sharedCode();
  const initialCode = shared ?? savedCode();
  if (initialCode !== null) editor.setCode(initialCode);
  if (shared !== null) output.note("This link holds the code shown in the editor. Nothing has run: press Run to run it.");

  async function load() {
    const response = await fetch("vendor/editor.json", { cache: "no-cache" });
    if (!response.ok) throw new Error(`vendor/editor.json: HTTP ${response.status} (build it with static/src/build.sh)`);
    const { createEditor } = await import(new URL((await response.json()).editor, location.href).href);
    const hadFocus = document.activeElement === textBox;
    const code = textBox.value;
    textBox.remove();
    editor = createEditor({ host, doc: code, label: "Python code", id: "code", onRun, onChange: codeEdited, complete });
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
      codeEdited(text);
    },
    focus: () => editor.focus(),
    markError: (line) => editor.markError(line),
    share,
    load,
  };
}
