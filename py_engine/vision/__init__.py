"""Vision tasks on TF.js graph models, named after tfjs-models' APIs: each `await Task.load(url_or_path)`, then a
call on an [H, W, 3] image that gives plain-number results in the image's pixels (docs/vision.md)."""

from .face import EMOTIONS, LANDMARK_NAMES, Face, FaceDetector
from .hands import HAND_KEYPOINT_NAMES, Hand, HandDetector
from .objects import COCO_LABELS, Detection, ObjectDetector
from .pose import KEYPOINT_NAMES, Pose, PoseDetector
from .results import Box, Keypoint, Point

__all__ = [
    "COCO_LABELS",
    "EMOTIONS",
    "HAND_KEYPOINT_NAMES",
    "KEYPOINT_NAMES",
    "LANDMARK_NAMES",
    "Box",
    "Detection",
    "Face",
    "FaceDetector",
    "Hand",
    "HandDetector",
    "Keypoint",
    "ObjectDetector",
    "Point",
    "Pose",
    "PoseDetector",
]
