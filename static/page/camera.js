// The webcam, for Classify's live classification, Vision's live tasks and Teach's recording:
//   open(video) -> Promise<MediaStream> (the video plays it; rejects with an Error whose message says what to do)
//   close(video)
//   switchOn(video, button, say) -> Promise<bool>: open() for a toggle button (disabled while the camera starts,
//     aria-pressed once on; what went wrong goes to say(message, true)); switchOff(video, button)
//   frameBlob(video) -> Promise<Blob> (a JPEG of the current frame)

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

export async function open(video) {
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

export function close(video) {
  for (const track of video.srcObject?.getTracks() ?? []) track.stop();
  video.srcObject = null;
  video.hidden = true;
}

export async function switchOn(video, button, say) {
  button.disabled = true;
  try {
    await open(video);
  } catch (error) {
    say(error.message, true);
    return false;
  } finally {
    button.disabled = false;
  }
  button.setAttribute("aria-pressed", "true");
  return true;
}

export function switchOff(video, button) {
  close(video);
  button.setAttribute("aria-pressed", "false");
}

export function frameBlob(video) {
  const canvas = new OffscreenCanvas(video.videoWidth, video.videoHeight);
  canvas.getContext("2d").drawImage(video, 0, 0);
  return canvas.convertToBlob({ type: "image/jpeg", quality: 0.9 });
}

