// The Examples gallery: static/examples/index.json lists [{file, title, description}]; each example is a button named
// by its title that opens the example's code (static/examples/FILE) in a new editor tab named FILE (the user's files
// stay as they are) and runs it, as Run does.
//
// Adds to window.playground:
//   examples()          Promise -> the gallery's index
//   runExample(title)   Promise -> {ok, ms} of the run (like run()); rejects for an unknown title. During a run the
//                       example is queued (the "Example queue" status says so) and runs when that run ends; a later
//                       example replaces a queued one, whose promise then gives {ok: false, replaced: true}
import { registerPanel } from "../../page/panels.js";

function init({ playground }) {
  const host = document.getElementById("examples-list");
  const status = document.getElementById("examples-status");

  const index = fetch("examples/index.json", { cache: "no-cache" }).then((response) => {
    if (!response.ok) throw new Error(`examples/index.json: HTTP ${response.status}`);
    return response.json();
  });

  const queueStatus = document.getElementById("examples-queue");
  let queued = null; // the title of the example waiting for the run in progress to end

  // An example asked for during a run waits for it to end (the editor keeps the running code meanwhile); a later
  // request replaces a waiting one. Stop ends the run, and the example then runs.
  async function runExample(title) {
    const example = (await index).find((e) => e.title === title);
    if (!example) throw new Error(`no example titled ${JSON.stringify(title)}`);
    const response = await fetch("examples/" + example.file, { cache: "no-cache" });
    if (!response.ok) throw new Error(`examples/${example.file}: HTTP ${response.status}`);
    const code = await response.text();
    await playground.ready;
    if (playground.running !== null) {
      const replaced = queued !== null && queued !== title ? ` instead of "${queued}"` : "";
      queued = title;
      queueStatus.textContent = `"${title}" is queued${replaced}: it runs when the current run ends. Press Stop to end that run now.`;
      await playground.idle();
      await playground.ready; // a run that Stop ended by a restart: the new runtime
      if (queued !== title) return { ok: false, ms: 0, replaced: true };
      queued = null;
      queueStatus.textContent = `Running "${title}", queued during the last run.`;
    } else {
      queueStatus.textContent = "";
    }
    playground.openFile(example.file, code);
    // the example's code and its output together: they sit side by side, or the output under the code on a phone
    const editor = document.querySelector("main .editor");
    if (editor.getBoundingClientRect().top < 0) editor.scrollIntoView({ block: "start" });
    return playground.run();
  }

  function show(examples) {
    host.replaceChildren(...examples.map(({ title, description }) => {
      const item = document.createElement("li");
      const button = Object.assign(document.createElement("button"), { type: "button", textContent: title });
      const about = Object.assign(document.createElement("span"), { className: "about", textContent: description });
      about.id = "example-" + title.toLowerCase().replace(/[^a-z0-9]+/g, "-");
      button.setAttribute("aria-describedby", about.id);
      button.addEventListener("click", () => runExample(title).catch((error) => {
        status.textContent = `Could not run "${title}": ${error.message}`;
        status.hidden = false;
      }));
      item.append(button, about);
      return item;
    }));
  }

  index.then(show, (error) => {
    status.textContent = `The examples could not load (${error.message}).`;
    status.hidden = false;
  });
  playground.examples = () => index;
  playground.runExample = runExample;
}

registerPanel({ id: "examples", init });
