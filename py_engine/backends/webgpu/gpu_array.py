"""What kernels see of tensors: buffer ids with a shape and dtype, or a number kept on the host."""


class GpuArray:
    """What a kernel sees of a tensor: a buffer id with a shape and dtype."""

    __slots__ = ("buffer", "dtype", "shape", "size")
    value = None  # a HostScalar's number

    def __init__(self, buffer, shape, dtype, size=None):
        self.buffer, self.shape, self.dtype = buffer, shape, dtype
        if size is None:
            size = 1
            for d in shape:
                size *= d
        self.size = size

    def view(self, shape):
        return GpuArray(self.buffer, shape, self.dtype)


class HostScalar(GpuArray):
    """A one-element operand known on the host: `value` is its number as a uniform holds it (bool as 0/1), and
    `buffer` stays None until a kernel that cannot take a uniform needs it uploaded."""

    __slots__ = ("value",)

    def __init__(self, value, shape, dtype, buffer=None):
        super().__init__(buffer, shape, dtype, 1)
        self.value = value

    def view(self, shape):
        return HostScalar(self.value, shape, self.dtype, self.buffer)


__all__ = ["GpuArray", "HostScalar"]
