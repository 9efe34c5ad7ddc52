// Classify's "Camera" button: classifies the webcam's frames live. One frame is classified at a time, the next once
// the last answer is in, so the rate follows the backend (a few frames a second on the CPU); the worker releases
// each frame's tensors.
//
// Adds to window.playground:
//   camera   {start(), stop(), running(), frames(), msPerFrame()}: the Classify panel's live classification

import * as camera from "../../page/camera.js";
import { lastLine, ms } from "../../page/format.js";

const $ = (id) => document.getElementById(id);

export function initClassifyCamera(playground) {
  const button = $("camera"), video = $("camera-video"), status = $("camera-status");
  let on = false, frames = 0, spent = 0;

  function say(text, failed = false) {
    status.textContent = text;
    status.className = failed ? "status failed" : "status";
  }

  async function start() {
    if (on) return;
    if (!(await camera.switchOn(video, button, say))) return;
    on = true;
    frames = spent = 0;
    $("classify-preview").hidden = true; // the camera's view replaces the last photo
    say("Camera on: classifying its frames...");
    loop();
  }

  function stop() {
    on = false;
    camera.switchOff(video, button);
    if (frames) say(`Camera off after ${frames} frame${frames === 1 ? "" : "s"}, ${ms(spent / frames)} per frame.`);
  }

  async function loop() {
    while (on) {
      const start = performance.now();
      try {
        await playground.classify(video); // the top-5 list and the timing line update as for a photo
      } catch (error) {
        stop();
        say("Could not classify the camera's frame: " + lastLine(error.message), true);
        return;
      }
      if (!on) return;
      frames += 1;
      spent += performance.now() - start;
      say(`Camera: ${frames} frame${frames === 1 ? "" : "s"} classified · ${ms(spent / frames)} per frame`);
    }
  }

  button.addEventListener("click", () => (on ? stop() : start()));
  playground.camera = { start, stop, running: () => on, frames: () => frames, msPerFrame: () => (frames ? spent / frames : null) };
}
