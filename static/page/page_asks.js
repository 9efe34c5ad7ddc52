// The page's answers to Python's questions (the worker's peAsk, event "ask"): pe.browser.camera_frame() asks for
// the webcam's current frame. The camera opens at the first question (the browser asks the user once) and closes
// when the run that asked ends.
//
// createAsks(client) -> onAsk({ask, name, data}): answers through client.reply

import * as camera from "./camera.js";

export function createAsks(client) {
  const video = Object.assign(document.createElement("video"), { hidden: true });
  let opening = null; // the camera's getUserMedia, while a run uses it

  window.addEventListener("playground:run", ({ detail }) => {
    if (detail.running !== null || !opening) return;
    opening.then(() => camera.close(video), () => {});
    opening = null;
  });

  async function cameraFrame({ max_side: maxSide = 640 } = {}) {
    opening ??= camera.open(video); // the video stays out of the page: Python shows what it makes of the frames
    try {
      await opening;
    } catch (error) {
      opening = null;
      throw error;
    }
    const scale = Math.min(1, maxSide / Math.max(video.videoWidth, video.videoHeight));
    const width = Math.round(video.videoWidth * scale), height = Math.round(video.videoHeight * scale);
    const context = new OffscreenCanvas(width, height).getContext("2d", { willReadFrequently: true });
    context.drawImage(video, 0, 0, width, height);
    const pixels = context.getImageData(0, 0, width, height).data.buffer;
    return { value: { pixels, width, height }, transfer: [pixels] };
  }

  const questions = { "camera-frame": cameraFrame };

  return async function onAsk({ ask, name, data }) {
    try {
      if (!questions[name]) throw new Error(`the page has no answer to ${JSON.stringify(name)}`);
      const { value, transfer } = await questions[name](data ?? undefined);
      client.reply(ask, { ok: true, value }, transfer);
    } catch (error) {
      client.reply(ask, { ok: false, error: error.message });
    }
  };
}
