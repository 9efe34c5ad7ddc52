// Images as RGBA pixels for the worker: files, blobs and URLs decoded by the browser, camera frames drawn as they are.
//
// decodeImage(image) -> {pixels: ArrayBuffer, width, height, original: {width, height}}

// Photos are shrunk by the browser (antialiased) until their short side is at most this, before upload: the
// GPU's bilinear resize to 224 px reads only 4 of every 18x18 pixels of a 4000 px photo (aliasing), and its
// int32 pixels would need ~150 MB of GPU memory. Smaller images go to the GPU as they are.
const MAX_SHORT_SIDE = 512;

// An image as RGBA pixels. Blobs go through createImageBitmap; URLs through an <img> (the page's CSP allows
// images from self, data: and blob:, but fetch() only from self).
// Why an http(s) URL gave no image, when the server said so ("404 Not Found"); null for anything else.
async function httpStatus(image) {
  if (image instanceof Blob || !/^https?:|^\/|^[^:]*$/i.test(String(image))) return null;
  try {
    const response = await fetch(String(image), { method: "HEAD" });
    return response.ok ? null : `${response.status} ${response.statusText}`.trim();
  } catch {
    return null;
  }
}

// A camera's frame: a <video> (its current frame), a canvas or an ImageBitmap, drawn as it is.
const isFrame = (image) => image instanceof HTMLVideoElement || image instanceof HTMLCanvasElement || image instanceof ImageBitmap;

export async function decodeImage(image) {
  const options = { premultiplyAlpha: "none", colorSpaceConversion: "none" };
  if (isFrame(image)) return pixelsOf(await createImageBitmap(image, options), null);
  const what = image instanceof File ? image.name
    : image instanceof Blob ? `a ${image.type || "untyped"} blob` : String(image).slice(0, 100);
  // SVG is vector art: refused the same way whether it comes as a file, a blob or a data: URL
  const svg = image instanceof Blob ? image.type === "image/svg+xml" : /^data:image\/svg\+xml[;,]/i.test(String(image));
  if (svg) throw new Error(`${what}: SVG images are not supported; use a PNG, JPEG or WebP file`);
  let source;
  try {
    if (image instanceof Blob) {
      source = await createImageBitmap(image, options);
    } else {
      source = new Image();
      source.src = String(image);
      await source.decode();
    }
  } catch (error) {
    const status = await httpStatus(image);
    if (status) throw new Error(`${what}: the server answered ${status}; check the address`);
    throw new Error(`${what}: the browser could not decode it as an image; use a PNG, JPEG or WebP file (${error.message})`);
  }
  return pixelsOf(source, options);
}

// RGBA pixels of a decoded image (closed afterwards), shrunk first as MAX_SHORT_SIDE says.
async function pixelsOf(source, options) {
  const original = { width: source.width, height: source.height };
  const scale = Math.min(1, MAX_SHORT_SIDE / Math.min(source.width, source.height));
  if (scale < 1) {
    const resized = await createImageBitmap(source, {
      ...options, resizeWidth: Math.round(source.width * scale), resizeHeight: Math.round(source.height * scale),
      resizeQuality: "high",
    });
    if (source.close) source.close();
    source = resized;
  }
  const width = source.width, height = source.height;
  const canvas = typeof OffscreenCanvas === "function" ? new OffscreenCanvas(width, height)
    : Object.assign(document.createElement("canvas"), { width, height });
  const context = canvas.getContext("2d", { willReadFrequently: true });
  context.drawImage(source, 0, 0);
  if (source.close) source.close();
  return { pixels: context.getImageData(0, 0, width, height).data.buffer, width, height, original };
}
