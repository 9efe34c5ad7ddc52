"""Vision tasks on TF.js graph models, named after tfjs-models' APIs: each `await Task.load(url_or_path)`, then a
call on an [H, W, 3] image that gives plain-number results in the image's pixels (docs/vision.md)."""

from .pose import KEYPOINT_NAMES, Pose, PoseDetector
from .results import Box, Keypoint

__all__ = ["KEYPOINT_NAMES", "Box", "Keypoint", "Pose", "PoseDetector"]
