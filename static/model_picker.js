// The Classify panel's model picker: lists what the server's GET /models serves ({models: [names]}) and makes the
// chosen one the model playground.classify() and the panel use (playground.model = "/models/NAME/"); the worker loads
// it on the next classification. With only the default model served, it is the one choice.
//
// Adds to window.playground:
//   models()   Promise -> the names the server lists
"use strict";

(() => {
  const playground = window.playground;
  const select = document.getElementById("classify-model");
  // what the worker loads when playground.model is null (static/playground.py, CLASSIFIER_URL)
  const DEFAULT = "efficientnet-lite0";

  const listed = fetch("/models", { cache: "no-cache" }).then(async (response) => {
    if (!response.ok) throw new Error(`/models: HTTP ${response.status}`);
    return (await response.json()).models;
  });

  listed.then((names) => {
    select.replaceChildren(...names.map((name) => Object.assign(document.createElement("option"), { value: name, textContent: name })));
    if (names.includes(DEFAULT)) select.value = DEFAULT;
    choose();
    select.disabled = names.length === 0;
  }, (error) => {
    select.replaceChildren(Object.assign(document.createElement("option"), { textContent: `none (${error.message})` }));
    select.disabled = true;
  });

  function choose() {
    playground.model = select.value ? `/models/${encodeURIComponent(select.value)}/` : null;
  }

  select.addEventListener("change", choose);
  playground.models = () => listed;
})();
