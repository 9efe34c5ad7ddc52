"""The output size of a window (a convolution's filter, a pool) sliding over an image, and of a transposed
convolution, and TensorFlow's "same" padding: one formula each for the ops' shape checks, the kernels, the layers'
output shapes and the converter's."""


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


def deconv_length(size, stride, window, padding):
    """TF.js's deconvLength: the output length of a transposed convolution along one axis (None stays None)."""
    if size is None:
        return None
    return size * stride + (max(window - stride, 0) if padding == "valid" else 0)


def same_padding(size, extent, stride):
    """(before, after) of TensorFlow's "same" padding along one axis for a window spanning `extent` (dilated): the
    output is ceil(size / stride) long, and the odd pixel goes after (bottom, right, back)."""
    total = max((-(-size // stride) - 1) * stride + extent - size, 0)
    return total // 2, total - total // 2
