// The webcam: Classify's "Camera" button classifies its frames live, and Teach records frames into a class
// (static/teach.js uses window.pageCamera). One frame is classified at a time, the next once the last answer is in, so
// the rate follows the backend (a few frames a second on the CPU); the worker releases each frame's tensors.
//
// window.pageCamera = {open(video) -> Promise<MediaStream> (the video plays it; rejects with an Error whose message
// says what to do), close(video), frameBlob(video) -> Promise<Blob> (a JPEG of the current frame)}.
// Adds to window.playground:
//   camera   {start(), stop(), running(), frames(), msPerFrame()}: the Classify panel's live classification
"use strict";

window.pageCamera = (() => {
  // What went wrong, and what to do, for getUserMedia's errors.
  function explain(error) {
    switch (error?.name) {
      case "NotAllowedError": case "SecurityError":
        return "The camera is blocked for this page: allow it (the camera icon in the address bar), then try again.";
      case "NotFoundError": case "OverconstrainedError":
        return "No camera was found: connect one and try again, or choose an image file instead.";
      case "NotReadableError": case "AbortError":
        return "The camera is in use by another program or could not start: close that program and try again.";
      default:
        return `The camera could not start (${error?.message || error}).`;
    }
  }

  async function open(video) {
    if (!navigator.mediaDevices?.getUserMedia) {
      throw new Error("This browser offers no camera to the page here: cameras need https or localhost.");
    }
    let stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ video: { width: { ideal: 640 }, height: { ideal: 480 } }, audio: false });
    } catch (error) {
      throw new Error(explain(error));
    }
    video.srcObject = stream;
    video.muted = true;
    video.playsInline = true;
    await video.play();
    video.hidden = false;
    return stream;
  }

  function close(video) {
    for (const track of video.srcObject?.getTracks() ?? []) track.stop();
    video.srcObject = null;
    video.hidden = true;
  }

  function frameBlob(video) {
    const canvas = new OffscreenCanvas(video.videoWidth, video.videoHeight);
    canvas.getContext("2d").drawImage(video, 0, 0);
    return canvas.convertToBlob({ type: "image/jpeg", quality: 0.9 });
  }

  return { open, close, frameBlob };
})();

(() => {
  const playground = window.playground;
  const $ = (id) => document.getElementById(id);
  const button = $("camera"), video = $("camera-video"), status = $("camera-status");
  let on = false, frames = 0, spent = 0;

  const ms = (x) => (Math.round(x) >= 1000 ? (x / 1000).toFixed(1) + " s" : Math.round(x) + " ms");

  function say(text, failed = false) {
    status.textContent = text;
    status.className = failed ? "status failed" : "status";
  }

  async function start() {
    if (on) return;
    button.disabled = true;
    try {
      await window.pageCamera.open(video);
    } catch (error) {
      say(error.message, true);
      return;
    } finally {
      button.disabled = false;
    }
    on = true;
    frames = spent = 0;
    $("classify-preview").hidden = true; // the camera's view replaces the last photo
    button.setAttribute("aria-pressed", "true");
    say("Camera on: classifying its frames...");
    loop();
  }

  function stop() {
    on = false;
    window.pageCamera.close(video);
    button.setAttribute("aria-pressed", "false");
    if (frames) say(`Camera off after ${frames} frame${frames === 1 ? "" : "s"}, ${ms(spent / frames)} per frame.`);
  }

  async function loop() {
    while (on) {
      const start = performance.now();
      try {
        await playground.classify(video); // the top-5 list and the timing line update as for a photo
      } catch (error) {
        stop();
        say("Could not classify the camera's frame: " + error.message.trim().split("\n").pop(), true);
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
})();
