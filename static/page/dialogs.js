// Small modal dialogs (a native <dialog>: focus moves into it, Esc cancels, focus returns to the button that opened
// it), for naming a file and confirming a deletion; the editor's tabs and the Files panel share them. The form's
// method is "dialog": its submit button closes the dialog with returnValue "ok", Esc and Cancel with another.
//
// askName({title, label, value, action}) -> Promise of the name typed, or null when cancelled
// confirmAction({title, message, action}) -> Promise true when confirmed

function open({ title, body, action }) {
  const dialog = document.createElement("dialog");
  dialog.className = "ask";
  const heading = Object.assign(document.createElement("h2"), { textContent: title, id: "dialog-title" });
  dialog.setAttribute("aria-labelledby", heading.id);
  const form = Object.assign(document.createElement("form"), { method: "dialog" });
  const confirm = Object.assign(document.createElement("button"), {
    type: "submit", className: "primary", textContent: action, value: "ok",
  });
  const cancel = Object.assign(document.createElement("button"), { type: "button", textContent: "Cancel" });
  cancel.addEventListener("click", () => dialog.close("cancel"));
  const buttons = Object.assign(document.createElement("p"), { className: "dialog-buttons" });
  buttons.append(confirm, cancel);
  form.append(...body, buttons);
  dialog.append(heading, form);
  document.body.append(dialog);
  return { dialog, confirm };
}

function closed(dialog) {
  return new Promise((resolve) => dialog.addEventListener("close", () => {
    dialog.remove();
    resolve(dialog.returnValue);
  }, { once: true }));
}

export async function askName({ title, label, value = "", action = "OK" }) {
  const input = Object.assign(document.createElement("input"), { type: "text", value, id: "dialog-name", spellcheck: false });
  input.setAttribute("autocomplete", "off");
  const labelled = Object.assign(document.createElement("label"), { htmlFor: input.id, textContent: label });
  const row = Object.assign(document.createElement("p"), { className: "dialog-field" });
  row.append(labelled, input);
  const { dialog } = open({ title, body: [row], action });
  dialog.showModal();
  input.focus();
  const stem = value.lastIndexOf(".");
  input.setSelectionRange(0, stem > 0 ? stem : value.length); // the name without its extension, ready to retype
  return (await closed(dialog)) === "ok" ? input.value.trim() : null;
}

export async function confirmAction({ title, message, action }) {
  const text = Object.assign(document.createElement("p"), { textContent: message });
  const { dialog, confirm } = open({ title, body: [text], action });
  dialog.showModal();
  confirm.focus();
  return (await closed(dialog)) === "ok";
}
