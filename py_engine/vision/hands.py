"""HandDetector: hand boxes with handtrack (an SSD of 7 classes: hand, fist, pinch, point, face, tip, pinchtip; its
pre-NMS boxes and scores are read here), then 21 keypoints on each hand's crop with handlandmark-lite."""

from dataclasses import dataclass

from ..engine import ENGINE
from ..ops.image import non_max_suppression
from ..ops.shape import broadcast_to, concat, gather, stack
from .image import crop_regions, image_batch, letterbox, square_around
from .model import load_task_model, read
from .results import Box, Keypoint, as_dict

HAND_KEYPOINT_NAMES = (
    "wrist", "thumb_cmc", "thumb_mcp", "thumb_ip", "thumb_tip", "index_finger_mcp", "index_finger_pip",
    "index_finger_dip", "index_finger_tip", "middle_finger_mcp", "middle_finger_pip", "middle_finger_dip",
    "middle_finger_tip", "ring_finger_mcp", "ring_finger_pip", "ring_finger_dip", "ring_finger_tip",
    "pinky_finger_mcp", "pinky_finger_pip", "pinky_finger_dip", "pinky_finger_tip",
)  # fmt: skip
HAND_CLASSES = (1, 2, 3, 4, 6, 7)  # handtrack's score columns: 0 background, then the classes above; 5 is "face"
HAND_CROP = 1.4  # the landmark crop's side over the hand box's longer side


@dataclass(frozen=True)
class Hand:
    """A hand: its box and score from handtrack (the best of its hand classes), and 21 keypoints
    (HAND_KEYPOINT_NAMES, MediaPipe's hand landmarks) whose score is the landmark model's hand presence."""

    box: Box
    score: float
    keypoints: list

    def to_dict(self):
        return {"box": self.box.to_dict(), "score": self.score, "keypoints": as_dict(self.keypoints)}

    def __repr__(self):
        return f"Hand(score={self.score:.2f}, {self.box!r}, {len(self.keypoints)} keypoints)"


class HandDetector:
    """`hands = await detector.estimate_hands(image)`: handtrack sees the image letterboxed into 320x320 int32 and
    gives, per anchor, a box (y1, x1, y2, x2 in 0..1 of its input) and each class's score; handlandmark-lite sees a
    224x224 square crop around a hand (pixels 0..1) and gives 21 (x, y, z) in its input's pixels and the
    probability that a hand is there."""

    def __init__(self, detector, landmarks):
        self.detector, self.landmarks = detector, landmarks
        self.size = detector.inputs[0].shape[1]

    @classmethod
    async def load(cls, detector, landmarks):
        """The detector on handtrack at `detector` and handlandmark-lite at `landmarks` (folders, JSON files or
        URLs)."""
        task = "HandDetector"
        outputs = [(1, 100), (1, 100), (1, -1, 4), (1, 100, 4), (1, 100, 8), (1,), (1, 100), (1, -1, 8)]
        found = await load_task_model(task, detector, (1, -1, -1, 3), outputs)
        try:
            outputs = [(1, 1), (1, 63), (1, 1), (1, 63)]
            return cls(found, await load_task_model(task, landmarks, (1, -1, -1, 3), outputs))
        except BaseException:
            found.dispose()
            raise

    def dispose(self):
        self.detector.dispose()
        self.landmarks.dispose()

    async def estimate_hands(self, image, max_hands=2, min_score=0.5, iou_threshold=0.2):
        """[Hand], best first: at most max_hands whose best hand class scores above min_score, none overlapping a
        better one by an IoU of iou_threshold or more."""
        with ENGINE.scope():
            batch = image_batch(image, "HandDetector.estimate_hands")
            x, region = letterbox(batch, self.size)
            # the graph's own outputs after NMS include faces; its raw boxes and scores (its while loops: async)
            raw_boxes, raw_scores = await self.detector.execute_async(x.cast("int32"), ["Identity_6", "Identity_7"])
            score = gather(raw_scores[0], list(HAND_CLASSES), axis=1).max(axis=1)
            y_min, x_min, y_max, x_max = (raw_boxes[0, :, k] for k in range(4))
            x_min, y_min = region.to_pixels(x_min, y_min)
            x_max, y_max = region.to_pixels(x_max, y_max)
            kept = non_max_suppression(
                stack([y_min, x_min, y_max, x_max], 1), score, max_hands, iou_threshold, min_score
            )
            found = await read(gather(stack([x_min, y_min, x_max, y_max, score], 1), kept))
            hands = [Hand(Box(*row[:4]), row[4], await self._keypoints(batch, row[:4])) for row in found]
        return hands

    async def _keypoints(self, batch, box):
        """The 21 Keypoints of the hand in box (x_min, y_min, x_max, y_max)."""
        size = self.landmarks.inputs[0].shape[1]
        region = square_around(*box, HAND_CROP)
        presence, points = self.landmarks.execute(crop_regions(batch, [region], size) / 255, ["Identity_1", "Identity"])
        points = points.reshape((21, 3))[:, :2] / size
        x, y = region.to_pixels(points[:, 0], points[:, 1])
        presence = broadcast_to(presence, (21, 1))  # each keypoint's score: the hand's presence (0..1)
        rows = await read(concat([stack([x, y], 1), presence], 1))
        return [Keypoint(name, *row) for name, row in zip(HAND_KEYPOINT_NAMES, rows, strict=True)]
