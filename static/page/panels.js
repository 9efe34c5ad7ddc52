// The panel registry. Each panel is a folder, static/panels/NAME/, holding its page module (NAME_panel.js), its
// section (NAME.html), its worker script (NAME_worker.js), its Python (*.py) and its CSS (NAME.css);
// static/panels/list.js imports the page modules, one line each, and each registers itself here:
//   registerPanel({id, worker, events, init})
//     id      the id of its section, which names its tab too, and the name its requests begin with: a panel's
//             requests are "ID.ACTION" (request("teach.train", {...}))
//     worker  its worker script, which answers those requests (static/worker.js loads it with the first of them)
//     events  {name: handler(message)}: the worker's events this panel shows (worker.js lists them)
//     init    called once static/page/main.js has made the page's context: {playground, request(op, args,
//             transfer), decodeImage(image)}
// Its tab, section and stylesheet need no line anywhere: the server puts them into the page, in list.js's order
// (app/page_panels.py). Nor does its Python: the server lists every static/panels/*/*.py in config.json's
// python_modules, and the worker writes them into /home/pyodide at boot (app/bytecode.py, page_modules).

const panels = new Map(); // id -> {id, worker, events, init}
let context = null;

export function registerPanel({ id, worker = null, events = {}, init }) {
  if (panels.has(id)) throw new Error(`the panel ${id} is registered twice`);
  panels.set(id, { id, worker, events, init });
  if (context) init(context);
}

// The page's context is ready: the panels registered so far start, later ones as they register.
export function startPanels(pageContext) {
  context = pageContext;
  for (const { init } of panels.values()) init(context);
}

// The worker script that answers a request op ("ID.ACTION"); undefined for the runtime's own requests.
export function workerScriptOf(op) {
  const dot = op.indexOf(".");
  return dot > 0 ? panels.get(op.slice(0, dot))?.worker ?? undefined : undefined;
}

// Hands a worker event to the panels that show it; false when none does.
export function panelEvent(message) {
  let shown = false;
  for (const { events } of panels.values()) {
    if (Object.hasOwn(events, message.event)) {
      events[message.event](message);
      shown = true;
    }
  }
  return shown;
}
