"""Reuse of GPU buffers by size class.

TensorFlow.js reuses a freed buffer only for a request of exactly the same size. Here sizes are
rounded up to classes (powers of two split into quarters, so at most 25% is wasted), and a freed
buffer serves any later request of its class. Buffers freed while recorded-but-unsubmitted work
may still read them wait in `pending` until the next submit: reusing one earlier would let an
upload overwrite data that the pending dispatch has yet to read. For the same reason a buffer
`discard`ed (given back to the device, not kept) is destroyed only at the next submit.
"""

MIN_CLASS = 256


def size_class(nbytes):
    if nbytes <= MIN_CLASS:
        return MIN_CLASS
    top = 1 << (nbytes - 1).bit_length()  # next power of two
    step = top // 8  # quarters of the octave (top/2, top]
    return -(-nbytes // step) * step


class BufferPool:
    def __init__(self, device, max_bytes):
        self.device = device
        self.max_bytes = max_bytes  # the device's largest buffer: no class rounds past it
        self.free = {}  # size class -> [buffer id]
        self.pending = []  # (size class, buffer id) freed since the last submit
        self.pending_bytes = 0
        self.doomed = []  # buffer ids discarded since the last submit
        self.size_of = {}  # buffer id -> size class
        self.bytes_allocated = 0  # every buffer the pool owns, in use, free or waiting to be destroyed
        self.bytes_in_use = 0
        self.reused = 0

    def acquire(self, nbytes, avoid=None):
        """A buffer of at least nbytes, none of the ids in `avoid`: (buffer id, whether it was created for this
        request).

        Raises what the device raises (MemoryError when it is out of memory) with the counters unchanged.
        """
        return self.acquire_class(self.class_of(nbytes), avoid)

    def class_of(self, nbytes):
        """The size class of a request of nbytes: what the pool hands out for it."""
        cls = size_class(nbytes)
        if cls > self.max_bytes:  # nbytes itself fits (the caller checked): a class of its own, in whole words
            cls = -(-nbytes // 4) * 4
        return cls

    def acquire_class(self, cls, avoid=None):
        """acquire() for a size class known already (a replayed kernel plan's)."""
        ids = self.free.get(cls)
        if ids and not avoid:  # the usual case, written out: the class's last freed buffer
            self.reused += 1
            self.bytes_in_use += cls
            return ids.pop(), False
        at = len(ids) - 1 if ids else -1
        if avoid:
            while at >= 0 and ids[at] in avoid:
                at -= 1
        created = at < 0
        if created:
            bid = self.device.create_buffer(cls)
            self.size_of[bid] = cls
            self.bytes_allocated += cls
        else:
            bid = ids.pop(at)
            self.reused += 1
        self.bytes_in_use += cls
        return bid, created

    def release(self, bid):
        """Keep the buffer for reuse (after the next submit)."""
        cls = self.size_of[bid]
        self.bytes_in_use -= cls
        self.pending.append((cls, bid))
        self.pending_bytes += cls

    def discard(self, bid):
        """Give the buffer back to the device (at the next submit)."""
        self.bytes_in_use -= self.size_of[bid]
        self.doomed.append(bid)

    def take_back(self, bids):
        """Of `bids`, the ones free or waiting in the pool become in use again (a captured program keeps them, so
        nothing else may reuse them); returns that set."""
        wanted = set(bids)
        taken = set()
        waiting = []
        for cls, bid in self.pending:
            if bid in wanted:
                taken.add(bid)
                self.pending_bytes -= cls
            else:
                waiting.append((cls, bid))
        self.pending = waiting
        for cls, ids in self.free.items():
            kept = [bid for bid in ids if bid not in wanted]
            taken.update(bid for bid in ids if bid in wanted)
            self.free[cls] = kept
        self.bytes_in_use += sum(self.size_of[bid] for bid in taken)
        return taken

    def submitted(self):
        """The device submitted all recorded work: buffers freed before it can be reused or destroyed."""
        for cls, bid in self.pending:
            self.free.setdefault(cls, []).append(bid)
        self.pending.clear()
        self.pending_bytes = 0
        for bid in self.doomed:
            self._destroy(bid)
        self.doomed.clear()

    def release_free(self):
        """Give every unused buffer back to the device."""
        for ids in self.free.values():
            for bid in ids:
                self._destroy(bid)
        self.free.clear()

    def _destroy(self, bid):
        self.device.destroy_buffer(bid)
        self.bytes_allocated -= self.size_of.pop(bid)
