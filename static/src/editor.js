// The playground's code editor: CodeMirror 6 with Python, bundled by build.mjs into static/vendor/.
//
// createEditor({host, doc, label, id, description, onRun, onSave, onChange, complete}) -> {code, setCode(text), focus(),
//   markError(line | null), createDocument(text), document}
//   host      an element; the editor lives in its shadow root. CodeMirror adds its styles as <style> tags to a
//             document but as constructed style sheets to a shadow root, and the page's CSP allows no inline styles.
//   label/id  the accessible name and the id of the editing element (role textbox)
//   description  its accessible description (how to leave it: Esc, then Tab), kept in the shadow root, where
//             aria-describedby can reach it
//   onRun     called for Ctrl+Enter / Cmd+Enter; onSave for Ctrl+S / Cmd+S; onChange(code) after each edit by the user
//   createDocument(text) a new document (an EditorState, with its own undo history) for `document = ` to show:
//             the page's editor tabs keep one per file
//   complete  optional: completion and signature help (python_completion.js says what it answers)
// Colours come from the page's CSS variables (--fg, --bg, --hl-*), which reach into the shadow root, and so does the
// page's choice of the editor's height (--editor-min-height, --editor-max-height).
import { EditorView } from "codemirror";
import { closeBrackets, closeBracketsKeymap } from "@codemirror/autocomplete";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { python } from "@codemirror/lang-python";
import { bracketMatching, HighlightStyle, indentOnInput, indentUnit, syntaxHighlighting } from "@codemirror/language";
import { EditorState, Prec, StateEffect, StateField, Transaction } from "@codemirror/state";
import {
  Decoration, drawSelection, dropCursor, highlightActiveLine, highlightActiveLineGutter, highlightSpecialChars,
  keymap, lineNumbers,
} from "@codemirror/view";
import { tags } from "@lezer/highlight";
import { pythonCompletion } from "./python_completion.js";

const highlight = HighlightStyle.define([
  { tag: [tags.keyword, tags.controlKeyword, tags.definitionKeyword, tags.moduleKeyword, tags.operatorKeyword],
    color: "var(--hl-keyword)" },
  { tag: [tags.string, tags.special(tags.string)], color: "var(--hl-string)" },
  { tag: [tags.number, tags.bool, tags.null], color: "var(--hl-number)" },
  { tag: tags.comment, color: "var(--hl-comment)", fontStyle: "italic" },
  { tag: [tags.function(tags.definition(tags.variableName)), tags.definition(tags.className)],
    color: "var(--hl-definition)" },
  { tag: [tags.standard(tags.variableName), tags.self], color: "var(--hl-builtin)" },
  { tag: tags.invalid, color: "var(--bad)" },
]);

const theme = EditorView.theme({
  "&": { color: "var(--fg)", backgroundColor: "var(--bg)", border: "1px solid var(--line)", borderRadius: "4px",
    fontSize: "13px" },
  // the focus ring: the page's own (3 px, outside the border), bolder than the browser's default one
  "&.cm-focused": { outline: "3px solid var(--accent)", outlineOffset: "2px" },
  ".cm-scroller": { fontFamily: "ui-monospace, SFMono-Regular, Menlo, monospace", lineHeight: "1.45",
    minHeight: "var(--editor-min-height, 12rem)", maxHeight: "var(--editor-max-height, 28rem)", overflow: "auto" },
  ".cm-content": { caretColor: "var(--fg)" },
  ".cm-cursor": { borderLeftColor: "var(--fg)" },
  ".cm-gutters": { backgroundColor: "var(--panel)", color: "var(--muted)", borderRight: "1px solid var(--line)" },
  ".cm-activeLine, .cm-activeLineGutter": { backgroundColor: "var(--active-line)" },
  "&.cm-focused .cm-selectionBackground, .cm-selectionBackground, ::selection": { backgroundColor: "var(--selection)" },
  ".cm-matchingBracket": { backgroundColor: "var(--selection)", outline: "1px solid var(--muted)" },
  ".cm-error-line": { backgroundColor: "var(--error-line)" },
});

// The line of the last error's traceback, highlighted until the code changes.
const setErrorLine = StateEffect.define();
const errorLine = StateField.define({
  create: () => Decoration.none,
  update(marks, tr) {
    for (const effect of tr.effects) {
      if (!effect.is(setErrorLine)) continue;
      const line = effect.value;
      if (line === null || line < 1 || line > tr.state.doc.lines) return Decoration.none;
      const from = tr.state.doc.line(line).from;
      return Decoration.set([Decoration.line({ class: "cm-error-line" }).range(from)]);
    }
    return tr.docChanged ? Decoration.none : marks;
  },
  provide: (field) => EditorView.decorations.from(field),
});

export function createEditor({ host, doc, label, id, description, onRun, onSave, onChange, complete }) {
  const root = host.shadowRoot || host.attachShadow({ mode: "open" });
  const run = () => { onRun(); return true; };
  const save = () => { onSave(); return true; };
  const about = Object.assign(document.createElement("p"), {
    id: `${id}-description`, hidden: true, textContent: description,
  });
  root.append(about);
  const extensions = [
    Prec.highest(keymap.of([{ key: "Mod-Enter", run }, { key: "Mod-s", run: save, preventDefault: true }])),
    lineNumbers(), highlightActiveLineGutter(), highlightSpecialChars(), history(), drawSelection(), dropCursor(),
    indentOnInput(), bracketMatching(), closeBrackets(), highlightActiveLine(),
    keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...historyKeymap, indentWithTab]),
    python(), indentUnit.of("    "), syntaxHighlighting(highlight), theme, errorLine,  // PEP 8: four spaces
    // tabindex: the editable element is focusable by itself, but says so, so checkers (axe) see that the
    // scrolling region around it can be reached by keyboard
    EditorView.contentAttributes.of({ "aria-label": label, "aria-describedby": about.id, id, tabindex: "0" }),
    complete ? pythonCompletion(complete) : [],
    EditorView.updateListener.of((update) => {
      // edits by the user carry a userEvent (input, delete, undo, paste, ...); setCode's do not
      if (update.docChanged && update.transactions.some((tr) => tr.annotation(Transaction.userEvent))) {
        onChange(update.state.doc.toString());
      }
    }),
  ];
  const createDocument = (text) => EditorState.create({ doc: text, extensions });
  const view = new EditorView({ root, parent: root, state: createDocument(doc) });
  return {
    get code() { return view.state.doc.toString(); },
    setCode(text) { view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } }); },
    focus() { view.focus(); },
    markError(line) { view.dispatch({ effects: setErrorLine.of(line) }); },
    createDocument,
    get document() { return view.state; },
    set document(state) { view.setState(state); },
  };
}
