// The page's own service worker, registered by static/page/isolation.js only where the host sends no COOP/COEP
// headers (a static copy of the page: `python -m app export DIR` on a plain static server; the project's server sends
// them, so there it is never registered). It sits at the root: a service worker controls the pages at or below its
// own folder. It does two things for this origin's requests:
//
// - Headers: it gives each answer the headers the project's server sends with that URL and the host did not: the
//   Content-Security-Policy, COOP same-origin and COEP require-corp (cross-origin isolation: the page may share memory
//   with its worker, which is how Stop interrupts code that never awaits), nosniff, CORS on the models. The export
//   writes them, per URL, into export_manifest.js (app/export.py), which this worker imports; the bodies stay the host's.
// - Offline: it keeps every answer of an exported URL in Cache Storage, in a cache named after the export's version,
//   so that after one visit the page boots, runs and classifies with the network gone (the page's own files are kept
//   at install, the rest as the page asks for it). Content-addressed URLs (the engine wheel, the bytecode, the
//   pipeline list, the model shards) never change, so they are answered from the cache first; the rest (the page, its
//   scripts, config.json, Pyodide's files) from the network first, so an online visit always gets the host's current
//   export, and from the cache when the network fails. A new export has a new version:
//   its manifest makes the browser install this worker again, and the new one deletes the old export's cache.
//
// Without a manifest (a copy of static/ made by hand) it adds only the isolation headers and caches nothing.
"use strict";

self.exportManifest = null; // {version, headers: [{name: value}], urls: {path: index}, immutable: [path], page: [path]}
try {
  importScripts("export_manifest.js");
} catch {
  // no export: the isolation headers alone
}

const manifest = self.exportManifest;
const CACHE_PREFIX = "playground-export-";
const CACHE = manifest && CACHE_PREFIX + manifest.version;
const IMMUTABLE = new Set(manifest?.immutable ?? []);
const ISOLATION = {
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Embedder-Policy": "require-corp",
  "Cross-Origin-Resource-Policy": "same-origin",
};

// The page's own files (static/'s, about 1 MB) are kept at install, not only when first asked for: a panel's scripts
// load on its first use (a worker script on the first classification), which may come offline.
async function keepThePage() {
  const cache = await caches.open(CACHE);
  await Promise.all(
    manifest.page.map(async (path) => {
      const key = new URL(path, self.location.origin).href;
      if (await cache.match(key)) return;
      const response = await fetch(key, { cache: "no-cache" });
      if (response.ok) await cache.put(key, response);
    }),
  );
}

self.addEventListener("install", (event) => {
  self.skipWaiting();
  if (manifest) event.waitUntil(keepThePage().catch(() => {})); // offline later is a bonus: never block the install
});
self.addEventListener("activate", (event) => event.waitUntil((async () => {
  const stale = (await caches.keys()).filter((name) => name.startsWith(CACHE_PREFIX) && name !== CACHE);
  await Promise.all(stale.map((name) => caches.delete(name)));
  await self.clients.claim();
})()));

// The headers the project's server sends with `path` (a navigation to a path the export lacks gets the page's).
function serverHeaders(path, request) {
  if (!manifest) return ISOLATION;
  const index = manifest.urls[path] ?? (request.mode === "navigate" ? manifest.urls["/"] : undefined);
  return index === undefined ? {} : manifest.headers[index];
}

function withHeaders(response, added) {
  if (response.type === "opaque" || response.type === "opaqueredirect" || response.status === 0) return response;
  const headers = new Headers(response.headers);
  for (const [name, value] of Object.entries(added)) if (!headers.has(name)) headers.set(name, value);
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

// What tells two answers of a URL apart without reading them (null: nothing does): an unchanged answer is not written
// to the cache again, or each online visit would rewrite the ~40 MB the page loads.
function validators(response) {
  const [etag, modified, length] = ["etag", "last-modified", "content-length"].map((name) => response.headers.get(name));
  return etag || modified ? `${etag}|${modified}|${length}` : null;
}

async function keep(cache, key, response) {
  if (response.status !== 200) return;
  const kept = await cache.match(key);
  if (kept && validators(response) !== null && validators(kept) === validators(response)) return;
  await cache.put(key, response);
}

// An exported URL's answer: from the cache first if it never changes, else from the network first; either way kept.
async function answer(event, path) {
  const cache = await caches.open(CACHE);
  const key = new URL(path, self.location.origin).href; // the host ignores the query, and so does the cache
  if (IMMUTABLE.has(path)) {
    const kept = await cache.match(key);
    if (kept) return kept;
  }
  let response;
  try {
    response = await fetch(event.request);
  } catch (error) {
    const kept = await cache.match(key);
    if (kept) return kept;
    throw error;
  }
  event.waitUntil(keep(cache, key, response.clone()).catch(() => {})); // a full disk: the page still gets its answer
  return response;
}

self.addEventListener("fetch", (event) => {
  const { request } = event;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return; // another origin: the browser's own handling
  if (request.cache === "only-if-cached" && request.mode !== "same-origin") return; // fetch() would throw on it
  const exported = manifest && request.method === "GET" && !request.headers.has("range") && url.pathname in manifest.urls;
  const response = exported ? answer(event, url.pathname) : fetch(request);
  event.respondWith(response.then((r) => withHeaders(r, serverHeaders(url.pathname, request))));
});
