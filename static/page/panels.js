// The panel registry: a panel module registers itself (the id of its section, which names its tab too, and its init)
// and the worker requests it sends, each with the worker script that answers it (static/panels/NAME/*_worker.js, which the
// worker loads with the first such request). A panel's init gets the page's context once static/page/main.js
// has made it: {playground, request(op, args, transfer), decodeImage(image)}.

const panels = new Map(); // id -> {id, init}
const scripts = new Map(); // request op -> the worker script that answers it
let context = null;

export function registerPanel({ id, requests = {}, init }) {
  if (panels.has(id)) throw new Error(`the panel ${id} is registered twice`);
  panels.set(id, { id, init });
  for (const [op, script] of Object.entries(requests)) scripts.set(op, script);
  if (context) init(context);
}

// The page's context is ready: the panels registered so far start, later ones as they register.
export function startPanels(pageContext) {
  context = pageContext;
  for (const { init } of panels.values()) init(context);
}

// The worker script of a panel's request op; undefined for the runtime's own requests.
export const workerScriptOf = (op) => scripts.get(op);
