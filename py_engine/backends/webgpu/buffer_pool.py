"""Reuse of GPU buffers by size class.

TensorFlow.js reuses a freed buffer only for a request of exactly the same size. Here sizes are
rounded up to classes (powers of two split into quarters, so at most 25% is wasted), and a freed
buffer serves any later request of its class.

Buffers freed while recorded-but-unsubmitted work may still read them wait in `pending` until the next
submit before an upload may have them: a queue write lands before the submit of the work recorded
earlier, so it would overwrite data a pending dispatch has yet to read. A kernel's output may have them
at once: its dispatch is recorded after the ones reading them, and a queue runs recorded work in order.
So a batch of dispatches (a forward pass) reuses its intermediates' buffers as it goes, instead of
creating, zeroing and holding a buffer for each (EfficientNet-Lite0's first classification created 60
buffers for 31 MB of intermediates). For the same reason as uploads, a buffer `discard`ed (given back to
the device, not kept) is destroyed only at the next submit.
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
        self.pending = {}  # size class -> [buffer id] freed since the last submit
        self.pending_bytes = 0
        self.doomed = []  # buffer ids discarded since the last submit
        self.size_of = {}  # buffer id -> size class
        self.bytes_allocated = 0  # every buffer the pool owns, in use, free or waiting to be destroyed
        self.bytes_in_use = 0
        self.reused = 0

    def acquire(self, nbytes, avoid=None, upload=False):
        """A buffer of at least nbytes, none of the ids in `avoid`: (buffer id, whether it was created for this
        request). `upload`: the buffer is for a queue write, so none freed since the last submit (module docstring).

        Raises what the device raises (MemoryError when it is out of memory) with the counters unchanged.
        """
        return self.acquire_class(self.class_of(nbytes), avoid, upload)

    def class_of(self, nbytes):
        """The size class of a request of nbytes: what the pool hands out for it."""
        cls = size_class(nbytes)
        if cls > self.max_bytes:  # nbytes itself fits (the caller checked): a class of its own, in whole words
            cls = -(-nbytes // 4) * 4
        return cls

    def acquire_class(self, cls, avoid=None, upload=False):
        """acquire() for a size class known already (a replayed dispatch plan's)."""
        ids = self.free.get(cls)
        if ids and not avoid:  # the usual case, written out: the class's last freed buffer
            self.reused += 1
            self.bytes_in_use += cls
            return ids.pop(), False
        bid = self._reusable(ids, avoid)
        if bid is None and not upload:
            bid = self._reusable(self.pending.get(cls), avoid)
            if bid is not None:
                self.pending_bytes -= cls
        created = bid is None
        if created:
            bid = self.device.create_buffer(cls)
            self.size_of[bid] = cls
            self.bytes_allocated += cls
        else:
            self.reused += 1
        self.bytes_in_use += cls
        return bid, created

    @staticmethod
    def _reusable(ids, avoid):
        """Take the last id of `ids` not in `avoid`; None if there is none."""
        at = len(ids) - 1 if ids else -1
        if avoid:
            while at >= 0 and ids[at] in avoid:
                at -= 1
        return ids.pop(at) if at >= 0 else None

    def release(self, bid):
        """Keep the buffer for reuse (by an upload only after the next submit)."""
        cls = self.size_of[bid]
        self.bytes_in_use -= cls
        self.pending.setdefault(cls, []).append(bid)
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
        for lists in (self.free, self.pending):
            for cls, ids in lists.items():
                taken.update(bid for bid in ids if bid in wanted)
                lists[cls] = [bid for bid in ids if bid not in wanted]
        self.pending_bytes = sum(cls * len(ids) for cls, ids in self.pending.items())
        self.bytes_in_use += sum(self.size_of[bid] for bid in taken)
        return taken

    def submitted(self):
        """The device submitted all recorded work: buffers freed before it can be reused by uploads, or destroyed."""
        for cls, ids in self.pending.items():
            self.free.setdefault(cls, []).extend(ids)
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
