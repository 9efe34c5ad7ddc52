"""pe.vision's tasks on real photos against TF.js: each task runs here (numpy and webgpu) and again with its models
answered by TF.js's graph execution of the same inputs (tests/vision_cases.py); both decode to the same results
within a pixel or two. Then decoding on known values, memory over repeated calls, and bad input."""

import asyncio
import math

import numpy as np
import pytest

import py_engine as pe
from py_engine.engine import ENGINE
from py_engine.errors import DTypeError, ShapeError
from py_engine.vision import HAND_KEYPOINT_NAMES, KEYPOINT_NAMES, FaceDetector, PoseDetector
from py_engine.vision.face import blazeface_anchors
from tests.vision_cases import (
    HAND_SCORE,
    TASKS,
    as_plain,
    assert_close,
    call,
    decoded_from_tfjs,
    load,
    photo,
    tfjs_reference,
)


def run(coroutine):
    return asyncio.run(coroutine)


@pytest.fixture(scope="session")
def vision_reference(graph_models, tmp_path_factory):
    """{task: {attribute: [(input, TF.js's outputs)]}}: each task's model inputs on numpy, and TF.js's answers."""
    return run(tfjs_reference(graph_models, tmp_path_factory.mktemp("vision-tfjs")))


@pytest.mark.parametrize("task", TASKS)
def test_each_task_gives_what_tfjs_outputs_decode_to(task, each_backend, graph_models, vision_reference):
    detector = run(load(task, graph_models))
    try:
        ours = as_plain(run(call(task, detector)))
    finally:
        detector.dispose()
    assert ours, "nothing found on the photo"
    assert_close(ours, run(decoded_from_tfjs(task, graph_models, vision_reference)))


def test_the_pose_on_the_astronaut_photo(graph_models):
    detector = run(load("pose", graph_models))
    try:
        (pose,) = run(detector.estimate_poses(photo("astronaut")))
        points = {k.name: k for k in pose.keypoints}
        assert [k.name for k in pose.keypoints] == list(KEYPOINT_NAMES)
        # her face is at x 170..280, y 60..180 of the 512x512 photo, her shoulders below it on either side
        for name in ("nose", "left_eye", "right_eye"):
            assert 170 < points[name].x < 280 and 60 < points[name].y < 180 and points[name].score > 0.4
        assert points["right_shoulder"].x < points["nose"].x < points["left_shoulder"].x
        assert points["left_shoulder"].y > points["nose"].y + 80
        assert pose.score == pytest.approx(sum(k.score for k in pose.keypoints) / 17)
        assert "Keypoint('nose', x=" in repr(pose) and pose.to_dict()["keypoints"][0]["name"] == "nose"
        # the same pixels as an int32 or float32 tensor, or a float32 array, give the same pose
        for image in (pe.tensor(photo("astronaut"), "int32"), pe.tensor(photo("astronaut"), "float32")):
            assert run(detector.estimate_poses(image)) == [pose]
            image.dispose()
        assert run(detector.estimate_poses(photo("astronaut").astype(np.float32))) == [pose]
    finally:
        detector.dispose()


def test_the_objects_on_the_photos(graph_models):
    detector = run(load("objects", graph_models))
    try:
        (cup, *_) = run(detector.detect(photo("coffee")))
        # the cup and saucer fill x 170..410, y 20..260 of the 600x400 photo
        assert cup.label == "cup" and cup.score > 0.3
        assert cup.box.to_dict() == pytest.approx(
            {"x_min": 170, "y_min": 20, "x_max": 410, "y_max": 260, "width": 240, "height": 240}, abs=10
        )
        (person,) = run(detector.detect(photo("astronaut"), max_results=1))
        assert person.label == "person" and 0 <= person.box.x_min < 20 and person.box.y_max == 512
        assert repr(person).startswith("Detection('person', score=")
        assert run(detector.detect(photo("coffee"), threshold=0.99)) == []
        # the same pixels as an int32 tensor (as the page's camera frames come) give the same detections
        pixels = pe.tensor(photo("coffee"), "int32")
        assert run(detector.detect(pixels)) == run(detector.detect(photo("coffee")))
        pixels.dispose()
    finally:
        detector.dispose()


def test_object_boxes_scale_from_the_model_input_to_the_image_and_overlaps_are_suppressed(graph_models):
    detector = run(load("objects", graph_models))
    model = detector.model
    try:
        found = np.zeros((1, 100, 6), np.float32)
        found[0, :3] = [[128, 256, 384, 512, 0.9, 41], [130, 256, 384, 512, 0.8, 0], [0, 0, 64, 64, 0.5, 79]]
        detector.model = Answer(model, found)
        got = run(detector.detect(np.zeros((200, 1000, 3), np.uint8)))  # 512x512 stretched to 1000x200
        assert [(d.label, d.score) for d in got] == [("cup", pytest.approx(0.9)), ("toothbrush", pytest.approx(0.5))]
        assert got[0].box.to_dict() == pytest.approx(
            {"x_min": 250, "y_min": 100, "x_max": 750, "y_max": 200, "width": 500, "height": 100}
        )
    finally:
        detector.model = model
        detector.dispose()


def test_the_face_on_the_astronaut_photo(graph_models):
    detector = run(load("faces", graph_models))
    try:
        (face,) = run(detector.estimate_faces(photo("astronaut")))
        # her face spans x 175..275, y 75..180; her eyes are at (203, 101) and (247, 103), and she smiles
        assert face.box.to_dict() == pytest.approx(
            {"x_min": 175, "y_min": 75, "x_max": 275, "y_max": 180, "width": 100, "height": 105}, abs=6
        )
        assert face.score > 0.8
        landmarks = {k.name: (k.x, k.y) for k in face.landmarks}
        assert landmarks["right_eye"] == pytest.approx((203, 101), abs=4)
        assert landmarks["left_eye"] == pytest.approx((247, 103), abs=4)
        assert len(face.mesh) == 468 and all(165 < p.x < 285 and 60 < p.y < 190 for p in face.mesh)
        for side in ("left", "right"):
            centre = face.irises[side][0]
            assert (centre.x, centre.y) == pytest.approx(landmarks[f"{side}_eye"], abs=4)
            assert all(0 < abs(p.x - centre.x) + abs(p.y - centre.y) < 8 for p in face.irises[side][1:])
        assert max(face.emotion, key=face.emotion.get) == "happy" and sum(face.emotion.values()) == pytest.approx(1)
        assert repr(face).startswith("Face(score=") and "468 mesh points, irises, emotion='happy'" in repr(face)
        assert set(face.to_dict()) == {"box", "score", "landmarks", "mesh", "irises", "emotion"}
    finally:
        detector.dispose()


def test_blazeface_boxes_and_landmarks_decode_from_the_anchors(graph_models):
    anchors = blazeface_anchors(256)
    assert anchors.shape == (896, 2)
    assert anchors[[0, 1, 2, 511, 512, 517, 518]].tolist() == [
        [8, 8], [8, 8], [24, 8], [248, 248], [16, 16], [16, 16], [48, 16]
    ]  # fmt: skip
    detector = run(FaceDetector.load(graph_models / "blazeface"))
    model = detector.model
    try:
        logits_16, logits_32 = np.full((1, 512, 1), -10, np.float32), np.full((1, 384, 1), -10, np.float32)
        regressors_16, regressors_32 = np.zeros((1, 512, 16), np.float32), np.zeros((1, 384, 16), np.float32)
        logits_32[0, 5] = 3  # anchor 512 + 5: centre (16, 16) of the 256x256 input
        regressors_32[0, 5, :4] = [4, -4, 32, 16]  # centre (20, 12), 32 wide, 16 high
        regressors_32[0, 5, 4:6] = [2, 6]  # the right eye at (18, 22)
        detector.model = Answer(model, regressors_32, logits_16, logits_32, regressors_16)
        # a 128x512 image is letterboxed into the 512x512 square (2 image pixels per input pixel) 192 pixels down
        (face,) = run(detector.estimate_faces(np.zeros((128, 512, 3), np.uint8)))
        assert face.score == pytest.approx(1 / (1 + math.exp(-3)))
        assert face.box.to_dict() == pytest.approx(
            {"x_min": 8, "y_min": 8 - 192, "x_max": 72, "y_max": 40 - 192, "width": 64, "height": 32}
        )
        assert (face.landmarks[0].x, face.landmarks[0].y) == pytest.approx((36, 44 - 192))
        assert face.mesh is face.irises is face.emotion is None
    finally:
        detector.model = model
        detector.dispose()


def test_iris_needs_the_mesh(graph_models):
    with pytest.raises(ValueError, match="iris needs the mesh model"):
        run(FaceDetector.load(graph_models / "blazeface", iris=graph_models / "iris"))
    assert ENGINE.memory().num_tensors == 0


def test_the_gloved_hand_on_the_astronaut_photo(graph_models):
    detector = run(load("hands", graph_models))
    try:
        assert run(detector.estimate_hands(photo("astronaut"))) == []  # nothing scores the default 0.5
        hands = run(detector.estimate_hands(photo("astronaut"), max_hands=5, min_score=HAND_SCORE))
        # her right hand, gloved, rests at x 100..175, y 470..512 (the bottom edge), under her helmet's rim
        centres = [((h.box.x_min + h.box.x_max) / 2, (h.box.y_min + h.box.y_max) / 2) for h in hands]
        glove = [h for h, (x, y) in zip(hands, centres, strict=True) if 60 < x < 180 and 440 < y < 512]
        assert len(glove) == 1 and glove[0].score > HAND_SCORE
        keypoints = glove[0].keypoints
        assert [k.name for k in keypoints] == list(HAND_KEYPOINT_NAMES)
        assert HAND_KEYPOINT_NAMES[:5] == ("wrist", "thumb_cmc", "thumb_mcp", "thumb_ip", "thumb_tip")
        assert len(keypoints) == 21 and HAND_KEYPOINT_NAMES[20] == "pinky_finger_tip"
        assert all(k.score > 0.5 for k in keypoints), "the landmark model sees a hand in the glove's crop"
        assert all(40 < k.x < 220 and 400 < k.y < 560 for k in keypoints)
        assert repr(glove[0]).endswith("21 keypoints)")
    finally:
        detector.dispose()


class Answer:
    """A model that answers every call with the same arrays (decoding checked on known values)."""

    def __init__(self, model, *arrays):
        self.model, self.arrays = model, arrays

    def __getattr__(self, name):
        return getattr(self.model, name)

    def execute(self, x, outputs=None):
        ys = [pe.tensor(a) for a in self.arrays]
        return ys[0] if len(ys) == 1 and not isinstance(outputs, list) else ys


def test_pose_keypoints_map_from_the_letterboxed_square_to_the_image(graph_models):
    detector = run(load("pose", graph_models))
    model = detector.model
    try:
        raw = np.zeros((1, 1, 17, 3), np.float32)
        raw[0, 0, :] = [0.5, 0.25, 0.9]  # (y, x, score) in the 600x600 square the 300x600 image is centred in
        detector.model = Answer(model, raw)
        (pose,) = run(detector.estimate_poses(np.zeros((300, 600, 3), np.uint8)))
        assert (pose.keypoints[0].x, pose.keypoints[0].y) == pytest.approx((150, 150))
        assert pose.score == pytest.approx(0.9)
        raw[..., 2] = 0.1
        assert run(detector.estimate_poses(np.zeros((300, 600, 3), np.uint8))) == []
    finally:
        detector.model = model
        detector.dispose()


@pytest.mark.parametrize("task", TASKS)
def test_repeated_calls_leave_memory_flat(task, each_backend, graph_models):
    detector = run(load(task, graph_models))
    try:
        first = as_plain(run(call(task, detector)))
        before = pe.memory()
        for _ in range(3):
            assert as_plain(run(call(task, detector))) == first
        after = pe.memory()
        assert (after.num_tensors, after.num_bytes) == (before.num_tensors, before.num_bytes)
    finally:
        detector.dispose()


BAD_IMAGES = [  # (make the image, the error, its message)
    (lambda: np.zeros((64, 64), np.uint8), ShapeError, r"shape \[height, width, 3\].*got \(64, 64\)"),
    (lambda: np.zeros((64, 64, 4), np.uint8), ShapeError, r"got \(64, 64, 4\): drop an alpha channel"),
    (lambda: np.zeros((0, 64, 3), np.uint8), ShapeError, r"got \(0, 64, 3\)"),
    (
        lambda: np.zeros((64, 64, 3), np.float64),
        DTypeError,
        r"dtype uint8, int32, float32.*got ndarray of dtype float64",
    ),
    (lambda: [[[0, 0, 0]]], DTypeError, r"got list"),
    (lambda: pe.zeros((8, 8, 3), "bool"), DTypeError, r"got Tensor of dtype bool"),
]


@pytest.mark.parametrize(
    ("make", "error", "message"), BAD_IMAGES, ids=["2-d", "rgba", "empty", "float64", "list", "bool"]
)
def test_a_bad_image_is_refused_saying_what_is_expected(make, error, message, graph_models):
    detector = run(load("pose", graph_models))
    image = make()
    try:
        live = ENGINE.memory().num_tensors
        with pytest.raises(error, match=message):
            run(detector.estimate_poses(image))
        assert ENGINE.memory().num_tensors == live
    finally:
        detector.dispose()


def test_a_model_of_another_task_is_refused_at_load(graph_models):
    with pytest.raises(ValueError, match=r"PoseDetector: .*blazeface is not the model this task reads"):
        run(PoseDetector.load(graph_models / "blazeface"))
    assert ENGINE.memory().num_tensors == 0
