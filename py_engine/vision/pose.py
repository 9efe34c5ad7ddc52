"""PoseDetector: one person's 17 body keypoints with MoveNet SinglePose Lightning (the catalogue's
movenet-lightning), as tfjs-models' pose-detection names them."""

from dataclasses import dataclass

from ..engine import ENGINE
from ..ops.shape import stack
from .image import image_batch, letterbox
from .model import load_task_model, read
from .results import Keypoint, as_dict

KEYPOINT_NAMES = (
    "nose", "left_eye", "right_eye", "left_ear", "right_ear", "left_shoulder", "right_shoulder", "left_elbow",
    "right_elbow", "left_wrist", "right_wrist", "left_hip", "right_hip", "left_knee", "right_knee", "left_ankle",
    "right_ankle",
)  # fmt: skip


@dataclass(frozen=True)
class Pose:
    """A person: the mean of its keypoints' scores, and the 17 keypoints in KEYPOINT_NAMES' order."""

    score: float
    keypoints: list

    def to_dict(self):
        return {"score": self.score, "keypoints": as_dict(self.keypoints)}

    def __repr__(self):
        return f"Pose(score={self.score:.2f}, keypoints={self.keypoints!r})"


class PoseDetector:
    """`poses = await detector.estimate_poses(image)`: MoveNet sees the image letterboxed into its 192x192 int32
    input and gives each keypoint's (y, x) in 0..1 of that square and a score."""

    def __init__(self, model):
        self.model = model
        self.size = model.inputs[0].shape[1]

    @classmethod
    async def load(cls, url_or_path):
        """The detector on movenet-lightning at url_or_path (its folder, its JSON file or a URL)."""
        return cls(await load_task_model("PoseDetector", url_or_path, (1, -1, -1, 3), [(1, 1, 17, 3)]))

    def dispose(self):
        self.model.dispose()

    async def estimate_poses(self, image, min_pose_score=0.25):
        """[Pose] of the image (one person at most; none when the pose's score is below min_pose_score)."""
        with ENGINE.scope():
            x, region = letterbox(image_batch(image, "PoseDetector.estimate_poses"), self.size)
            raw = self.model.execute(x.cast("int32"))  # [1, 1, 17, (y, x, score)]
            y, x, score = raw[0, 0, :, 0], raw[0, 0, :, 1], raw[0, 0, :, 2]
            x, y = region.to_pixels(x, y)
            rows = await read(stack([x, y, score], axis=1))
        keypoints = [Keypoint(name, x, y, score) for name, (x, y, score) in zip(KEYPOINT_NAMES, rows, strict=True)]
        score = sum(k.score for k in keypoints) / len(keypoints)
        return [Pose(score, keypoints)] if score >= min_pose_score else []
