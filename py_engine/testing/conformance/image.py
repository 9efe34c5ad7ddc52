"""Conformance cases: image resizing, forward and gradients (pe.grad with an explicit dy, so no reduction kernel is
needed), unpacking RGBA pixels, crop and resize, projective transforms, and non-max suppression (V3, V4 padded, V5 with soft-NMS scores)."""

import numpy as np

from ... import ops
from ...autograd import grad
from ...browser import unpack_pixels
from .case import FLOAT_EDGES, Case, rand, with_edges

RESIZE_MODES = {"default": (False, False), "align-corners": (True, False), "half-pixel": (False, True)}


def _resize_cases(op, name):
    cases = []
    images = rand((2, 5, 7, 3), 11)
    for size_label, size in (("up", (11, 16)), ("down", (3, 4)), ("mixed", (8, 2)), ("to-1x1", (1, 1))):
        for mode, (align, half) in RESIZE_MODES.items():

            def f(t, size=size, align=align, half=half):
                return op(t, size, align, half)

            cases.append(Case(f"{name}/{size_label}-{mode}", f, [images]))
            dy = rand((2, *size, 3), 12)
            cases.append(
                Case(f"{name}/grad-{size_label}-{mode}", lambda t, d, f=f: grad(f)(t, d), [images, dy], 1e-4, 1e-5)
            )
    cases.append(Case(f"{name}/int32", lambda t: op(t, (7, 9)), [rand((1, 4, 5, 2), 13, -100, 100, np.int32)]))
    # channels a multiple of 4 (a feature map; the wasm kernel reads them 4 at a time), and a strong downscale
    for mode, (align, half) in RESIZE_MODES.items():
        cases.append(
            Case(f"{name}/channels-8-{mode}", lambda t, a=align, h=half: op(t, (9, 5), a, h), [rand((2, 6, 4, 8), 21)])
        )
    cases.append(
        Case(f"{name}/down-strong", lambda t: op(t, (3, 2), half_pixel_centers=True), [rand((1, 31, 9, 4), 22)])
    )
    cases.append(Case(f"{name}/from-1x1", lambda t: op(t, (3, 4), half_pixel_centers=True), [rand((1, 1, 1, 2), 14)]))
    cases.append(Case(f"{name}/empty-batch", lambda t: op(t, (4, 4)), [rand((0, 3, 3, 1), 15)]))
    edges = with_edges(rand((1, 5, 7, 2), 20), FLOAT_EDGES)
    for size_label, size in (("up", (11, 16)), ("down", (3, 4))):
        cases.append(Case(f"{name}/special-values-{size_label}", lambda t, size=size: op(t, size), [edges]))
    # scale 0.5 with align_corners puts sources on exact halves, which round up (not to even)
    cases.append(Case(f"{name}/align-corners-halves", lambda t: op(t, (9, 5), True), [rand((1, 5, 3, 2), 16)]))
    photo = rand((400, 300, 3), 17, 0, 255)  # one 400x300 RGB image (rank 3)
    pixels = rand((1, 120, 160, 3), 23, 0, 256, np.int32)  # a camera frame's int32 pixels, as pe.vision resizes them
    cases.append(Case(f"{name}/large-int32", lambda t: op(t, (96, 96)), [pixels], 1e-5, 1e-4))
    for mode, (align, half) in RESIZE_MODES.items():
        cases.append(
            Case(f"{name}/large-{mode}", lambda t, a=align, h=half: op(t, (224, 224), a, h), [photo], 1e-5, 1e-4)
        )
    cases.append(
        Case(
            f"{name}/grad-large",
            lambda t, d: grad(lambda u: op(u, (97, 331), half_pixel_centers=True))(t, d),
            [rand((2, 150, 120, 3), 18), rand((2, 97, 331, 3), 19)],
            1e-4,
            1e-4,
        )
    )
    return cases


def _unpack_cases():
    """UnpackRGBA (what browser.from_pixels runs on the uploaded words): any int32 word, every channel count."""
    words = {"pixels": (7, 9), "many-workgroups": (67, 45), "empty": (0, 5)}
    return [
        Case(f"unpack_pixels/{label}-c{channels}", lambda t, c=channels: unpack_pixels(t, c), [words_of(shape, k)])
        for k, (label, shape) in enumerate(words.items())
        for channels in (1, 3, 4)
    ]


def words_of(shape, seed):
    return rand(shape, 30 + seed, -(2**31), 2**31 - 1, np.int32)


def detections(n, seed):
    """n boxes in clusters (so many overlap), half of them with their corners given the other way round, and scores
    with ties."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0, 10, (max(n // 8, 1), 2))[rng.integers(0, max(n // 8, 1), n)] + rng.normal(0, 0.3, (n, 2))
    sizes = rng.uniform(0.5, 2, (n, 2))
    boxes = np.concatenate([centres - sizes / 2, centres + sizes / 2], 1)
    flip = rng.random(n) < 0.5
    boxes[flip] = boxes[flip][:, [2, 3, 0, 1]]
    scores = np.round(rng.random(n), 2)  # two decimals: equal scores, ordered by box index
    return boxes.astype(np.float32), scores.astype(np.float32)


def _crop_cases():
    """Positions are float32 on a GPU (as TF.js's GPU backends), float64 on numpy (as TF.js's CPU): bilinear values
    agree within atol; nearest picks agree away from ties (x.5), so its boxes are random."""
    images = rand((3, 9, 11, 2), 50, -3, 3)
    boxes = np.array(
        [
            [0, 0, 1, 1],
            [0.1, 0.2, 0.7, 0.9],
            [1, 1, 0, 0],
            [-0.5, 0.2, 1.3, 0.8],
            [0.3, 0.3, 0.3, 0.3],
            [0.5, 0, 0.5, 1],
        ],
        np.float32,
    )  # the whole image, a part, flipped, partly outside, a point, a line
    box_ind = np.array([0, 2, 1, 0, 7, -1], np.int32)  # 7 and -1: outside the batch, zeros
    random_boxes = rand((6, 4), 54, -0.3, 1.3)
    cases = []
    for label, size in {"up": (13, 17), "down": (3, 4), "one": (1, 1), "column": (5, 1)}.items():
        for method, picks in (("bilinear", boxes), ("nearest", random_boxes)):
            fn = lambda i, b, k, s=size, m=method: ops.crop_and_resize(i, b, k, s, m, -2.5)  # noqa: E731
            cases.append(Case(f"crop_and_resize/{method}-{label}", fn, [images, picks, box_ind], atol=1e-4))
    for method, n in (("bilinear", 300), ("nearest", 40)):
        fn = lambda i, b, k, m=method: ops.crop_and_resize(i, b, k, (24, 24), m)  # noqa: E731
        inputs = [rand((2, 40, 30, 3), 52), rand((n, 4), 51, -0.2, 1.2), rand((n,), 53, 0, 2, np.int32)]
        cases.append(Case(f"crop_and_resize/{method}-large", fn, inputs, atol=1e-4))
    cases.append(
        Case(
            "crop_and_resize/no-boxes",
            lambda i, b, k: ops.crop_and_resize(i, b, k, (2, 3)),
            [images, np.zeros((0, 4), np.float32), np.zeros(0, np.int32)],
        )
    )
    return cases


def _transform_cases():
    """Random transforms (decimal ones put many positions exactly on a pixel's half, where float32 and float64 round
    apart); every fill mode, both interpolations, one transform for all images or one each, int32 images."""
    rng = np.random.default_rng(55)
    images = rand((2, 6, 7, 3), 56)
    near_identity = np.concatenate([np.eye(3).ravel()[:6], [0, 0]]) + rng.uniform(-0.3, 0.3, 8) * [
        1,
        1,
        4,
        1,
        1,
        4,
        0.02,
        0.02,
    ]
    transforms = {
        "one": near_identity[None].astype(np.float32),
        "each": rng.uniform(-1.5, 1.5, (2, 8)).astype(np.float32),
    }
    transforms["each"][:, 6:] *= 0.01
    cases = []
    for interpolation in ("nearest", "bilinear"):
        for fill_mode in ("constant", "reflect", "wrap", "nearest"):
            for label, t in transforms.items():
                fn = lambda i, t, m=interpolation, f=fill_mode: ops.transform(i, t, m, f, -1.5, (8, 5))  # noqa: E731
                cases.append(Case(f"transform/{interpolation}-{fill_mode}-{label}", fn, [images, t], atol=1e-5))
        fn = lambda i, t, m=interpolation: ops.transform(i, t, m, "reflect", 7)  # noqa: E731
        ints = rand((2, 6, 7, 3), 57, -50, 50, np.int32)
        cases.append(Case(f"transform/{interpolation}-int32", fn, [ints, transforms["one"]]))
        fn = lambda i, t, m=interpolation: ops.transform(i, t, m, "wrap", 0, (120, 90))  # noqa: E731
        cases.append(
            Case(f"transform/{interpolation}-large", fn, [rand((1, 50, 40, 3), 58), transforms["one"]], atol=1e-4)
        )
    return cases


def _nms_cases():
    boxes, scores = detections(40, 40)
    edge_boxes = np.array(
        [
            [0, 0, 1, 1],
            [0, 0, 1, 1],
            [1, 1, 0, 0],
            [0, 0, 0, 1],
            [np.nan, 0, 1, 1],
            [0, 0, 1, np.inf],
            [0, 0.5, 1, 1.5],
        ],
        np.float32,
    )  # duplicates, reversed corners, a zero area, NaN and an infinite coordinate
    edge_scores = np.array([0.5, 0.5, 0.9, 0.7, 0.8, np.nan, 0.6], np.float32)
    big_boxes, big_scores = detections(3000, 41)
    inputs = {"clusters": [boxes, scores], "edges": [edge_boxes, edge_scores], "large": [big_boxes, big_scores]}
    inputs["empty"] = [np.zeros((0, 4), np.float32), np.zeros(0, np.float32)]
    cases = []
    for label, pair in inputs.items():
        cases += [
            Case(f"non_max_suppression/{label}", lambda b, s: ops.non_max_suppression(b, s, 20, 0.3), pair),
            Case(
                f"non_max_suppression/{label}-score-threshold",
                lambda b, s: ops.non_max_suppression(b, s, 100, 0.5, 0.4),
                pair,
            ),
            Case(
                f"non_max_suppression_padded/{label}",
                lambda b, s: ops.non_max_suppression_padded(b, s, 50, 0.4, 0.2, True),
                pair,
            ),
            Case(
                f"non_max_suppression_padded/{label}-unpadded",
                lambda b, s: ops.non_max_suppression_padded(b, s, 10, 0.4),
                pair,
            ),
            Case(
                f"non_max_suppression_with_score/{label}-soft",
                lambda b, s: ops.non_max_suppression_with_score(b, s, 30, 0.6, 0.1, 0.5),
                pair,
            ),
            Case(
                f"non_max_suppression_with_score/{label}-hard",
                lambda b, s: ops.non_max_suppression_with_score(b, s, 30, 0.5),
                pair,
            ),
        ]
    return cases


CASES = (
    _crop_cases()
    + _transform_cases()
    + _nms_cases()
    + _unpack_cases()
    + _resize_cases(ops.resize_bilinear, "resize_bilinear")
    + _resize_cases(ops.resize_nearest, "resize_nearest")
)
