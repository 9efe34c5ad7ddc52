"""The output size of a window (a convolution's filter, a pool) sliding over an image: one formula for the ops'
shape checks and the kernels."""


def window_output_hw(in_hw, window, strides, pad, dilations=(1, 1)):
    """(height, width) of the positions of `window` (dilated) sliding by `strides` over `in_hw` padded by
    ((top, bottom), (left, right)); 0 or less where the window does not fit."""
    return tuple(
        (n + before + after - (k - 1) * d - 1) // s + 1
        for n, k, s, (before, after), d in zip(in_hw, window, strides, pad, dilations)
    )
