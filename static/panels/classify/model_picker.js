// The Classify panel's model picker: lists the layers models of the server's GET /models ({models: [{name, kind, task,
// license}], default}: the classifier loads layers models, not the graph models also served there) and makes the
// chosen one the model playground.classify() and the panel use (playground.model = "/models/NAME/"); the worker loads
// it on the next classification. With only the default model served, it is the one choice.
//
// Adds to window.playground:
//   models()   Promise -> the names of the models it offers
export function initModelPicker(playground) {
  const select = document.getElementById("classify-model");
  // the server's default (null: none served) is the one the worker loads when playground.model is null
  const served = fetch("/models", { cache: "no-cache" }).then(async (response) => {
    if (!response.ok) throw new Error(`/models: HTTP ${response.status}`);
    return response.json();
  });
  const listed = served.then(({ models }) => models.filter((model) => model.kind === "layers-model").map((model) => model.name));
  listed.catch(() => {}); // the select shows the error; models() callers get it

  Promise.all([listed, served]).then(([names, { default: preferred }]) => {
    select.replaceChildren(...names.map((name) => Object.assign(document.createElement("option"), { value: name, textContent: name })));
    if (preferred) select.value = preferred;
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
}
