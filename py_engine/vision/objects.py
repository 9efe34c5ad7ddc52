"""ObjectDetector: boxes of the 80 COCO classes with CenterNet (the catalogue's centernet), whose graph ends in its
own top-100 detections; what is left here is scaling them to the image and non-max suppression."""

from dataclasses import dataclass

from ..engine import ENGINE
from ..ops.image import non_max_suppression, resize_bilinear
from ..ops.math import maximum, minimum
from ..ops.operands import tensor
from ..ops.shape import concat, gather
from .image import image_batch
from .model import load_task_model, read
from .results import Box

COCO_LABELS = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
    "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow", "elephant",
    "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard",
    "sports ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard", "tennis racket", "bottle",
    "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple", "sandwich", "orange", "broccoli",
    "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch", "potted plant", "bed", "dining table", "toilet",
    "tv", "laptop", "mouse", "remote", "keyboard", "cell phone", "microwave", "oven", "toaster", "sink",
    "refrigerator", "book", "clock", "vase", "scissors", "teddy bear", "hair drier", "toothbrush",
)  # fmt: skip


@dataclass(frozen=True)
class Detection:
    """An object: its box in pixels, its COCO label and the model's score (0..1)."""

    box: Box
    label: str
    score: float

    def to_dict(self):
        return {"box": self.box.to_dict(), "label": self.label, "score": self.score}

    def __repr__(self):
        return f"Detection({self.label!r}, score={self.score:.2f}, {self.box!r})"


class ObjectDetector:
    """`detections = await detector.detect(image)`: CenterNet sees the image stretched to 512x512 (pixels 0..255)
    and gives 100 detections (x1, y1, x2, y2 in its input's pixels, score, class index)."""

    def __init__(self, model):
        self.model = model
        self.size = model.inputs[0].shape[1]

    @classmethod
    async def load(cls, url_or_path):
        """The detector on centernet at url_or_path (its folder, its JSON file or a URL)."""
        outputs = [(1, -1, -1, 4), (1, -1, -1, 80), (1, -1, 6)]
        return cls(await load_task_model("ObjectDetector", url_or_path, (1, -1, -1, 3), outputs))

    def dispose(self):
        self.model.dispose()

    async def detect(self, image, max_results=20, threshold=0.3, iou_threshold=0.4):
        """[Detection], best first: at most max_results scoring above threshold, none overlapping a better one of
        any class by an IoU of iou_threshold or more."""
        with ENGINE.scope():
            # int32 pixels (the page's camera frames) go to the resize as they are: it casts only what it reads
            batch = image_batch(image, "ObjectDetector.detect", int_pixels=True)
            height, width = batch.shape[1:3]
            x = resize_bilinear(batch, (self.size, self.size))
            found = self.model.execute(x, "tower_0/detections")[0]  # [100, (x1, y1, x2, y2, score, class)]
            # all four coordinates at once: scaled to the image, clipped to it
            scale = tensor([width / self.size, height / self.size] * 2, "float32")
            boxes = minimum(maximum(found[:, :4] * scale, 0), tensor([width, height] * 2, "float32"))
            nms_boxes = gather(boxes, [1, 0, 3, 2], axis=1)  # (y1, x1, y2, x2)
            kept = non_max_suppression(nms_boxes, found[:, 4], max_results, iou_threshold, threshold)
            rows = await read(gather(concat([boxes, found[:, 4:]], 1), kept))
        return [Detection(Box(*box), COCO_LABELS[int(label)], score) for *box, score, label in rows]
