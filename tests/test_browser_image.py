"""pe.browser.show_image's message (what the page draws in the Output): the image as RGBA bytes from any layout and
dtype, boxes, points and lines in the accepted forms, and the errors."""

import asyncio
from types import SimpleNamespace

import numpy as np
import pytest

import py_engine as pe
from py_engine.errors import DTypeError, ShapeError


def test_an_rgb_tensor_becomes_opaque_rgba_bytes(each_backend):
    pixels = np.arange(2 * 3 * 3).reshape(2, 3, 3) * 10
    t = pe.tensor(pixels, dtype="int32")
    message = pe.browser.image_message(t, title="tiny")
    t.dispose()
    assert (message["title"], message["width"], message["height"]) == ("tiny", 3, 2)
    rgba = np.frombuffer(message["rgba"], np.uint8).reshape(2, 3, 4)
    assert rgba[..., :3].tolist() == pixels.tolist() and (rgba[..., 3] == 255).all()
    assert message["boxes"] == message["points"] == message["lines"] == [] and message["key"] is None


def test_grey_and_unit_floats_are_scaled_and_clipped():
    message = pe.browser.image_message(np.array([[0.0, 0.5], [1.0, np.nan]]))
    rgba = np.frombuffer(message["rgba"], np.uint8).reshape(2, 2, 4)
    assert rgba[..., 0].tolist() == [[0, 127], [255, 0]] and (rgba[..., 0] == rgba[..., 2]).all()


def test_boxes_points_and_lines_in_every_accepted_form():
    detection = SimpleNamespace(
        to_dict=lambda: {
            "box": {"x_min": 1, "y_min": 2, "x_max": 5, "y_max": 6, "width": 4, "height": 4},
            "label": "cat",
            "score": 0.875,
        }
    )
    pose = SimpleNamespace(keypoints=[SimpleNamespace(x=1, y=2, score=0.9), SimpleNamespace(x=3, y=4, score=0.1)])
    face = SimpleNamespace(landmarks=[pe.vision.Keypoint("nose", 2, 3)])  # no score: drawn
    message = pe.browser.image_message(
        np.zeros((8, 8, 3), np.uint8),
        boxes=[[0, 0, 4, 4], {"x_min": 1, "y_min": 1, "x_max": 2, "y_max": 3, "label": "mine"}, detection],
        points=[(7, 7), {"x": 6, "y": 5}, pose, face],
        lines=[((0, 0), (7, 7))],
    )
    assert message["boxes"] == [
        {"x_min": 0.0, "y_min": 0.0, "x_max": 4.0, "y_max": 4.0, "label": None},
        {"x_min": 1.0, "y_min": 1.0, "x_max": 2.0, "y_max": 3.0, "label": "mine"},
        {"x_min": 1.0, "y_min": 2.0, "x_max": 5.0, "y_max": 6.0, "label": "cat 88%"},
    ]
    assert message["points"] == [[7.0, 7.0], [6.0, 5.0], [1.0, 2.0], [2.0, 3.0]]  # the pose's unsure one left out
    assert message["lines"] == [[[0.0, 0.0], [7.0, 7.0]]]


def test_errors_say_what_was_wrong():
    image = np.zeros((4, 4, 3))
    with pytest.raises(ShapeError, match=r"\[height, width, 1, 3 or 4 channels\], got shape \(4, 4, 2\)"):
        pe.browser.image_message(np.zeros((4, 4, 2)))
    with pytest.raises(DTypeError, match="must hold numbers"):
        pe.browser.image_message(np.array([[["a"] * 3]]))
    with pytest.raises(ShapeError, match="got 3 numbers"):
        pe.browser.image_message(image, boxes=[[0, 0, 1]])
    with pytest.raises(TypeError, match="a box needs numbers x_min"):
        pe.browser.image_message(image, boxes=[{"x": 1}])
    with pytest.raises(TypeError, match=r"a point must be \(x, y\)"):
        pe.browser.image_message(image, points=[object()])


def test_show_image_fetch_image_and_camera_frame_need_the_page():
    with pytest.raises(RuntimeError, match="works in the playground page only"):
        pe.browser.show_image(np.zeros((2, 2, 3)))
    with pytest.raises(RuntimeError, match="fetch_image works in the playground page only"):
        asyncio.run(pe.browser.fetch_image("samples/astronaut.png"))
    with pytest.raises(RuntimeError, match="camera_frame works in the playground page only"):
        asyncio.run(pe.browser.camera_frame())
