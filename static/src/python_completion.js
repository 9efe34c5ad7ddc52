// Completion and signature help for the editor (bundled with editor.js), from an answer the page gets from jedi in
// the worker (static/panels/code/completion.js, static/panels/code/playground_completion.py).
//
// pythonCompletion(complete) -> CodeMirror extensions
//   complete(code, offset) -> Promise of {from, items: [{label, type, detail?}], signatures: [{label, params, index,
//   doc}]} or null (nothing now, e.g. while code runs)
// The list opens as the user types a name or a ".", and on Ctrl+Space; the signature of the call the cursor is in
// shows above it after "(" or "," until ")" or Escape. Both wait until typing pauses (PAUSE_MS): a request keeps the
// worker busy (jedi's first load takes seconds), so code typed and run at once must not queue behind one.
import { autocompletion } from "@codemirror/autocomplete";
import { StateEffect, StateField } from "@codemirror/state";
import { EditorView, keymap, showTooltip } from "@codemirror/view";

// jedi's kinds of names as CodeMirror's icons name them
const TYPES = { module: "namespace", class: "class", instance: "variable", function: "function", param: "variable",
  keyword: "keyword", property: "property", statement: "variable", path: "text" };

const PAUSE_MS = 400;

const setSignature = StateEffect.define();
const signature = StateField.define({
  create: () => null,
  update(tip, tr) {
    for (const effect of tr.effects) if (effect.is(setSignature)) return effect.value;
    return tip && tr.docChanged ? { ...tip, pos: tr.changes.mapPos(tip.pos) } : tip;
  },
  provide: (field) => showTooltip.from(field),
});

function signatureTooltip(pos, { label, params, index }) {
  return {
    pos,
    above: true,
    create() {
      const dom = document.createElement("div");
      dom.className = "cm-signature";
      dom.setAttribute("role", "tooltip");
      // the signature, its current parameter in bold
      const current = index === null || index === undefined ? null : params[index];
      const at = current ? label.indexOf(current, label.indexOf("(")) : -1;
      if (at < 0) {
        dom.textContent = label;
      } else {
        const strong = document.createElement("strong");
        strong.textContent = current;
        dom.append(label.slice(0, at), strong, label.slice(at + current.length));
      }
      return { dom };
    },
  };
}

export function pythonCompletion(complete) {
  async function source(context) {
    const word = context.matchBefore(/\w*$/);
    const afterDot = context.state.sliceDoc(word.from - 1, word.from) === ".";
    if (!context.explicit && word.from === word.to && !afterDot) return null;
    const answer = await complete(context.state.doc.toString(), context.pos);
    if (!answer || context.aborted) return null;
    return {
      from: answer.from,
      options: answer.items.map(({ label, type, detail }) => ({ label, type: TYPES[type] || type, detail })),
      validFor: /^\w*$/,
    };
  }

  let asked = 0; // the latest signature request: an earlier one's answer arriving after it is stale
  async function showSignature(view, pos) {
    const request = ++asked;
    await new Promise((resolve) => { setTimeout(resolve, PAUSE_MS); });
    if (request !== asked || view.state.selection.main.head < pos) return; // typed on, or left the call
    const answer = await complete(view.state.doc.toString(), pos);
    if (request !== asked) return;
    const found = answer?.signatures?.[0];
    const head = view.state.selection.main.head;
    if (head < pos || /[)\n]/.test(view.state.sliceDoc(pos, head))) return; // the user left the call meanwhile
    view.dispatch({ effects: setSignature.of(found ? signatureTooltip(pos, found) : null) });
  }

  const typed = EditorView.updateListener.of((update) => {
    if (!update.docChanged) return;
    let inserted = "";
    update.changes.iterChanges((fromA, toA, fromB, toB, text) => { inserted = text.toString(); });
    const pos = update.state.selection.main.head;
    if (inserted === "(" || inserted === "()" || inserted === ",") showSignature(update.view, pos);
    else if (inserted === ")" && update.state.field(signature)) update.view.dispatch({ effects: setSignature.of(null) });
  });

  const closeSignature = keymap.of([{
    key: "Escape",
    run: (view) => {
      if (!view.state.field(signature)) return false;
      view.dispatch({ effects: setSignature.of(null) });
      return true;
    },
  }]);

  const theme = EditorView.theme({
    ".cm-signature": { padding: "0.15rem 0.45rem", fontFamily: "ui-monospace, SFMono-Regular, Menlo, monospace",
      fontSize: "12px", maxWidth: "40rem", whiteSpace: "pre-wrap" },
    ".cm-tooltip": { backgroundColor: "var(--panel)", color: "var(--fg)", border: "1px solid var(--line)" },
    ".cm-tooltip-autocomplete ul li[aria-selected]": { backgroundColor: "var(--selection)", color: "var(--fg)" },
    ".cm-completionDetail": { color: "var(--muted)" },
  });

  return [autocompletion({ override: [source], activateOnTypingDelay: PAUSE_MS }), signature, typed, closeSignature, theme];
}
