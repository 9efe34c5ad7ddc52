// The Teach panel (like Teachable Machine): the user names 2 to 5 classes of images or of poses, gives each a few
// examples (files, drops, the bundled samples, or the camera's frames while a class's button is held), and the page
// trains a small head, in the worker, on the page's backend (static/panels/teach/teach_worker.js, static/panels/teach/teach.py): on
// EfficientNet-Lite0's pooled features for images, on MoveNet's 17 keypoints for poses. Then it classifies the
// camera's frames live, or a file, with the user's classes. The classes and their examples stay across reloads until
// cleared (teach_store.js). The model downloads as a TF.js layers model (model.json + its .bin shard): for images the
// full model (the image in) or, labelled so, the head alone; a head loads back. The images never leave the page: only
// their pixels go to the worker.
//
// Registered as the panel "teach" with its worker requests; window.playground.teach is what createTeachPanel returns
// (the API is listed in main.js's header).

import * as camera from "../../page/camera.js";
import { registerPanel } from "../../page/panels.js";
import * as store from "./teach_store.js";

function createTeachPanel({ host, request, decodeImage }) {
  const MIN_CLASSES = 2, MAX_CLASSES = 5, DEFAULT_EPOCHS = 30;
  const SAMPLES = [
    { url: "samples/astronaut.png", name: "Astronaut" },
    { url: "samples/chelsea.png", name: "Cat" },
    { url: "samples/coffee.webp", name: "Coffee" },
    { url: "samples/rocket.jpg", name: "Rocket" },
  ];
  const KINDS = {
    image: "EfficientNet-Lite0 turns each image into 1280 features",
    pose: "MoveNet finds the person's 17 body keypoints in each image (51 features: x, y and score each)",
  };
  // each class: its name, its examples ({features, thumb}: as teach_store.js keeps them) and their thumbnails' URLs
  const newClass = (name) => ({ name, samples: [], thumbs: [] });
  const classes = [newClass("Class 1"), newClass("Class 2")];
  let kind = "image";
  let trained = false; // a head is there (trained or loaded)
  let live = false, liveFrames = 0;
  let exported = []; // the object URLs of the last download's links

  const el = (tag, props = {}, ...children) => {
    const node = Object.assign(document.createElement(tag), props);
    for (const [name, value] of Object.entries(props.attrs || {})) node.setAttribute(name, value);
    node.append(...children);
    return node;
  };

  const kindPick = el("fieldset", { className: "teach-kind" }, el("legend", { textContent: "Classes of" }),
    ...Object.keys(KINDS).map((k) => el("label", {},
      el("input", { type: "radio", name: "teach-kind", value: k, checked: k === kind }), k === "image" ? " Images" : " Poses")));
  const hint = el("p", { className: "hint" });
  const list = el("ol", { className: "teach-classes" });
  const cameraButton = el("button", { type: "button", textContent: "Use the camera", attrs: { "aria-pressed": "false" } });
  const video = el("video", { hidden: true, attrs: { "aria-label": "Teach camera view" } });
  let recording = null; // the class index whose record button is held, while it is
  const addClassButton = el("button", { type: "button", textContent: "Add a class" });
  const clearButton = el("button", { type: "button", textContent: "Clear classes", title: "Forget every class and example, here and in this browser's storage" });
  const epochs = el("input", { type: "number", id: "teach-epochs", min: 1, max: 1000, value: DEFAULT_EPOCHS });
  const trainButton = el("button", { type: "button", className: "primary", textContent: "Train" });
  const status = el("p", { className: "status", attrs: { role: "status", "aria-label": "Teach status" } });
  const chart = el("canvas", { width: 480, height: 90, hidden: true, attrs: { role: "img", "aria-label": "Loss per epoch" } });
  const liveButton = el("button", {
    type: "button", textContent: "Predict live from the camera", disabled: true, attrs: { "aria-pressed": "false" },
  });
  const tryFile = el("input", { type: "file", id: "teach-try", accept: "image/png,image/jpeg,image/webp" });
  const tryPreview = el("img", { alt: "The image classified with your classes", hidden: true });
  const results = el("ol", { className: "teach-results", attrs: { "aria-label": "Your classes' probabilities" } });
  const downloadButton = el("button", { type: "button", textContent: "Download model", disabled: true });
  const headButton = el("button", {
    type: "button", textContent: "Download the head alone", disabled: true,
    title: "The head's input is EfficientNet-Lite0's 1280 pooled features, not an image",
  });
  const loadFiles = el("input", { type: "file", id: "teach-load", multiple: true, accept: ".json,.bin,application/json" });
  const links = el("span", { className: "teach-links" });

  host.append(
    el("h2", { textContent: "Teach" }),
    kindPick,
    hint,
    el("div", { className: "teach-row" }, cameraButton),
    video,
    list,
    el("div", { className: "teach-row" }, addClassButton, clearButton),
    el("div", { className: "teach-row" },
      el("label", { htmlFor: "teach-epochs", textContent: "Epochs" }), epochs, trainButton),
    status,
    chart,
    el("div", { className: "teach-row" }, liveButton),
    el("div", { className: "teach-row" },
      el("label", { htmlFor: "teach-try", textContent: "Classify an image with your classes:" }), tryFile),
    tryPreview,
    results,
    el("div", { className: "teach-row" }, downloadButton, headButton, links),
    el("div", { className: "teach-row" },
      el("label", { htmlFor: "teach-load", textContent: "Load a downloaded model (model.json and its .bin):" }), loadFiles),
  );

  function say(text, failed = false) {
    status.textContent = text;
    status.className = failed ? "status failed" : "status";
  }

  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : word.endsWith("s") ? "es" : "s"}`;

  // The last line of a Python traceback is the exception and its message.
  const lastLine = (text) => text.trim().split("\n").pop();

  async function guarded(what, work) {
    try {
      return await work();
    } catch (error) {
      console.error(error);
      say(`${what}: ${lastLine(error.message)}`, true);
      throw error;
    }
  }

  function render() {
    list.replaceChildren(...classes.map((c, i) => {
      const n = i + 1;
      const name = el("input", { type: "text", value: c.name, maxLength: 40, attrs: { "aria-label": `Class ${n} name` } });
      name.addEventListener("input", () => { c.name = name.value; persist(); });
      const file = el("input", {
        type: "file", multiple: true, accept: "image/png,image/jpeg,image/webp", attrs: { "aria-label": `Add images to class ${n}` },
      });
      file.addEventListener("change", () => addFromUI(i, [...file.files]));
      const samples = SAMPLES.map(({ url, name: sample }) => {
        const button = el("button", { type: "button", title: `Add the ${sample} sample`, attrs: { "aria-label": `Add the ${sample} sample to class ${n}` } },
          el("img", { src: url, alt: "" }));
        button.addEventListener("click", () => addFromUI(i, [url]));
        return button;
      });
      const record = el("button", {
        type: "button", textContent: "Hold to record", disabled: video.hidden, className: "record",
        title: "Hold down (mouse, touch, Space or Enter) to add the camera's frames to this class",
        attrs: { "aria-label": `Hold to record camera frames into class ${n}` },
      });
      record.addEventListener("pointerdown", (event) => { event.preventDefault(); startRecording(i); });
      record.addEventListener("keydown", (event) => {
        if ((event.key === " " || event.key === "Enter") && !event.repeat) { event.preventDefault(); startRecording(i); }
      });
      const remove = el("button", {
        type: "button", textContent: "Remove", disabled: classes.length <= MIN_CLASSES, attrs: { "aria-label": `Remove class ${n}` },
      });
      remove.addEventListener("click", () => removeClass(i).catch(() => {}));
      const row = el("li", { className: "teach-class", attrs: { "aria-label": `Class ${n}` } },
        el("div", { className: "teach-row" }, name, el("span", { className: "teach-count", textContent: plural(c.thumbs.length, "image") }), remove),
        el("div", { className: "teach-row drop" }, file, el("span", { textContent: "or a sample:" }), ...samples, record),
        el("div", { className: "teach-thumbs" }, ...c.thumbs.map((src) => el("img", { src, alt: "" }))));
      row.addEventListener("dragover", (event) => { event.preventDefault(); row.classList.add("over"); });
      row.addEventListener("dragleave", () => row.classList.remove("over"));
      row.addEventListener("drop", (event) => {
        event.preventDefault();
        row.classList.remove("over");
        addFromUI(i, [...event.dataTransfer.files]);
      });
      return row;
    }));
    addClassButton.disabled = classes.length >= MAX_CLASSES;
    hint.textContent = `Name ${MIN_CLASSES} to ${MAX_CLASSES} classes and give each a few images: ${KINDS[kind]}, and a ` +
      "small head learns your classes from them. Your images stay in this page; the classes stay in this browser until cleared.";
    headButton.hidden = kind !== "image";
    for (const input of kindPick.querySelectorAll("input")) input.checked = input.value === kind;
    // a frame added re-draws the list: the held button's successor keeps the keyboard's focus (its keyup ends it)
    if (recording !== null) list.querySelectorAll("button.record")[recording]?.focus();
  }

  // The camera's frames go into class `classIndex`, one after the other, while its record button is held.
  async function startRecording(classIndex) {
    if (recording !== null || video.hidden) return;
    recording = classIndex;
    let added = 0;
    while (recording === classIndex && !video.hidden) {
      const frame = await camera.frameBlob(video);
      const ok = await guarded("Could not add the camera's frame", () => addExample(classIndex, frame)).then(() => true, () => false);
      if (!ok) break;
      added += 1;
      say(`Recording into ${classes[classIndex].name}: ${plural(added, "frame")} added.`);
    }
    recording = null;
    if (added) say(`${plural(added, "frame")} from the camera added to ${classes[classIndex].name}; ${plural(total(), "image")} in ${plural(classes.length, "class")}.`);
  }

  async function toggleCamera() {
    if (!video.hidden) {
      recording = null;
      stopLive();
      camera.switchOff(video, cameraButton);
      render();
      return;
    }
    if (!(await camera.switchOn(video, cameraButton, say))) return;
    say("Camera on: hold a class's \"Hold to record\" button to add its frames.");
    render();
  }

  // RGBA pixels of the image for the worker, transferred (not copied).
  async function pixelsOf(image) {
    const { pixels, width, height } = await decodeImage(image);
    return [{ pixels, width, height }, [pixels]];
  }

  async function addExample(classIndex, image) {
    if (!Number.isInteger(classIndex) || classIndex < 0 || classIndex >= classes.length) {
      throw new Error(`teach.addExample: class index must be 0 to ${classes.length - 1} (${classes.length} classes), got ${classIndex}`);
    }
    const [args, transfer] = await pixelsOf(image);
    const { counts, features } = await request("teach.addExample", { classIndex, ...args }, transfer);
    classes[classIndex].samples.push({ features: Float32Array.from(features), thumb: image instanceof Blob ? image : String(image) });
    classes[classIndex].thumbs.push(image instanceof Blob ? URL.createObjectURL(image) : String(image));
    render();
    persist();
    return { counts };
  }

  async function addFromUI(classIndex, images) {
    for (const image of images) {
      say(`Adding an image to ${classes[classIndex].name}...`);
      await guarded("Could not add the image", () => addExample(classIndex, image)).catch(() => {});
    }
    if (!status.classList.contains("failed")) say(`${plural(total(), "image")} in ${plural(classes.length, "class")}.`);
  }

  const total = () => classes.reduce((sum, c) => sum + c.thumbs.length, 0);

  function addClass(name) {
    if (classes.length >= MAX_CLASSES) throw new Error(`teach.addClass: at most ${MAX_CLASSES} classes`);
    classes.push(newClass(name ?? `Class ${classes.length + 1}`));
    render();
    persist();
    return classes.length - 1;
  }

  async function removeClass(classIndex) {
    if (classes.length <= MIN_CLASSES) throw new Error(`teach.removeClass: at least ${MIN_CLASSES} classes are needed`);
    await request("teach.removeClass", { classIndex });
    for (const src of classes[classIndex].thumbs) if (src.startsWith("blob:")) URL.revokeObjectURL(src);
    classes.splice(classIndex, 1);
    render();
    persist();
  }

  // The classes as teach_store.js keeps them; saved after each change (the last of quick changes wins).
  let saving = Promise.resolve();
  function persist() {
    const state = { kind, classes: classes.map(({ name, samples }) => ({ name, samples: [...samples] })) };
    saving = saving.then(() => store.save(state)).catch((error) => {
      console.error(error);
      say(`Your classes could not be kept for the next visit: ${error.message}`, true);
    });
    return saving;
  }

  function replaceClasses(kept) {
    for (const c of classes) for (const src of c.thumbs) if (src.startsWith("blob:")) URL.revokeObjectURL(src);
    classes.splice(0, classes.length, ...kept.map(({ name, samples }) => ({
      name, samples, thumbs: samples.map(({ thumb }) => (typeof thumb === "string" ? thumb : URL.createObjectURL(thumb))),
    })));
    render();
  }

  // The last visit's classes and examples, given back to the worker (their features: nothing is embedded again).
  async function restore() {
    const state = await store.load();
    if (!state || !state.classes.length) return false;
    kind = state.kind;
    replaceClasses(state.classes);
    await request("teach.setKind", { kind });
    for (const [i, c] of state.classes.entries()) {
      for (const { features } of c.samples) await request("teach.addFeatures", { classIndex: i, features });
    }
    say(`Your ${plural(classes.length, "class")} from the last visit are back, with ${plural(total(), "example")}: train again to use them.`);
    return true;
  }

  function forgetHead() {
    trained = false;
    stopLive();
    for (const button of [liveButton, downloadButton, headButton]) button.disabled = true;
  }

  // Images or poses: another kind forgets the examples (the names stay) and the head.
  async function setKind(next) {
    if (!(next in KINDS)) throw new Error(`teach.setKind: "image" or "pose", got ${JSON.stringify(next)}`);
    if (next === kind) return;
    await request("teach.setKind", { kind: next });
    kind = next;
    forgetHead();
    replaceClasses(classes.map(({ name }) => ({ name, samples: [] })));
    persist();
    say(`Classes of ${next === "image" ? "images" : "poses"}: add examples to each.`);
  }

  async function clear() {
    await request("teach.reset");
    forgetHead();
    replaceClasses([newClass("Class 1"), newClass("Class 2")]);
    saving = saving.then(() => store.clear()); // after any save still under way
    await saving;
    say("Cleared: every class and example is forgotten, here and in this browser's storage.");
  }

  // The loss per epoch, drawn as the "training" events arrive.
  function drawChart(losses, epochsTotal) {
    const ctx = chart.getContext("2d");
    const style = getComputedStyle(host);
    const { width, height } = chart;
    const pad = 6, top = Math.max(...losses, 1e-6);
    ctx.clearRect(0, 0, width, height);
    ctx.strokeStyle = style.getPropertyValue("--line") || "#ccc";
    ctx.strokeRect(0.5, 0.5, width - 1, height - 1);
    ctx.strokeStyle = style.getPropertyValue("--accent") || "#2a62c9";
    ctx.lineWidth = 2;
    ctx.beginPath();
    losses.forEach((loss, epoch) => {
      const x = pad + (epoch / Math.max(1, epochsTotal - 1)) * (width - 2 * pad);
      const y = height - pad - (loss / top) * (height - 2 * pad);
      if (epoch === 0) ctx.moveTo(x, y);
      else ctx.lineTo(x, y);
    });
    ctx.stroke();
    ctx.fillStyle = style.getPropertyValue("--muted") || "#666";
    ctx.font = "12px system-ui, sans-serif";
    ctx.textAlign = "right";
    ctx.fillText(`loss per epoch: ${losses[0].toPrecision(3)} → ${losses.at(-1).toPrecision(3)} (epoch ${losses.length}/${epochsTotal})`, width - pad, 16);
    chart.setAttribute("aria-label", `Loss per epoch: ${losses.map((l) => l.toFixed(3)).join(", ")}`);
    chart.hidden = false;
  }

  async function train({ epochs: count = Number(epochs.value) || DEFAULT_EPOCHS } = {}) {
    const names = classes.map((c) => c.name.trim());
    const losses = [];
    const onEpoch = ({ detail: p }) => {
      if (p.kind !== "epoch") return;
      losses.push(p.logs.loss);
      say(`Training: epoch ${p.epoch + 1}/${p.epochs} · loss ${p.logs.loss.toFixed(4)} · accuracy ${p.logs.accuracy.toFixed(3)}`);
      drawChart(losses, p.epochs);
    };
    trainButton.disabled = true;
    say(`Training a head for ${names.join(", ")}...`);
    window.addEventListener("playground:training", onEpoch);
    try {
      const result = await guarded("Could not train", () => request("teach.train", { classes: names, epochs: count }));
      const { loss, accuracy } = result.history;
      say(`Trained on ${plural(result.examples, "image")} for ${plural(loss.length, "epoch")}: loss ${loss.at(-1).toFixed(4)}, ` +
        `accuracy ${accuracy.at(-1).toFixed(3)}. Classify an image below, or download the model.`);
      trained = true;
      for (const button of [liveButton, downloadButton, headButton]) button.disabled = false;
      return result;
    } finally {
      window.removeEventListener("playground:training", onEpoch);
      trainButton.disabled = false;
    }
  }

  async function predict(image) {
    const [args, transfer] = await pixelsOf(image);
    return request("teach.predict", args, transfer);
  }

  async function predictFromUI(image) {
    if (!image) return;
    if (tryPreview.src.startsWith("blob:")) URL.revokeObjectURL(tryPreview.src);
    tryPreview.src = URL.createObjectURL(image);
    tryPreview.hidden = false;
    results.replaceChildren();
    const top = await guarded("Could not classify the image", () => predict(image)).catch(() => null);
    tryPreview.hidden = !top; // a file that is no image shows the message, not a broken-image icon
    if (!top) return;
    showTop(top);
    say(`Classified with your classes: ${top[0].label}.`);
  }

  function showTop(top) {
    results.replaceChildren(...top.map(({ label, probability }) => el("li", { textContent: `${label}: ${(probability * 100).toFixed(1)}%` })));
  }

  // The camera's frames classified with your classes, one at a time, until pressed again.
  async function startLive() {
    if (live || !trained) return;
    if (video.hidden) await toggleCamera();
    if (video.hidden) return; // the camera could not start: the status says why
    live = true;
    liveFrames = 0;
    liveButton.setAttribute("aria-pressed", "true");
    tryPreview.hidden = true;
    while (live && !video.hidden) {
      const top = await guarded("Could not classify the camera's frame", async () => predict(await camera.frameBlob(video))).catch(() => null);
      if (!top) break;
      if (!live) return;
      liveFrames += 1;
      showTop(top);
      say(`Live: ${top[0].label} (${(top[0].probability * 100).toFixed(0)}%) · ${plural(liveFrames, "frame")} classified`);
    }
    stopLive();
  }

  function stopLive() {
    live = false;
    liveButton.setAttribute("aria-pressed", "false");
  }

  async function embed(image) {
    const [args, transfer] = await pixelsOf(image);
    return request("teach.embed", args, transfer);
  }

  // The model as model.save wrote it in the worker: model.json (parsed), the weights (the shards' bytes, in the
  // manifest's order) and the files themselves. full: for images, the body and the head (the image in); for poses
  // the head is the whole model.
  async function exportModel({ full = false } = {}) {
    const { files } = await request(full && kind === "image" ? "teach.exportFull" : "teach.export");
    const modelJson = JSON.parse(await files[0].blob.text());
    const shards = modelJson.weightsManifest.flatMap((group) => group.paths);
    const blobs = shards.map((path) => {
      const file = files.find((f) => f.name === path.replace(/^\.\//, ""));
      if (!file) throw new Error(`teach.exportModel: model.json lists ${path}, which the worker did not write`);
      return file.blob;
    });
    return { modelJson, weights: await new Blob(blobs).arrayBuffer(), files };
  }

  // Each file downloads on its own (a browser may ask once whether the page may download several); the links stay.
  // full: the model to use (downloadButton), else the head alone (headButton).
  async function download({ full = true } = {}) {
    say(full && kind === "image" ? "Saving the full model (EfficientNet-Lite0 and your head)..." : "Saving the head...");
    const { files } = await exportModel({ full });
    for (const url of exported) URL.revokeObjectURL(url);
    exported = files.map(({ blob }) => URL.createObjectURL(blob));
    const anchors = files.map(({ name }, k) => el("a", { href: exported[k], download: name, textContent: name }));
    links.replaceChildren("Files: ", ...anchors.flatMap((a, k) => (k ? [" · ", a] : [a])));
    for (const a of anchors) a.click();
    const what = kind === "pose" ? "the model (the head on 51 pose features: MoveNet's 17 keypoints as x / width, y / height and score)"
      : full ? "the full model (a 224x224 RGB image of 0..255 in, one probability per class out)"
        : "the head alone (its input is EfficientNet-Lite0's 1280 pooled features, layer avg_pool, not an image)";
    say(`Downloaded ${what}: ${files.map((f) => f.name).join(" and ")}; keep them in one folder, tf.loadLayersModel reads them.`);
    return files.map((f) => f.name);
  }

  async function loadModel(files) {
    const given = [...files].map((f) => ({ name: f.name, blob: f.blob ?? f }));
    if (!given.some((f) => f.name === "model.json")) throw new Error("teach.loadModel: choose the model.json and its .bin file together");
    const result = await request("teach.load", { files: given });
    kind = result.kind;
    replaceClasses(result.classes.map((name) => ({ name, samples: [] })));
    persist();
    trained = true;
    for (const button of [liveButton, downloadButton, headButton]) button.disabled = false;
    say(`Loaded a head for ${result.classes.join(", ")}. Classify an image below.`);
    return result;
  }

  addClassButton.addEventListener("click", () => addClass());
  cameraButton.addEventListener("click", () => toggleCamera());
  // the held button is drawn anew with each frame added: its release is heard on the window
  window.addEventListener("pointerup", () => { recording = null; });
  window.addEventListener("keyup", (event) => { if (event.key === " " || event.key === "Enter") recording = null; });
  window.addEventListener("pointercancel", () => { recording = null; });
  window.addEventListener("blur", () => { recording = null; }); // a release in another window never reaches this one
  trainButton.addEventListener("click", () => train().catch(() => {}));
  clearButton.addEventListener("click", () => guarded("Could not clear the classes", clear).catch(() => {}));
  kindPick.addEventListener("change", (event) => guarded("Could not change what the classes are of", () => setKind(event.target.value)).catch(() => render()));
  liveButton.addEventListener("click", () => (live ? stopLive() : startLive()));
  headButton.addEventListener("click", () => guarded("Could not download the head", () => download({ full: false })).catch(() => {}));
  tryFile.addEventListener("change", () => predictFromUI(tryFile.files[0]));
  downloadButton.addEventListener("click", () => guarded("Could not download the model", () => download()).catch(() => {}));
  loadFiles.addEventListener("change", () => guarded("Could not load the model", () => loadModel(loadFiles.files)).catch(() => {}));
  render();
  const restored = restore().catch((error) => {
    console.error(error);
    say(`Your classes from the last visit could not be restored: ${lastLine(error.message)}`, true);
    return false;
  });

  return {
    restored,
    kind: () => kind,
    setKind,
    clear,
    live: { start: startLive, stop: stopLive, running: () => live, frames: () => liveFrames },
    classes: () => classes.map((c) => c.name),
    addClass,
    removeClass,
    addExample,
    train,
    predict,
    embed,
    exportModel,
    download,
    loadModel,
  };
}

registerPanel({
  id: "teach",
  worker: "panels/teach/teach_worker.js",
  init({ playground, request, decodeImage }) {
    playground.teach = createTeachPanel({ host: document.getElementById("teach"), request, decodeImage });
  },
});
