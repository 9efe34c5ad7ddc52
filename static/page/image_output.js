// pe.browser.show_image's pictures (event "image" from static/page/main.js): a canvas of the image with its
// boxes, points and lines drawn over it (vision_draw.js), captioned with its title and what is drawn, for the Output.
//
// imageFigure({title, key, width, height, rgba: Uint8Array, boxes, points, lines}) -> <figure> (data-key: the key
// of the figure it replaces in the Output, a live view)

import { drawMarks } from "./vision_draw.js";

export function imageFigure({ title, key, width, height, rgba, boxes, points, lines }) {
  const canvas = Object.assign(document.createElement("canvas"), { width, height });
  const context = canvas.getContext("2d");
  context.putImageData(new ImageData(new Uint8ClampedArray(rgba.buffer, rgba.byteOffset, rgba.byteLength), width, height), 0, 0);
  drawMarks(context, { boxes, points, lines });
  const labels = boxes.map((b) => b.label).filter(Boolean);
  const drawn = [
    boxes.length && `${boxes.length} box${boxes.length === 1 ? "" : "es"}${labels.length ? ` (${labels.join(", ")})` : ""}`,
    points.length && `${points.length} point${points.length === 1 ? "" : "s"}`,
    lines.length && `${lines.length} line${lines.length === 1 ? "" : "s"}`,
  ].filter(Boolean);
  const caption = `${title}: ${width}x${height}${drawn.length ? ", " + drawn.join(", ") : ""}`;
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", caption);
  const figure = Object.assign(document.createElement("figure"), { className: "image-output" });
  if (key !== null) figure.dataset.key = key;
  figure.append(canvas, Object.assign(document.createElement("figcaption"), { textContent: caption }));
  return figure;
}
