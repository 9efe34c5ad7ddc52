// What pe.vision found, drawn over its image on a canvas and written as text: the Vision panel (vision_panel.js) and
// pe.browser.show_image's pictures in the Output (image_output.js) draw with these.
//   draw(context, {task, results})      boxes with labels and scores, the pose skeleton, face and hand points
//   describe({task, results}) -> [str]  one line per result, for the list a screen reader reads
//   drawMarks(context, {boxes, points, lines})  show_image's marks: boxes [{x_min, y_min, x_max, y_max, label?}],
//                                        points [[x, y]], lines [[[x1, y1], [x2, y2]]], in the image's pixels

// MoveNet's 17 keypoints (COCO order) joined into a skeleton.
const SKELETON = [
  ["left_shoulder", "right_shoulder"], ["left_shoulder", "left_elbow"], ["left_elbow", "left_wrist"],
  ["right_shoulder", "right_elbow"], ["right_elbow", "right_wrist"], ["left_shoulder", "left_hip"],
  ["right_shoulder", "right_hip"], ["left_hip", "right_hip"], ["left_hip", "left_knee"], ["left_knee", "left_ankle"],
  ["right_hip", "right_knee"], ["right_knee", "right_ankle"], ["nose", "left_eye"], ["nose", "right_eye"],
  ["left_eye", "left_ear"], ["right_eye", "right_ear"],
];
const MIN_KEYPOINT_SCORE = 0.3; // keypoints below this are not drawn: MoveNet guesses where it sees nothing
const COLOURS = ["#ffd43b", "#69db7c", "#74c0fc", "#ff8787", "#da77f2"];

const percent = (score) => `${Math.round(score * 100)}%`;
const xy = (point) => (Array.isArray(point) ? point : [point.x, point.y]);
const pointsOf = (result) => result.keypoints ?? result.landmarks ?? [];
const seen = (point) => point.score === undefined || point.score >= MIN_KEYPOINT_SCORE;

function strokeWidth(context) {
  return Math.max(2, Math.round(Math.max(context.canvas.width, context.canvas.height) / 240));
}

function box(context, b, label, colour) {
  const line = strokeWidth(context);
  context.lineWidth = line;
  context.strokeStyle = colour;
  context.strokeRect(b.x_min, b.y_min, b.x_max - b.x_min, b.y_max - b.y_min);
  if (!label) return;
  context.font = `${6 * line + 2}px system-ui, sans-serif`;
  const width = context.measureText(label).width + 2 * line;
  const height = 6 * line + 4;
  const top = b.y_min >= height ? b.y_min - height : b.y_min; // above the box, inside it at the image's top
  context.fillStyle = colour;
  context.fillRect(b.x_min, top, width, height);
  context.fillStyle = "#111";
  context.textBaseline = "top";
  context.fillText(label, b.x_min + line, top + 2);
}

function dots(context, points, colour) {
  const radius = strokeWidth(context) * 1.5;
  context.fillStyle = colour;
  for (const point of points) {
    const [x, y] = xy(point);
    context.beginPath();
    context.arc(x, y, radius, 0, 2 * Math.PI);
    context.fill();
  }
}

function segments(context, pairs, colour) {
  context.lineWidth = strokeWidth(context);
  context.strokeStyle = colour;
  context.beginPath();
  for (const [a, b] of pairs) {
    context.moveTo(...xy(a));
    context.lineTo(...xy(b));
  }
  context.stroke();
}

function skeleton(context, keypoints, colour) {
  const named = new Map(keypoints.filter(seen).map((k) => [k.name, k]));
  segments(context, SKELETON.filter(([a, b]) => named.has(a) && named.has(b)).map(([a, b]) => [named.get(a), named.get(b)]), colour);
  dots(context, [...named.values()], colour);
}

// A face's likeliest emotion, from its probabilities ({neutral: 0.7, happy: 0.2, ...}).
const emotionOf = (probabilities) => Object.entries(probabilities).reduce((best, e) => (e[1] > best[1] ? e : best))[0];

function labelOf(task, result) {
  const name = result.label ?? { pose: "person", faces: "face", hands: "hand" }[task];
  const emotion = result.emotion ? `, ${emotionOf(result.emotion)}` : "";
  return `${name} ${percent(result.score)}${emotion}`;
}

export function draw(context, { task, results }) {
  results.forEach((result, i) => {
    const colour = COLOURS[i % COLOURS.length];
    if (result.box) box(context, result.box, labelOf(task, result), colour);
    if (task === "pose") skeleton(context, result.keypoints, colour);
    else dots(context, pointsOf(result).filter(seen), colour);
  });
}

export function describe({ task, results }) {
  return results.map((result) => {
    let text = labelOf(task, result);
    if (result.box) {
      const { x_min, y_min, x_max, y_max } = result.box;
      text += ` at x ${Math.round(x_min)} to ${Math.round(x_max)}, y ${Math.round(y_min)} to ${Math.round(y_max)}`;
    }
    if (task === "pose") {
      const found = result.keypoints.filter(seen);
      text += `: ${found.length} of ${result.keypoints.length} keypoints seen`;
      if (found.length) text += ` (${found.map((k) => k.name.replace("_", " ")).join(", ")})`;
    } else if (pointsOf(result).length) {
      text += `, ${pointsOf(result).length} points`;
    }
    return text;
  });
}

export function drawMarks(context, { boxes = [], points = [], lines = [] }) {
  boxes.forEach((b, i) => box(context, b, b.label, COLOURS[i % COLOURS.length]));
  segments(context, lines, COLOURS[0]);
  dots(context, points, COLOURS[1]);
}
