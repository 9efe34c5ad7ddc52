// Bundles editor.js with esbuild into static/vendor/editor-HASH.js and names that file in static/vendor/editor.json,
// which static/app.js reads. The hash changes with the bundle's bytes, so a browser never runs a stale editor.
// Run by build.sh (which installs the pinned packages first); static/vendor/ is generated and git-ignored.
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = path.dirname(fileURLToPath(import.meta.url));
const outdir = path.join(here, "..", "static", "vendor");

await mkdir(outdir, { recursive: true });
for (const name of await readdir(outdir)) await rm(path.join(outdir, name), { recursive: true });
const result = await esbuild.build({
  entryPoints: { editor: path.join(here, "editor.js") },
  entryNames: "[name]-[hash]",
  outdir,
  bundle: true,
  format: "esm",
  target: "es2022",
  minify: true,
  legalComments: "linked",
  metafile: true,
  logLevel: "warning",
});
const [bundle] = Object.keys(result.metafile.outputs).filter((file) => file.endsWith(".js"));
const manifest = { editor: "vendor/" + path.basename(bundle) };
await writeFile(path.join(outdir, "editor.json"), JSON.stringify(manifest) + "\n");
console.log(`web/build.mjs: ${manifest.editor} (${result.metafile.outputs[bundle].bytes} bytes)`);
