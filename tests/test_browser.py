import numpy as np
import pytest

import py_engine as pe
from py_engine.errors import DTypeError, ShapeError


def rgba(h, w, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 4), dtype=np.uint8)


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview, lambda a: np.frombuffer(a, np.uint8)])
def test_from_pixels_drops_alpha(wrap):
    pixels = rgba(3, 5)
    t = pe.browser.from_pixels(wrap(pixels.tobytes()), 3, 5)
    assert t.shape == (3, 5, 3) and t.dtype == pe.int32
    np.testing.assert_array_equal(t.numpy(), pixels[..., :3])
    t.dispose()


@pytest.mark.usefixtures("each_backend")
@pytest.mark.parametrize("channels", [1, 3, 4])
def test_from_pixels_channels(channels):
    pixels = rgba(2, 4, seed=1)
    t = pe.browser.from_pixels(pixels.tobytes(), 2, 4, channels=channels)
    np.testing.assert_array_equal(t.numpy(), pixels[..., :channels])
    t.dispose()


def test_from_pixels_uploads_once_and_size_0():
    before = pe.memory().num_tensors
    t = pe.browser.from_pixels(rgba(4, 4).tobytes(), 4, 4)
    assert pe.memory().num_tensors == before + 1 and pe.memory().num_data_buffers >= 1
    t.dispose()
    empty = pe.browser.from_pixels(b"", 0, 7)
    assert empty.shape == (0, 7, 3)
    empty.dispose()


@pytest.mark.parametrize("each_backend", ["webgpu"], indirect=True)
def test_from_pixels_uploads_four_bytes_a_pixel_to_the_gpu(each_backend):
    assert pe.get_backend() == "webgpu"
    before = pe.stats()
    t = pe.browser.from_pixels(rgba(30, 50).tobytes(), 30, 50)
    after = pe.stats()
    assert (after["uploads"] - before["uploads"], after["upload_bytes"] - before["upload_bytes"]) == (1, 30 * 50 * 4)
    assert after["dispatches"] - before["dispatches"] == 1  # the unpacking, on the GPU
    np.testing.assert_array_equal(t.numpy(), rgba(30, 50)[..., :3])
    t.dispose()


def test_from_pixels_errors():
    with pytest.raises(ShapeError, match=r"from_pixels: 10 bytes .* \(2, 2\); expected 2\*2\*4 = 16"):
        pe.browser.from_pixels(bytes(10), 2, 2)
    with pytest.raises(DTypeError, match=r"from_pixels: data must be bytes-like .* got list"):
        pe.browser.from_pixels([0] * 16, 2, 2)
    with pytest.raises(ValueError, match="from_pixels: channels must be 1, 3 or 4, got 2"):
        pe.browser.from_pixels(bytes(16), 2, 2, channels=2)
    with pytest.raises(TypeError, match=r"from_pixels: height must be a non-negative int, got -1"):
        pe.browser.from_pixels(bytes(16), -1, 2)
    with pytest.raises(TypeError, match=r"from_pixels: width must be a non-negative int, got 2.0"):
        pe.browser.from_pixels(bytes(16), 2, 2.0)
    words = pe.zeros((2, 2), dtype="float32")
    with pytest.raises(DTypeError, match=r"unpack_pixels: packed pixels must be int32 words, got float32"):
        pe.browser.unpack_pixels(words)
    with pytest.raises(ValueError, match="unpack_pixels: channels must be 1, 3 or 4, got 0"):
        pe.browser.unpack_pixels(words, 0)
    words.dispose()
