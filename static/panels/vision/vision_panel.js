// The Vision panel: objects (CenterNet), poses (MoveNet), faces (BlazeFace) and hands in a photo, a sample or the
// camera's frames live, with pe.vision's detectors in the worker (static/panels/vision/vision_worker.js, static/panels/vision/vision_panel.py).
// The results are drawn over the image on a canvas and listed as text (a live region, for screen readers); the camera
// runs one frame at a time, the next once the last answer is in, and the line under the image shows the frames per
// second and the backend. The images never leave the page.
//
// Adds to window.playground:
//   vision   {detect(task, urlOrBlob) -> the worker's answer ({task, results, backend, timings, load_ms}),
//            start(task) (the camera, live), stop(), running(), frames(), fps(), last (the latest answer)}
//            task: "objects" | "pose" | "faces" | "hands"

import * as camera from "../../page/camera.js";
import { lastLine } from "../../page/format.js";
import { registerPanel } from "../../page/panels.js";
import { describe, draw } from "../../page/vision_draw.js";

const TASKS = [
  { id: "objects", label: "Objects", about: "CenterNet: boxes of the 80 COCO classes" },
  { id: "pose", label: "Pose", about: "MoveNet: 17 body keypoints of one person" },
  { id: "faces", label: "Faces", about: "BlazeFace: face boxes and 6 points each" },
  { id: "hands", label: "Hands", about: "hand boxes and 21 keypoints each" },
];
const SAMPLES = [
  { url: "samples/astronaut.png", name: "Astronaut (PNG)" },
  { url: "samples/chelsea.png", name: "Cat (PNG)" },
  { url: "samples/coffee.webp", name: "Coffee (WebP)" },
];
const MAX_SIDE = 640; // photos are shrunk by the browser until their long side is at most this
const FPS_WINDOW = 10; // frames per second over the last this many frames

const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  for (const [name, value] of Object.entries(props.attrs || {})) node.setAttribute(name, value);
  node.append(...children);
  return node;
};

function createVisionPanel({ host, request }) {
  const taskPick = el("fieldset", { className: "vision-tasks" }, el("legend", { textContent: "Find" }),
    ...TASKS.map(({ id, label, about }, i) => el("label", { title: about },
      el("input", { type: "radio", name: "vision-task", value: id, checked: i === 0 }), ` ${label}`)));
  const file = el("input", { type: "file", id: "vision-file", accept: "image/png,image/jpeg,image/webp" });
  const samples = SAMPLES.map(({ url, name }) => {
    const button = el("button", { type: "button" }, el("img", { src: url, alt: "" }), name);
    button.addEventListener("click", () => fromUI(() => fetchSample(url)));
    return button;
  });
  const cameraButton = el("button", {
    type: "button", textContent: "Camera", title: "Find them in the webcam's frames live", attrs: { "aria-pressed": "false" },
  });
  const video = el("video", { className: "vision-video", hidden: true, attrs: { "aria-hidden": "true" } });
  const status = el("p", { className: "status", attrs: { role: "status", "aria-label": "Vision status" } });
  const canvas = el("canvas", { width: 640, height: 480, hidden: true, attrs: { role: "img", "aria-label": "The image with what was found" } });
  const results = el("ul", { className: "vision-results", attrs: { "aria-label": "Found", "aria-live": "polite" } });

  host.append(
    el("h2", { textContent: "Vision" }),
    el("p", {
      className: "hint",
      textContent: "Finds objects, a person's pose, faces or hands in a photo or the camera's frames, with pe.vision " +
        "and the graph models the server serves. The first time, the model downloads.",
    }),
    taskPick,
    el("div", { className: "vision-row" }, el("label", { htmlFor: "vision-file", textContent: "Choose a photo:" }), file),
    el("div", { className: "samples vision-row", attrs: { role: "group", "aria-label": "Vision samples" } },
      el("span", { textContent: "Or try a sample:" }), ...samples),
    el("div", { className: "vision-row" }, cameraButton),
    status, video, canvas, results,
  );

  let live = false, frames = 0, stamps = [], last = null;
  const task = () => taskPick.querySelector("input:checked").value;

  function say(text, failed = false) {
    status.textContent = text;
    status.className = failed ? "status failed" : "status";
  }

  async function fetchSample(url) {
    const response = await fetch(url);
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    return response.blob();
  }

  // An image (Blob, URL, video or bitmap) as an ImageBitmap whose long side is at most MAX_SIDE.
  async function bitmapOf(image) {
    let source = image;
    if (!(image instanceof Blob || image instanceof HTMLVideoElement || image instanceof ImageBitmap)) {
      source = await fetchSample(String(image));
    }
    const full = await createImageBitmap(source);
    const scale = Math.min(1, MAX_SIDE / Math.max(full.width, full.height));
    if (scale === 1) return full;
    const small = await createImageBitmap(full, {
      resizeWidth: Math.round(full.width * scale), resizeHeight: Math.round(full.height * scale), resizeQuality: "high",
    });
    full.close();
    return small;
  }

  // Sends the image's pixels to the worker, then draws the image with what was found over it and lists it. The
  // canvas keeps the last frame and its drawing until the next answer: a live view never shows a bare frame.
  async function detect(name, image) {
    const bitmap = await bitmapOf(image);
    try {
      const scratch = new OffscreenCanvas(bitmap.width, bitmap.height).getContext("2d", { willReadFrequently: true });
      scratch.drawImage(bitmap, 0, 0);
      const pixels = scratch.getImageData(0, 0, bitmap.width, bitmap.height).data.buffer;
      const answer = await request("vision.detect", { task: name, pixels, width: bitmap.width, height: bitmap.height }, [pixels]);
      canvas.width = bitmap.width;
      canvas.height = bitmap.height;
      const context = canvas.getContext("2d");
      context.drawImage(bitmap, 0, 0);
      draw(context, answer);
      canvas.hidden = false;
      const lines = describe(answer);
      results.replaceChildren(...(lines.length ? lines : [`Nothing found (${name}).`]).map((text) => el("li", { textContent: text })));
      last = answer;
      return answer;
    } finally {
      bitmap.close();
    }
  }

  async function fromUI(image) {
    if (live) stop();
    say("Looking...");
    try {
      const answer = await detect(task(), await image());
      const load = answer.load_ms ? ` · model loaded in ${Math.round(answer.load_ms)} ms` : "";
      say(`${answer.backend}: ${answer.results.length} found in ${Math.round(answer.timings.detect_ms)} ms${load}`);
    } catch (error) {
      console.error(error);
      say("Could not look at the image: " + lastLine(error.message), true);
    }
  }

  async function start(name = task()) {
    if (live) return;
    for (const input of taskPick.querySelectorAll("input")) input.checked = input.value === name;
    if (!(await camera.switchOn(video, cameraButton, say))) return;
    video.hidden = true; // the canvas shows its frames, with what was found drawn over them
    live = true;
    frames = 0;
    stamps = [];
    say("Camera on: loading the model...");
    loop();
  }

  function stop() {
    if (!live) return;
    live = false;
    camera.switchOff(video, cameraButton);
    say(`Camera off after ${frames} frame${frames === 1 ? "" : "s"}.`);
  }

  const fps = () => (stamps.length < 2 ? null : ((stamps.length - 1) * 1000) / (stamps.at(-1) - stamps[0]));

  async function loop() {
    while (live) {
      let answer;
      try {
        answer = await detect(task(), video);
      } catch (error) {
        console.error(error);
        stop();
        say("Could not look at the camera's frame: " + lastLine(error.message), true);
        return;
      }
      if (!live) return;
      frames += 1;
      stamps.push(performance.now());
      if (stamps.length > FPS_WINDOW) stamps.shift();
      const rate = fps();
      say(`${answer.backend} · ${rate === null ? "-" : rate.toFixed(1)} frames per second · ${frames} frame` +
        `${frames === 1 ? "" : "s"} · ${Math.round(answer.timings.detect_ms)} ms to detect`);
    }
  }

  file.addEventListener("change", () => { if (file.files[0]) fromUI(async () => file.files[0]); });
  cameraButton.addEventListener("click", () => (live ? stop() : start()));

  return {
    detect: (name, image) => detect(name, image),
    start,
    stop,
    running: () => live,
    frames: () => frames,
    fps,
    get last() { return last; },
  };
}

registerPanel({
  id: "vision",
  worker: "panels/vision/vision_worker.js",
  init({ playground, request }) {
    playground.vision = createVisionPanel({ host: document.getElementById("vision"), request });
  },
});
