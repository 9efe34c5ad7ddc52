"""Reuse of GPU buffers by size class.

TensorFlow.js reuses a freed buffer only for a request of exactly the same size. Here sizes are
rounded up to classes (powers of two split into quarters, so at most 25% is wasted), and a freed
buffer serves any later request of its class. Buffers freed while recorded-but-unsubmitted work
may still read them wait in `pending` until the next submit: reusing one earlier would let an
upload overwrite data that the pending dispatch has yet to read.
"""

MIN_CLASS = 256


def size_class(nbytes):
    if nbytes <= MIN_CLASS:
        return MIN_CLASS
    top = 1 << (nbytes - 1).bit_length()  # next power of two
    step = top // 8  # quarters of the octave (top/2, top]
    return -(-nbytes // step) * step


class BufferPool:
    def __init__(self, device):
        self.device = device
        self.free = {}  # size class -> [buffer id]
        self.pending = []  # (size class, buffer id) freed since the last submit
        self.size_of = {}  # buffer id -> size class
        self.bytes_allocated = 0  # every buffer the pool owns, in use or free
        self.bytes_in_use = 0
        self.reused = 0

    def acquire(self, nbytes):
        cls = size_class(nbytes)
        ids = self.free.get(cls)
        if ids:
            bid = ids.pop()
            self.reused += 1
        else:
            bid = self.device.create_buffer(cls)
            self.size_of[bid] = cls
            self.bytes_allocated += cls
        self.bytes_in_use += cls
        return bid

    def release(self, bid):
        cls = self.size_of[bid]
        self.bytes_in_use -= cls
        self.pending.append((cls, bid))

    def submitted(self):
        """The device submitted all recorded work: buffers freed before it can be reused."""
        for cls, bid in self.pending:
            self.free.setdefault(cls, []).append(bid)
        self.pending.clear()

    def release_free(self):
        """Give every unused buffer back to the device."""
        for ids in self.free.values():
            for bid in ids:
                self.device.destroy_buffer(bid)
                self.bytes_allocated -= self.size_of.pop(bid)
        self.free.clear()
