// The Teach panel (static/teach.js makes it; its requests are answered by static/teach_worker.js) registered as a
// panel: window.playground.teach is the panel's API (documented in main.js).

import { registerPanel } from "./panels.js";

registerPanel({
  id: "teach",
  requests: { teach: "teach_worker.js" },
  init({ playground, request, decodeImage }) {
    playground.teach = window.createTeachPanel({ host: document.getElementById("teach"), request, decodeImage });
  },
});
