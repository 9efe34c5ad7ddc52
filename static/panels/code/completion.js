// The editor's completion and signature help, from jedi in the worker (op "complete", static/worker/requests.js;
// what it answers: static/panels/code/playground_completion.py). It never waits for the user's code: while a run is in progress it asks
// nothing, and an answer that takes longer than TIMEOUT_MS (the worker busy in code that never awaits, or jedi's
// first load on a slow network) is given up, answering nothing.
//
// createCompletion({playground, request}) -> complete(code, offset) -> Promise of the worker's answer or null

const TIMEOUT_MS = 8000; // the first request loads jedi (1.7 MB) and reads the packages the code uses

export function createCompletion({ playground, request }) {
  return async function complete(code, offset) {
    if (playground.state !== "ready" || playground.running !== null) return null;
    let timer;
    const late = new Promise((resolve) => { timer = setTimeout(() => resolve(null), TIMEOUT_MS); });
    try {
      return await Promise.race([request("complete", { code, offset }), late]);
    } catch (error) {
      console.warn("completion:", error.message);
      return null;
    } finally {
      clearTimeout(timer);
    }
  };
}
