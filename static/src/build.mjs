// Bundles editor.js and line_chart.js with esbuild into static/vendor/editor-HASH.js and charts-HASH.js (+
// charts-HASH.css, uPlot's stylesheet) and names those files in static/vendor/editor.json, which
// static/panels/code/code.js and static/panels/charts/charts_panel.js read. The hash changes with the bundle's bytes, so
// a browser never runs a stale editor or chart.
// Run by build.sh (which installs the pinned packages first); static/vendor/ is generated and git-ignored.
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = path.dirname(fileURLToPath(import.meta.url));
const outdir = path.join(here, "..", "vendor");

await mkdir(outdir, { recursive: true });
for (const name of await readdir(outdir)) await rm(path.join(outdir, name), { recursive: true });
const result = await esbuild.build({
  entryPoints: { editor: path.join(here, "editor.js"), charts: path.join(here, "line_chart.js") },
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
// Each output named by its entry and kind: {editor, charts, chartsCss} -> vendor/NAME-HASH.EXT
const manifest = {};
for (const [file, { entryPoint, bytes }] of Object.entries(result.metafile.outputs)) {
  if (!file.endsWith(".js") && !file.endsWith(".css")) continue;
  const name = path.basename(file).replace(/-[A-Z0-9]+\.(js|css)$/, "");
  manifest[file.endsWith(".css") ? name + "Css" : name] = "vendor/" + path.basename(file);
  console.log(`static/src/build.mjs: vendor/${path.basename(file)} (${bytes} bytes${entryPoint ? "" : ", styles"})`);
}
await writeFile(path.join(outdir, "editor.json"), JSON.stringify(manifest) + "\n");
