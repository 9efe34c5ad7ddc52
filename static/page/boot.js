// Starts the Pyodide worker as soon as the page's head is parsed, before its stylesheets and deferred scripts have
// loaded: the boot (seconds) then overlaps them instead of waiting for them. static/page/worker_client.js takes
// this worker over (window.playgroundBoot.take) and gets the messages it posted before then, in order; a Restart
// starts its own. The backend: the address's ?backend=NAME, else the Backend menu's last choice (kept in
// localStorage by rememberBackend), else the one the worker picks (static/worker/backend_choice.js, preferredBackend).
"use strict";

window.playgroundBoot = (() => {
  const CHOICE = "py_engine.backend"; // in localStorage: the Backend menu's last choice
  const storage = (action) => {
    try {
      return action(localStorage);
    } catch {
      return null; // storage disabled: the choice lasts until the page is left
    }
  };
  const controlledByServiceWorker = () => {
    try {
      return Boolean(navigator.serviceWorker?.controller);
    } catch {
      return false; // a browser that throws on service workers here (a private window of some): none
    }
  };
  const url = new URL("worker.js", location.href);
  const requested = new URLSearchParams(location.search).get("backend") || storage((s) => s.getItem(CHOICE));
  if (requested) url.searchParams.set("backend", requested);
  // a static export's service worker keeps what the page downloads (static/isolation_sw.js): the worker then takes the
  // classifier's files earlier, so that one visit leaves them for offline ones (static/worker/boot.js)
  if (controlledByServiceWorker()) url.searchParams.set("offline-copy", "");
  const worker = new Worker(url);
  const early = []; // message and error events before the page's modules listen
  worker.onmessage = worker.onerror = (event) => early.push(event);
  let taken = false;
  return {
    url,
    // The early worker with `onmessage` and `onerror` installed and its early events replayed; null after the first.
    take(onmessage, onerror) {
      if (taken) return null;
      taken = true;
      worker.onmessage = onmessage;
      worker.onerror = onerror;
      for (const event of early.splice(0)) (event.type === "message" ? onmessage : onerror)(event);
      return worker;
    },
    // The backend the next visit starts on, unless its address names one.
    rememberBackend(name) {
      storage((s) => s.setItem(CHOICE, name));
    },
  };
})();
