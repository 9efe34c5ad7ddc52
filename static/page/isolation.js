// Cross-origin isolation where the host sends no COOP/COEP headers. Stop interrupts code that never awaits only in
// an isolated page (the page and its worker share memory), and the project's server sends the headers; a static copy
// on a plain static server (`python -m app export DIR`, then `python -m http.server`) sends none. There this script
// registers the page's own service worker (static/isolation_sw.js), which adds the headers to this origin's answers
// (and keeps an export's files for offline visits), and reloads the page once it is in control. Runs first, before
// boot.js starts the Python worker: a reload costs that worker's first moments only.
//
// window.playgroundIsolation = {isolated, reason}: reason says why the page is not isolated (null while it is, or
// while the service worker is being installed for the reload); a change fires the DOM event "playground:isolation".
"use strict";

window.playgroundIsolation = (() => {
  const RELOADED = "py_engine.isolation-reload"; // in sessionStorage: the reload happened once, in this tab
  const state = { isolated: self.crossOriginIsolated, reason: null };
  const remember = (action) => {
    try {
      action(sessionStorage);
    } catch {
      // storage disabled: a reload that did not isolate may then be tried again on the next visit
    }
  };
  const give = (reason) => {
    state.reason = reason;
    window.dispatchEvent(new CustomEvent("playground:isolation", { detail: state }));
  };
  let reloaded = false;
  remember((storage) => {
    reloaded = storage.getItem(RELOADED) === "1";
    storage.removeItem(RELOADED);
  });
  if (state.isolated) return state;
  if (!("serviceWorker" in navigator)) {
    state.reason = window.isSecureContext ? "this browser offers no service workers"
      : "the page is not served over https or from localhost, where service workers run";
    return state;
  }
  if (reloaded) {
    state.reason = "its host sends no COOP/COEP headers, and the page's service worker could not add them";
    return state;
  }
  // a worker that never becomes active (a browser or an extension that blocks service workers) must not leave the
  // page waiting without a word
  const READY_MS = 5000;
  const late = new Promise((_, reject) => setTimeout(() => reject(new Error(`not active after ${READY_MS / 1000} s`)), READY_MS));
  // updateViaCache "none": the browser's check for a new export compares the worker's imported manifest
  // (export_manifest.js) with the host's, not with a copy in its HTTP cache
  navigator.serviceWorker.register("isolation_sw.js", { updateViaCache: "none" })
    .then(() => Promise.race([navigator.serviceWorker.ready, late]))
    .then(() => {
      remember((storage) => storage.setItem(RELOADED, "1"));
      location.reload();
    })
    .catch((error) => give(`its host sends no COOP/COEP headers, and the page's service worker did not start (${error.message})`));
  return state;
})();
