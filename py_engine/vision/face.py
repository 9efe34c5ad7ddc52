"""FaceDetector: face boxes and 6 landmarks with BlazeFace (the catalogue's blazeface); with the facemesh model, 468
mesh points on each face's crop; with iris too, each iris's 5 points on the eyes' crops; with the emotion model,
its 7 classes' probabilities for each face."""

from dataclasses import dataclass, replace

import numpy as np

from ..engine import ENGINE
from ..ops.image import non_max_suppression
from ..ops.operands import tensor
from ..ops.shape import concat, gather
from .image import crop_regions, image_batch, letterbox, square_around
from .model import load_task_model, read
from .results import Box, Keypoint, Point, as_dict

LANDMARK_NAMES = ("right_eye", "left_eye", "nose_tip", "mouth_center", "right_ear_tragion", "left_ear_tragion")
EMOTIONS = ("angry", "disgust", "fear", "happy", "sad", "surprise", "neutral")  # the emotion model's classes
EYE_CORNERS = {"left": (263, 362), "right": (33, 133)}  # mesh points at each eye's outer and inner corner
FACE_CROP, EYE_CROP = 1.4, 2.3  # each crop's side over the face box's or the eye corners' longer side
GREY = (0.2989, 0.587, 0.114)  # the emotion model's grey from RGB


def blazeface_anchors(size):
    """BlazeFace's 896 anchor centres in its input's pixels: 2 per cell of the 16-pixel grid, then 6 per cell of the
    32-pixel grid, each cell's anchors together, rows first (the order of its outputs)."""
    centres = []
    for stride, per_cell in ((size // 16, 2), (size // 8, 6)):
        cells = (np.arange(size // stride) + 0.5) * stride
        y, x = np.meshgrid(cells, cells, indexing="ij")
        centres.append(np.repeat(np.stack([x.ravel(), y.ravel()], 1), per_cell, axis=0))
    return np.concatenate(centres).astype(np.float32)


@dataclass(frozen=True)
class Face:
    """A face: its box and score from BlazeFace, its 6 landmarks (LANDMARK_NAMES); the mesh's 468 points and the
    irises' 5 points each (the centre first) when those models are loaded, the emotions' probabilities when the
    emotion model is."""

    box: Box
    score: float
    landmarks: list
    mesh: list = None
    irises: dict = None
    emotion: dict = None

    def to_dict(self):
        return {k: as_dict(getattr(self, k)) for k in ("box", "score", "landmarks", "mesh", "irises", "emotion")}

    def __repr__(self):
        extras = f", {len(self.mesh)} mesh points" if self.mesh else ""
        extras += ", irises" if self.irises else ""
        extras += f", emotion={max(self.emotion, key=self.emotion.get)!r}" if self.emotion else ""
        return f"Face(score={self.score:.2f}, {self.box!r}{extras})"


class FaceDetector:
    """`faces = await detector.estimate_faces(image)`: BlazeFace sees the image letterboxed into 256x256, pixels
    scaled to -1..1; each anchor has a score (logit) and 16 values: the box centre's offset from the anchor, its
    width and height, and 6 landmarks' offsets, in its input's pixels."""

    def __init__(self, model, mesh=None, iris=None, emotion=None):
        if iris is not None and mesh is None:
            raise ValueError("FaceDetector: iris needs the mesh model too (the eyes' crops come from the mesh)")
        self.model, self.mesh, self.iris, self.emotion = model, mesh, iris, emotion
        self.size = model.inputs[0].shape[1]
        # what each anchor's 16 values are offsets from: its centre for the box centre and the 6 landmarks, 0 for the
        # box's width and height
        anchors = blazeface_anchors(self.size)
        self.origins = tensor(np.concatenate([anchors, np.zeros_like(anchors), np.tile(anchors, 6)], 1))

    @classmethod
    async def load(cls, url_or_path, mesh=None, iris=None, emotion=None):
        """The detector on blazeface at url_or_path; mesh, iris, emotion: the facemesh, iris and emotion models'
        locations, to compute those as well (each a folder, its JSON file or a URL)."""
        task = "FaceDetector"
        loaded = []
        try:
            outputs = [(1, 384, 16), (1, 512, 1), (1, 384, 1), (1, 512, 16)]
            loaded.append(await load_task_model(task, url_or_path, (1, -1, -1, 3), outputs))
            for location, shapes in (
                (mesh, ((-1, 192, 192, 3), [(-1, 1404), (-1, 1), (-1, 266)])),
                (iris, ((-1, 64, 64, 3), [(-1, 1, 1, 228)])),
                (emotion, ((-1, 64, 64, 1), [(-1, 7)])),
            ):
                loaded.append(location and await load_task_model(task, location, *shapes))
            return cls(*loaded)
        except BaseException:
            for model in loaded:
                model and model.dispose()
            raise

    def dispose(self):
        for model in (self.model, self.mesh, self.iris, self.emotion):
            model and model.dispose()
        self.origins.dispose()

    async def estimate_faces(self, image, max_faces=10, min_score=0.5, iou_threshold=0.3):
        """[Face], best first: at most max_faces scoring min_score or more, none overlapping a better one by an IoU
        of iou_threshold or more."""
        with ENGINE.scope():
            batch = image_batch(image, "FaceDetector.estimate_faces")
            found = await self._detect(batch, max_faces, min_score, iou_threshold)
            faces = [Face(Box(*row[:4]), row[4], self._landmarks(row[5:])) for row in found]
            regions = [square_around(*row[:4], FACE_CROP) for row in found]
            if faces and self.mesh is not None:
                meshes = await self._mesh(batch, regions)
                faces = [replace(f, mesh=m, irises=i) for f, (m, i) in zip(faces, meshes, strict=True)]
            if faces and self.emotion is not None:
                emotions = await self._emotions(batch, regions)
                faces = [replace(f, emotion=e) for f, e in zip(faces, emotions, strict=True)]
        return faces

    async def _detect(self, batch, max_faces, min_score, iou_threshold):
        """Rows of (x_min, y_min, x_max, y_max, score, 6 landmarks' x and y) in the image's pixels."""
        x, region = letterbox(batch, self.size)
        regressors_32, logits_16, logits_32, regressors_16 = self.model.execute(x / 127.5 - 1)
        score = concat([logits_16[0], logits_32[0]], 0).reshape((-1,)).sigmoid()
        # in input pixels: the box centre, its width and height, the 6 landmarks
        values = concat([regressors_16[0], regressors_32[0]], 0) + self.origins  # [896, 16]
        centre, half = values[:, 0:2], values[:, 2:4] / 2
        found = concat([centre - half, centre + half, values[:, 4:]], 1)  # x_min, y_min, x_max, y_max, 6 (x, y)
        # to image pixels (the letterbox is square: one scale for x and y)
        found = found * (region.width / self.size) + tensor([region.x, region.y] * 8, "float32")
        boxes = gather(found, [1, 0, 3, 2], axis=1)  # (y_min, x_min, y_max, x_max)
        # NMS keeps scores above its threshold: just below min_score, so a face scoring min_score exactly is kept
        kept = non_max_suppression(boxes, score, max_faces, iou_threshold, np.nextafter(min_score, -1))
        return await read(gather(concat([found[:, :4], score.expand_dims(1), found[:, 4:]], 1), kept))

    @staticmethod
    def _landmarks(values):
        return [Keypoint(name, *values[2 * k : 2 * k + 2]) for k, name in enumerate(LANDMARK_NAMES)]

    async def _mesh(self, batch, regions):
        """(468 mesh Points, irises) per face, irises {"left", "right"}: 5 Points each, or None without iris."""
        size = self.mesh.inputs[0].shape[1]
        crops = crop_regions(batch, regions, size) / 255
        points = self.mesh.execute(crops, "Identity_2").reshape((len(regions), -1, 3))  # in the crop's pixels
        meshes = await read(points)
        irises = await self._irises(crops, meshes) if self.iris is not None else [None] * len(regions)
        found = []
        for r, mesh, eyes in zip(regions, meshes, irises, strict=True):
            mesh = [Point(*r.to_pixels(x / size, y / size), z * r.width / size) for x, y, z in mesh]
            if eyes is not None:
                eyes = {side: [Point(*r.to_pixels(x / size, y / size)) for x, y in iris] for side, iris in eyes.items()}
            found.append((mesh, eyes))
        return found

    async def _irises(self, crops, meshes):
        """Each face's irises in its crop's pixels: the iris model on a square around each eye's corners (the left
        eye mirrored, as the model sees right eyes), its points 71..75 the iris (the centre first)."""
        eyes = []  # (face, side, Region of the face crop)
        for k, mesh in enumerate(meshes):
            for side, (a, b) in EYE_CORNERS.items():
                (xa, ya, _), (xb, yb, _) = mesh[a], mesh[b]
                eyes.append((k, side, square_around(min(xa, xb), min(ya, yb), max(xa, xb), max(ya, yb), EYE_CROP)))
        eye_size = self.iris.inputs[0].shape[1]
        flip = {n for n, (_, side, _) in enumerate(eyes) if side == "left"}
        eye_crops = crop_regions(crops, [r for _, _, r in eyes], eye_size, [k for k, _, _ in eyes], flip)
        found = await read(self.iris.execute(eye_crops).reshape((len(eyes), -1, 3))[:, 71:76, :2] / eye_size)
        irises = [{} for _ in meshes]
        for n, ((k, side, r), points) in enumerate(zip(eyes, found, strict=True)):
            irises[k][side] = [r.to_pixels(1 - u if n in flip else u, v) for u, v in points]
        return irises

    async def _emotions(self, batch, regions):
        """Each face's {emotion: probability}: the emotion model on its crop, grey, scaled to -1..1."""
        size = self.emotion.inputs[0].shape[1]
        crops = crop_regions(batch, regions, size) / 255
        grey = (crops * tensor(GREY, "float32")).sum(axis=3, keepdims=True)
        probabilities = await read(self.emotion.execute((grey - 0.5) * 2))
        return [dict(zip(EMOTIONS, p, strict=True)) for p in probabilities]
