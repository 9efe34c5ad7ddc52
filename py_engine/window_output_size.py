"""The output size of a window (a convolution's filter, a pool) sliding over an image: one formula for the ops'
shape checks, the kernels, the layers' output shapes and the converter's."""


def window_output_hw(in_hw, window, strides, pad, dilations=(1, 1)):
    """(height, width) of the positions of `window` (dilated) sliding by `strides` over `in_hw` padded by
    ((top, bottom), (left, right)); 0 or less where the window does not fit."""
    return tuple(
        (n + before + after - (k - 1) * d - 1) // s + 1
        for n, k, s, (before, after), d in zip(in_hw, window, strides, pad, dilations)
    )


def conv_output_length(size, window, padding, stride, dilation=1):
    """Output length along one axis for Keras's padding "same" (ceil(size / stride), as TensorFlow) or "valid";
    None (an unknown size) stays None."""
    if size is None:
        return None
    if padding == "same":
        return -(-size // stride)
    return window_output_hw((size,), (window,), (stride,), ((0, 0),), (dilation,))[0]
