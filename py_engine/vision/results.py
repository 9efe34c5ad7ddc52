"""The results of the vision tasks: small dataclasses of plain Python numbers (pixels of the given image), with a
short repr and to_dict() for JSON."""

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Box:
    """A rectangle of the image in pixels: x grows rightwards, y downwards."""

    x_min: float
    y_min: float
    x_max: float
    y_max: float

    @property
    def width(self):
        return self.x_max - self.x_min

    @property
    def height(self):
        return self.y_max - self.y_min

    def to_dict(self):
        return {**asdict(self), "width": self.width, "height": self.height}

    def __repr__(self):
        return f"Box(x_min={self.x_min:.1f}, y_min={self.y_min:.1f}, x_max={self.x_max:.1f}, y_max={self.y_max:.1f})"


@dataclass(frozen=True)
class Keypoint:
    """A named point in pixels, with the model's confidence in it (0..1) where it gives one."""

    name: str
    x: float
    y: float
    score: float = None

    def to_dict(self):
        return asdict(self)

    def __repr__(self):
        score = "" if self.score is None else f", score={self.score:.2f}"
        return f"Keypoint({self.name!r}, x={self.x:.1f}, y={self.y:.1f}{score})"


@dataclass(frozen=True)
class Point:
    """A point in pixels; z (where a model gives depth) is in pixels too, smaller nearer the camera."""

    x: float
    y: float
    z: float = 0.0

    def to_dict(self):
        return asdict(self)

    def __repr__(self):
        return f"Point(x={self.x:.1f}, y={self.y:.1f}, z={self.z:.1f})"


def as_dict(value):
    """value (a result, a list of them, or a number) as JSON-ready Python: each result through its to_dict."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [as_dict(v) for v in value]
    if isinstance(value, dict):
        return {k: as_dict(v) for k, v in value.items()}
    return value
