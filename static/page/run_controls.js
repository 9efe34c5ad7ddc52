// The run controls: Run (the editor's active file, its result in the Output log), Stop (also Ctrl+., anywhere on the
// page: neither the browser nor CodeMirror binds it), Clear namespace, Restart and the Backend menu (its choice
// remembered for the next visit), each offered only when it can act, and the note on what Stop can do where the page
// is not cross-origin isolated. A run that has not answered Stop STOP_GRACE_MS later (the worker's "stopping" event:
// Python has seen the Stop) is inside a call Python cannot interrupt (a long numpy operation): the worker is restarted (restart("stuck")). One that answered may take longer to end: its `finally`
// blocks and scopes release what they hold.
//
// createRunControls({playground, request, client, code, output, restart, setBackend}) ->
//   {run() -> Promise {ok, ms}, idle() -> Promise, stop() -> Promise bool, stopping(id), clearNamespace() -> Promise,
//    update()}

import { ms } from "./format.js";
import { setStatus } from "./status.js";

const STOP_GRACE_MS = 1500; // Python answers within 40 ms on a 2-core machine loaded by 4 busy processes: a wide margin
const $ = (id) => document.getElementById(id);
const ui = {
  run: $("run"), stop: $("stop"), share: $("share"), clear: $("clear-namespace"), restart: $("restart"),
  backend: $("backend"), runState: $("run-state"), stopNotice: $("stop-notice"),
};

export function createRunControls({ playground, request, client, code, output, restart, setBackend }) {
  let ticker = null;
  let grace = null; // the timer that restarts the worker if Stop has not ended the run
  let shown = null; // the Run button's run until its result is shown (a little after the worker says it ended)

  // Run is offered while the runtime is ready and nothing runs; Stop while something runs.
  function update() {
    const ready = playground.state === "ready";
    const stopHadFocus = document.activeElement === ui.stop;
    ui.run.disabled = !ready || playground.running !== null;
    ui.stop.disabled = playground.running === null;
    // a disabled button loses focus to the page's body: a keyboard user who pressed Stop continues from Run
    if (stopHadFocus && ui.stop.disabled && !ui.run.disabled) ui.run.focus();
    ui.clear.disabled = ui.backend.disabled = !ready;
    ui.restart.disabled = playground.state === "starting";
  }

  // Resolves once no code runs and the Run button's last result is shown.
  async function idle() {
    for (;;) {
      if (shown) await shown;
      else if (playground.running !== null) await new Promise((resolve) => window.addEventListener("playground:run", resolve, { once: true }));
      else return;
    }
  }

  function run() {
    if (playground.state !== "ready" || playground.running !== null || shown) return Promise.resolve({ ok: false, ms: 0 });
    const running = runAndShow();
    shown = running.finally(() => { shown = null; });
    return running;
  }

  async function runAndShow() {
    output.clear();
    code.markError(null);
    const start = performance.now();
    ui.runState.textContent = "Running...";
    clearInterval(ticker);
    ticker = setInterval(() => { ui.runState.textContent = `Running... ${ms(performance.now() - start)}`; }, 250);
    let outcome;
    try {
      await code.saveAll(); // the editor's files, as shown, for the code's imports
      outcome = await request("exec", { code: code.code, pixelRatio: window.devicePixelRatio }); // figures: sharp on this screen
    } catch (error) {
      outcome = { ok: false, restarted: error.restarted, error: { traceback: error.message, line: null } };
    } finally {
      clearInterval(ticker);
    }
    const took = performance.now() - start;
    if (outcome.restarted) {
      ui.runState.textContent = `Ended by a restart after ${ms(took)}`; // the Output says why (restart())
    } else if (outcome.ok) {
      output.value(outcome.value);
      ui.runState.textContent = `Done in ${ms(took)}`;
    } else {
      output.error(outcome.error);
      code.markError(outcome.error.line ?? null); // Python's None arrives as undefined: no line of this run's code
      ui.runState.textContent = `${outcome.error.type || "Failed"} after ${ms(took)}`;
    }
    return { ok: outcome.ok, ms: took };
  }

  async function stop() {
    const id = playground.running;
    if (id === null) return false;
    if (!client.stop(id)) {
      output.note("Stopping at the code's next await: this page is not cross-origin isolated, so Stop cannot interrupt code that never awaits. If it does not stop within 1.5 s, the Python worker is restarted.");
    }
    clearTimeout(grace);
    grace = setTimeout(() => {
      if (playground.running === id) restart("stuck").catch(() => {});
    }, STOP_GRACE_MS);
    return true;
  }

  // The worker says run `id` answered Stop.
  function stopping(id) {
    if (id === playground.running) clearTimeout(grace);
  }

  async function clearNamespace() {
    const { names, tensors } = await request("clearNamespace");
    output.note(`Namespace cleared: ${names} names forgotten, ${tensors} tensors disposed.`);
    return { names, tensors };
  }

  // Where the page is not cross-origin isolated (static/page/isolation.js), what Stop can and cannot interrupt.
  function showIsolation({ isolated, reason }) {
    ui.stopNotice.hidden = isolated || !reason;
    ui.stopNotice.textContent = `Stop is limited here: this page is not cross-origin isolated (${reason}). Stop ends code that ` +
      "waits at an await (asyncio.sleep, a readback); code that never awaits it ends by restarting the Python worker, " +
      "and input() cannot read a line. " +
      "The project's server (python -m app serve) and hosts that read the export's _headers file send the headers.";
  }
  showIsolation(window.playgroundIsolation);
  window.addEventListener("playground:isolation", (event) => showIsolation(event.detail));

  ui.run.addEventListener("click", () => run());
  ui.stop.addEventListener("click", () => stop());
  window.addEventListener("keydown", (event) => {
    if (event.key !== "." || !event.ctrlKey || event.altKey || event.shiftKey || event.metaKey) return;
    event.preventDefault();
    stop();
  }, { capture: true }); // before the editor sees it
  ui.restart.addEventListener("click", () => restart("button").catch(() => {}));
  ui.clear.addEventListener("click", () => clearNamespace().catch((error) => output.note(error.message, "failed")));
  ui.share.addEventListener("click", () => code.share());
  ui.backend.addEventListener("change", async () => {
    ui.backend.disabled = true;
    const choice = ui.backend.value;
    setStatus(`Starting ${choice}...`, "");
    try {
      await setBackend(choice);
      window.playgroundBoot.rememberBackend(choice);
    } catch (error) {
      setStatus("Could not switch the backend: " + error.message, "failed");
    } finally {
      ui.backend.disabled = playground.state !== "ready";
    }
  });

  return { run, idle, stop, stopping, clearNamespace, update };
}
