// The Classify panel: an image (a chosen or dropped file, a bundled sample) classified by EfficientNet-Lite0 in the
// worker (static/panels/classify/classify_worker.js), its top 5 and timings shown, and the bar of the classifier's download; with
// its model picker (model_picker.js) and live camera (classify_camera.js).
//
// Adds to window.playground: classify(urlOrBlob), loadClassifier(), lastClassification (documented in main.js).

import { initClassifyCamera } from "./classify_camera.js";
import { bytes, lastLine, ms } from "../../page/format.js";
import { initModelPicker } from "./model_picker.js";
import { registerPanel } from "../../page/panels.js";

const $ = (id) => document.getElementById(id);
const ui = {
  file: $("classify-file"), drop: $("classify-drop"), preview: $("classify-preview"), progress: $("classify-progress"),
  status: $("classify-status"), results: $("classify-results"), samples: document.querySelectorAll("[data-sample]"),
};

// The classifier's weights download for Classify or for Teach: the bar shows while they do, the line says when
// they are in (the Teach panel reports its own work).
function showClassifierProgress({ loaded, total }) {
  const done = loaded >= total;
  ui.progress.hidden = done;
  ui.progress.max = total || 1;
  ui.progress.value = loaded;
  ui.status.className = "status";
  ui.status.textContent = done ? `EfficientNet-Lite0 downloaded (${bytes(total)}).`
    : `Loading EfficientNet-Lite0: ${bytes(loaded)} of ${bytes(total)}`;
}

function showClassification({ top, timings: t, backend, load, image }) {
  ui.progress.hidden = true;
  ui.results.replaceChildren(...top.map(({ index, label, probability }) => {
    const row = document.createElement("li");
    row.textContent = `${label} (${index}): ${(probability * 100).toFixed(1)}%`;
    return row;
  }));
  // On a GPU, forward only records the dispatches; the readback waits for the GPU to run them, and loading the
  // model waits for its pipelines' compiles (the warm-up). numpy and wasm compute on the host in forward: their
  // readback is a copy, and they compile nothing.
  const onGpu = backend === "webgpu";
  const readback = onGpu ? "readback (with the GPU's work)" : "readback";
  let text = `${backend}: preprocess ${ms(t.preprocess_ms)} · forward ${ms(t.forward_ms)} · ${readback} ${ms(t.readback_ms)}`;
  const { original: o, uploaded: u } = image;
  if (o.width !== u.width) text = `${o.width}x${o.height} shrunk to ${u.width}x${u.height} · ` + text;
  if (load && !load.cached) {
    text += ` · model loaded in ${ms(load.load_ms)} (weights downloaded in ${ms(load.download_ms)})`;
    if (onGpu) text += `, warm-up ${ms(load.warmup_ms)}`;
  }
  ui.status.textContent = text;
}

function init({ playground, request, decodeImage }) {
  async function classifyImage(image) {
    const { pixels, width, height, original } = await decodeImage(image);
    const result = await request("classify.image", { pixels, width, height, model: playground.model }, [pixels]);
    result.image = { original, uploaded: { width, height } };
    playground.lastClassification = result;
    showClassification(result);
    return result.top;
  }

  async function classifyFromUI(image) {
    if (!image) return;
    if (ui.preview.src.startsWith("blob:")) URL.revokeObjectURL(ui.preview.src);
    ui.preview.src = URL.createObjectURL(image);
    ui.preview.hidden = false;
    ui.status.className = "status";
    ui.status.textContent = "Classifying...";
    ui.results.replaceChildren();
    try {
      await classifyImage(image);
    } catch (error) {
      console.error(error);
      ui.progress.hidden = true;
      ui.preview.hidden = true; // not a broken-image icon
      ui.status.className = "status failed";
      ui.status.textContent = "Could not classify the image: " + lastLine(error.message);
    }
  }

  // A bundled sample is fetched from the page's own server, then classified like a chosen file.
  async function classifySample(url) {
    try {
      const response = await fetch(url);
      if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
      await classifyFromUI(await response.blob());
    } catch (error) {
      ui.status.className = "status failed";
      ui.status.textContent = "Could not load the sample: " + error.message;
    }
  }

  ui.file.addEventListener("change", () => classifyFromUI(ui.file.files[0]));
  ui.drop.addEventListener("dragover", (event) => { event.preventDefault(); ui.drop.classList.add("over"); });
  ui.drop.addEventListener("dragleave", () => ui.drop.classList.remove("over"));
  ui.drop.addEventListener("drop", (event) => {
    event.preventDefault();
    ui.drop.classList.remove("over");
    classifyFromUI(event.dataTransfer.files[0]);
  });
  for (const button of ui.samples) button.addEventListener("click", () => classifySample(button.dataset.sample));

  playground.classify = classifyImage;
  playground.loadClassifier = () => request("classify.load", { model: playground.model });
  playground.lastClassification = null;
  initModelPicker(playground);
  initClassifyCamera(playground);
}

registerPanel({
  id: "classify",
  worker: "panels/classify/classify_worker.js",
  events: { "classifier-progress": showClassifierProgress },
  init,
});
