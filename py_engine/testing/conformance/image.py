"""Conformance cases: image resizing, forward and gradients (pe.grad with an explicit dy, so no reduction kernel is
needed), and unpacking RGBA pixels."""

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
    cases.append(Case(f"{name}/from-1x1", lambda t: op(t, (3, 4), half_pixel_centers=True), [rand((1, 1, 1, 2), 14)]))
    cases.append(Case(f"{name}/empty-batch", lambda t: op(t, (4, 4)), [rand((0, 3, 3, 1), 15)]))
    edges = with_edges(rand((1, 5, 7, 2), 20), FLOAT_EDGES)
    for size_label, size in (("up", (11, 16)), ("down", (3, 4))):
        cases.append(Case(f"{name}/special-values-{size_label}", lambda t, size=size: op(t, size), [edges]))
    # scale 0.5 with align_corners puts sources on exact halves, which round up (not to even)
    cases.append(Case(f"{name}/align-corners-halves", lambda t: op(t, (9, 5), True), [rand((1, 5, 3, 2), 16)]))
    photo = rand((400, 300, 3), 17, 0, 255)  # one 400x300 RGB image (rank 3)
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


CASES = (
    _unpack_cases()
    + _resize_cases(ops.resize_bilinear, "resize_bilinear")
    + _resize_cases(ops.resize_nearest, "resize_nearest")
)
