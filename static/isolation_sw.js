// The page's own service worker, registered by static/isolation.js only where the host sends no COOP/COEP headers (a
// static copy of the page: `python -m app export DIR` on a plain static server). It hands every request of this origin
// to the network and adds the headers that make the page cross-origin isolated to the answers: COOP same-origin and
// COEP require-corp, and CORP same-origin, which require-corp asks of each subresource. An isolated page may share
// memory with its worker, which is how Stop interrupts code that never awaits. It caches nothing and changes no body:
// the answers are the host's.
"use strict";

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

const ISOLATION = {
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Embedder-Policy": "require-corp",
  "Cross-Origin-Resource-Policy": "same-origin",
};

function isolated(response) {
  if (response.type === "opaque" || response.type === "opaqueredirect" || response.status === 0) return response;
  const headers = new Headers(response.headers);
  for (const [name, value] of Object.entries(ISOLATION)) if (!headers.has(name)) headers.set(name, value);
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

self.addEventListener("fetch", (event) => {
  const { request } = event;
  if (new URL(request.url).origin !== self.location.origin) return; // another origin: the browser's own handling
  if (request.cache === "only-if-cached" && request.mode !== "same-origin") return; // fetch() would throw on it
  event.respondWith(fetch(request).then(isolated));
});
