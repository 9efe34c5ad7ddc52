"""The wasm backend's threads: the big kernels (products, convolutions, depthwise convolutions, pooling, and their
gradients) split over a pool of workers that run the same kernels (kernels_shared.wasm) on a shared
WebAssembly.Memory.

Pyodide's memory is not shared, so a threaded op copies its operands into the shared memory (an arena, reused by
every op: it grows to the largest op's operands and stays), every thread, the calling one too, takes chunks of
output rows until none are left (no two write the same bytes), and the output is copied back into a numpy array.
Two copies are saved: a tensor's weights (a read-only array: its values never change) are uploaded and packed once,
into blocks below the arena kept while the array lives, and the last op's output stays where it was computed, so
the next op that reads it (the next layer) copies nothing in. The gradients split by images (the input gradients)
or by blocks of rows (each block's partial sum its own, added up in order after), filter taps and channels (the
filter gradients), so again no two threads write the same bytes.
The host provides the pool (`globalThis.pyEngineWasmPool`: static/worker/wasm_pool.js, loaded by the page's worker, or by
tests/pyodide/run.mjs in Node); where it cannot (not cross-origin isolated, no SharedArrayBuffer, no host pool),
the backend runs on one thread and says why. A worker that stops answering ends the pool: the op, and every op
after it, runs on the calling thread alone.
"""

import weakref
from importlib import resources
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np

from . import native
from .native import F32, I32

# multiply-adds (about) below which an op stays on the calling thread: the copies and a worker's wake-up cost more
MIN_WORK = 1 << 19
# multiply-adds per byte copied in and out below which an op stays on the calling thread: a thread's kernel does
# about 8 G/s, a copy 5 to 12 GB/s, so on 2 threads an op must save more kernel time (half of it) than its copies
# cost. A 3x3 depthwise convolution (9 per output) pays when its input is the last op's output (only 4 bytes out).
MIN_INTENSITY = 2
ARENA = 4096  # static/worker/wasm_pool.js: the control block comes first
# static/worker/wasm_pool.js's control block (Int32 words): a call is written from word CALL on (Pool.run)
CALL, FN, ARGC, FIRST, LAST, SLOTS, SLOT, BOUNDS = 6, 7, 8, 16, 32, 64, 16, 320
ALIGN = 16
JOIN_TIMEOUT_MS = 10000  # a worker that has not finished its share by then is taken for dead
# a chunk takes 1 / (GUIDED * threads) of the rows left, down to 1 / (CHUNKS_PER_THREAD * threads) of an op's rows:
# big chunks first (few calls), small ones last, so a thread that gets less of the CPU takes fewer and the threads
# finish close together (equal chunks of 1/8 on 2 threads left one waiting for the other's last chunk)
GUIDED = 2
CHUNKS_PER_THREAD = 16
# a product of fewer rows than this a thread splits its columns (B's panels): a chunk of a few rows would read all of
# B again (a classifier's head: 1 row, one chunk; a 7x7 image's 1x1 convolutions: 49 rows, 4 a chunk)
COLUMNS_BELOW = 32
# elements below which an elementwise op stays on the calling thread even with its operands in the shared memory:
# the split call's own cost (about 8 us) is more than a copy of its output out and in again
MIN_ELEMENTS = 1 << 12
# floats of a filter gradient's partial sums, one per block of rows, below which it splits by those blocks (each
# thread packs only its rows of dy) rather than by taps (each packs all of dy: most of the work where C is 1)
PARTIAL_FLOATS = 1 << 18

SELF_TEST_CALLS = 24  # the self-test's rounds: V8 has optimized the kernels by then, as tier_up.CALLS for one thread
pool = None  # the running Pool, or None: every kernel on the calling thread
reason = "one thread was asked for"  # why pool is None
_starts = 0  # start() calls so far: a start overtaken by a later one closes what it started


class PoolLost(Exception):
    """A split call failed (a worker trapped, died or hung): the pool is closed, `reason` says why."""


class Resident(NamedTuple):
    """The last op's output, left in the shared memory for the next op to read."""

    array: weakref.ref  # to its numpy array
    source: int  # the array's address in Pyodide's memory
    nbytes: int
    at: int  # its shared address


def _aligned(n):
    """A size or address `n` rounded up to a multiple of ALIGN (where every block starts and ends)."""
    return -(-n // ALIGN) * ALIGN


def _owner(array):
    """The array that owns `array`'s memory (itself, or the base of the view it is): while it lives, no other array
    is made at that address."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _panels_bytes(k, n):
    """Bytes of B (k x n) in the GEMM's packed panels: n rounded up to 8 columns."""
    return -(-n // 8) * 8 * k * 4


def _b_strides(k, n, transposed):
    """pack_b's strides of B's rows and columns: stored k x n, or n x k when `transposed`."""
    return (1, k) if transposed else (n, 1)


def module_bytes():
    """The shared module of the variant the backend runs (native.simd), so threads give one thread's results."""
    return resources.files(__package__).joinpath(native.module_name(shared=True)).read_bytes()


def unavailable():
    """Why this host cannot run the pool, or None."""
    try:
        import js
    except ImportError:
        return "not in Pyodide"
    if getattr(js, "crossOriginIsolated", None) is False:  # a browser's page or worker (Node has no such flag)
        return "the page is not cross-origin isolated, so it has no SharedArrayBuffer"
    if not hasattr(js, "SharedArrayBuffer"):
        return "this JavaScript has no SharedArrayBuffer"
    if not hasattr(js, "pyEngineWasmPool"):
        return "the host provides no worker pool (globalThis.pyEngineWasmPool: static/worker/wasm_pool.js)"
    return None


def cores():
    """The machine's logical cores as the JavaScript host reports them (navigator.hardwareConcurrency), or 1."""
    try:
        import js

        return int(js.navigator.hardwareConcurrency)
    except (ImportError, AttributeError, TypeError, ValueError):
        return 1


class Pool:
    """threads - 1 workers and the calling thread, on one shared memory; `run` splits one kernel call over them."""

    def __init__(self, js_pool, threads):
        self.threads = threads
        self.js = js_pool
        names = list(js_pool.names)
        self.index = {name: i for i, name in enumerate(names)}
        # each function looked up once: a JS attribute lookup per call would cost more than the call
        self.exports = SimpleNamespace(**{name: getattr(js_pool.exports, name) for name in names})
        self._run = js_pool.run
        import js
        from pyodide.ffi import to_js

        self._words = lambda words: js.Int32Array.new(to_js(words))  # a call's image (run): one array, one JS call
        self._copy_in, self._copy_out, self._reserve = js_pool.copyIn, js_pool.copyOut, js_pool.reserve
        self._zero = js_pool.zero
        self.size = self._reserve(0)
        self.end = ARENA  # the end of the kept blocks, where the arena starts
        self.free = []  # [address, bytes] of kept blocks given back, in address order
        self.kept = {}  # (id(array), layout) -> (weak reference to the array, address, bytes)
        # address of a kept block -> [bytes, holders]: its kept entry (until the array goes or changes) and each
        # program or recording that reads it; the block is free once none is left
        self.holders = {}
        self.kept_bytes = 0  # pe.memory().num_bytes_in_threads
        self.top = ARENA
        self.pinned = None  # the last op's output (Resident), or None
        self.calls = 0  # kernel calls split over the threads (backend_info's threaded_calls)
        self.copied = 0  # bytes copied into and out of the shared memory (threads_copied_bytes)
        self.spared = 0  # bytes an op found there already: kept weights, the last op's output (threads_spared_bytes)
        # while pe.capture records (native.log is set) every op works in blocks of its own, which the program keeps,
        # and logs its calls: a replay makes them again, with the same arguments, without the wrapper
        self.taken = []  # [address, bytes] of the blocks taken since record()
        self.holding = []  # addresses of the kept blocks (weights' panels and copies) read since record()
        self.is_value = None  # while recording: whether an array is a value of the recording (changes per replay)
        # address in Pyodide's memory of an output copied out since record() -> Resident (while the array lives: a
        # freed array's address may be another array's later)
        self.recorded = {}
        # blocks of the recording that an op uses only while it runs (its copies in, scratch): the current op's; and
        # those earlier ops are done with, and the outputs of values let go of, which later ops reuse
        self.local, self.spare = [], []
        # while recording: the recording differentiates (an op ran under a gradient tape), so worth() counts no output
        # as copied out: the forward pass's outputs are read by their gradients, the gradients by the next ones,
        # which split too, in the pool (a training step's first layer stays there, and its program copies its batch in)
        self.gradients = False

    def record(self, is_value):
        """A capture starts: the blocks its ops take from now on are its program's, and it holds the kept blocks of
        the weights its ops read. `is_value(array)`: whether the array is one of its values (an input, a step's
        output, a fresh value), whose panels or copies are the program's own, made again every replay."""
        self.taken, self.recorded, self.local, self.spare = [], {}, [], []
        self.holding, self.is_value, self.gradients = [], is_value, False

    def hand_over(self):
        """The recording's blocks and the kept blocks it holds, which its program (or drop()) gives back."""
        taken, holding = self.taken, self.holding
        self.taken, self.holding, self.is_value, self.gradients = [], [], None, False
        return taken, holding

    def let_go(self, taken, holding):
        """A program (or a dropped recording) gives back its blocks and lets go of the kept blocks it held."""
        for block in taken:
            self.give_back(*block)
        for at in holding:
            self._unhold(at)

    def _do(self, fn, *args, host=None, of=None):
        """fn(*args), logged for a replay while recording: args[host] is an address in Pyodide's memory; `of` the
        array the call uploads (a replay need not repeat it where that array never changes)."""
        if native.log is not None:
            native.log.pooled(fn, args, host, of)
        return fn(*args)

    def copy_in(self, to, source, nbytes):
        self._copy_in(to, source, nbytes)
        self.copied += nbytes

    def copy_out(self, to, source, nbytes):
        self._copy_out(to, source, nbytes)
        self.copied += nbytes

    def _block(self, nbytes):
        """A block of the program being recorded."""
        nbytes = _aligned(nbytes)
        at = self._take(nbytes)
        self.taken.append((at, nbytes))
        return at

    def _reused(self, nbytes):
        """A block of the program being recorded that a replay writes before it reads it: the start of a spare one
        (the smallest that fits; the rest stays spare), else a new one. Never for what is written once, when
        recorded (shape parameters): a replay's earlier ops write over a spare block."""
        nbytes = _aligned(nbytes)
        fits = [i for i, (_, size) in enumerate(self.spare) if size >= nbytes]
        if fits:
            at, size = self.spare.pop(min(fits, key=lambda i: self.spare[i][1]))
            if size > nbytes:
                self.spare.append((at + nbytes, size - nbytes))
            return at
        return self._block(nbytes)

    def _local(self, nbytes):
        """A block of the program being recorded that only the current op uses."""
        at = self._reused(nbytes)
        self.local.append((at, _aligned(nbytes)))
        return at

    def _spare(self, blocks):
        """`blocks` of the recording are free for later ops (neighbours made one again)."""
        merged = []
        for at, size in sorted(self.spare + blocks):
            if merged and merged[-1][0] + merged[-1][1] == at:
                merged[-1] = (merged[-1][0], merged[-1][1] + size)
            else:
                merged.append((at, size))
        self.spare = merged

    def begin(self):
        """Start an op: its operands go into the arena from the start (around the last op's output); while
        recording, the last op's own blocks are spare."""
        self.top = self.end
        if self.local:
            self._spare(self.local)
            self.local = []

    def freed(self, array):
        """While recording: the engine let go of `array` (no later op reads it), so the block of its split op's
        output serves later ops, as a pool would hand out a freed intermediate's buffer."""
        hit = self.recorded.get(array.__array_interface__["data"][0])
        if hit is not None and (hit.array() is array or hit.array() is _owner(array)):  # an output, a value copied in
            del self.recorded[hit.source]
            self._spare([(hit.at, _aligned(hit.nbytes))])

    def _grow(self, top):
        if top > self.size:
            self.size = self._reserve(top)

    def alloc(self, nbytes, local=False):
        """The shared address of `nbytes` of the arena for this op (not over the last op's output); while recording,
        of a block of the program's (`local`: that only this op uses)."""
        if native.log is not None:
            return self._local(nbytes) if local else self._reused(nbytes)
        at = _aligned(self.top)  # aligned before the test: rounded up after it, a block could reach the last output
        pinned = self.pinned
        if pinned is not None and at < pinned.at + pinned.nbytes and pinned.at < at + nbytes:
            at = _aligned(pinned.at + pinned.nbytes)
        self.top = at + nbytes
        self._grow(self.top)
        return at

    def zeros(self, nbytes):
        at = self.alloc(nbytes)
        self._do(self._zero, at, nbytes)
        return at

    def resident(self, array):
        """The shared address of `array` where it is the last op's output, still there (while recording: any op's
        output since record(), in its block); else None."""
        if native.log is not None:
            if array.flags.writeable:
                return None
            hit = self.recorded.get(array.__array_interface__["data"][0])
            return hit.at if hit is not None and hit.nbytes == array.nbytes and hit.array() is not None else None
        pinned = self.pinned
        if pinned is None or array.flags.writeable or pinned.array() is None:
            return None
        same = array.__array_interface__["data"][0] == pinned.source and array.nbytes == pinned.nbytes
        return pinned.at if same else None

    def put(self, array, dtype=F32, of=None):
        """`array` (C-contiguous, `dtype`) copied into the arena (unless it is the last op's output, still there):
        its shared address."""
        at = self.resident(array)
        if at is not None:
            self.spared += array.nbytes
            return at
        source = native.address(array, array.size, dtype)
        if dtype == I32 and native.log is not None:  # shape parameters: copied in once, when recorded
            at = self._block(array.nbytes)
        elif native.log is not None and of is None and not array.flags.writeable:
            # a value (a tensor's array) a later split op of the recording may read too (a convolution's input, its
            # filter's gradient): its copy stays, as an output does, until the engine lets go of the value
            at = self._reused(array.nbytes)
            self.recorded[source] = Resident(weakref.ref(_owner(array)), source, array.nbytes, at)
        else:
            at = self.alloc(array.nbytes, local=True)
        self._do(self.copy_in, at, source, array.nbytes, host=1, of=of)
        return at

    def get(self, at, array):
        """The arena's bytes at `at` copied into `array` (a float32 array the wrapper allocated), which the next op
        may then find there (resident)."""
        source = native.address(array, array.size)
        self._do(self.copy_out, source, at, array.nbytes, host=0)
        resident = Resident(weakref.ref(array), source, array.nbytes, at)
        if native.log is not None:  # a program's block: no op outside the program may find it resident
            self.recorded[source] = resident
            self.pinned = None
        else:
            self.pinned = resident
        return array

    # ---- kept blocks: a tensor's weights, uploaded once -------------------------------------------------------------

    def packed(self, b, k, n, transposed=False):
        """B (k x n; stored n x k when `transposed`) in the GEMM's panels, kept while b lives: its shared address;
        None where b is not a tensor's buffer (read-only: its values never change), to pack() into the op's arena.
        Before an op's begin()."""
        if b.flags.writeable:
            return None
        if native.log is not None:  # recording: packed again (logged), where a replay repacks a b that changes
            at = self._recorded_block(b, ("packed", k, n, transposed), _panels_bytes(k, n))
            self._do(self.exports.pack_b, self.put(b, of=b), k, n, *_b_strides(k, n, transposed), at, of=b)
            return at
        at = self._keep(b, ("packed", k, n, transposed), _panels_bytes(k, n))
        if at < 0:
            self.spared += b.nbytes
            return ~at
        self.begin()  # b passes through the arena on its way
        self.exports.pack_b(self.put(b), k, n, *_b_strides(k, n, transposed), at)
        return at

    def pack(self, b, k, n, transposed=False):
        """B packed into this op's arena (b is not kept): its shared address."""
        raw = self.put(b)
        at = self.alloc(_panels_bytes(k, n), local=True)
        self._do(self.exports.pack_b, raw, k, n, *_b_strides(k, n, transposed), at)
        return at

    def weights(self, array):
        """`array` (float32) kept in the shared memory while it lives: its address; None where it is not a tensor's
        buffer, to put() into the op's arena. Before an op's begin()."""
        if array.flags.writeable:
            return None
        if native.log is not None:  # recording: copied again (logged), where a replay copies an array that changes
            at = self._recorded_block(array, ("copy",), array.nbytes)
            self._do(self.copy_in, at, native.address(array, array.size), array.nbytes, host=1, of=array)
            return at
        at = self._keep(array, ("copy",), array.nbytes)
        if at < 0:
            self.spared += array.nbytes
            return ~at
        self._copy_in(at, native.address(array, array.size), array.nbytes)
        self.copied += array.nbytes
        return at

    def _recorded_block(self, array, layout, nbytes):
        """While recording: a value's own block of the program's; a weight's kept block (one copy for op by op and
        every program), which the recording holds, so the weight's death or change never frees it under a program."""
        if self.is_value(array):
            return self._block(nbytes)
        at = self._keep(array, layout, nbytes)
        at = ~at if at < 0 else at
        if at not in self.holding:
            self.holding.append(at)
            self.holders[at][1] += 1
        return at

    def _keep(self, array, layout, nbytes):
        """~address of `array`'s block for `layout` if it is kept already; else a new block's address, kept until
        the array goes."""
        key = (id(array), layout)
        entry = self.kept.get(key)
        if entry is not None and entry[0]() is array:
            return ~entry[1]
        nbytes = _aligned(nbytes)
        at = self._take(nbytes)
        self.kept[key] = (weakref.ref(array, lambda _, key=key: self._forget(key)), at, nbytes)
        self.holders[at] = [nbytes, 1]
        self.kept_bytes += nbytes
        return at

    def _take(self, nbytes):
        for i, (at, size) in enumerate(self.free):
            if size >= nbytes:
                if size == nbytes:
                    del self.free[i]
                else:
                    self.free[i] = [at + nbytes, size - nbytes]
                return at
        at = self.end
        self.end += nbytes
        self._grow(self.end)
        if self.pinned is not None and self.pinned.at < self.end:
            self.pinned = None  # the arena moved over the last output
        return at

    def changed(self, array):
        """`array`'s values were written in place (a captured training step's variable): its kept blocks go."""
        for key in [key for key in self.kept if key[0] == id(array)]:
            self._forget(key)

    def _forget(self, key):
        """The array of a kept block went (or changed): the block is free unless a program holds it."""
        entry = self.kept.pop(key, None)
        if entry is not None:
            self._unhold(entry[1])

    def _unhold(self, at):
        """One holder of a kept block lets go of it: the last one frees it."""
        holder = self.holders[at]
        holder[1] -= 1
        if holder[1] == 0:
            del self.holders[at]
            self.kept_bytes -= holder[0]
            self.give_back(at, holder[0])

    def give_back(self, at, nbytes):
        """A block is free (merged with free neighbours; the last one gives its bytes back to the arena)."""
        free = self.free
        i = next((i for i, block in enumerate(free) if block[0] > at), len(free))
        free.insert(i, [at, nbytes])
        if i + 1 < len(free) and at + nbytes == free[i + 1][0]:
            free[i][1] += free.pop(i + 1)[1]
        if i > 0 and free[i - 1][0] + free[i - 1][1] == at:
            free[i - 1][1] += free.pop(i)[1]
            i -= 1
        if free[i][0] + free[i][1] == self.end:
            self.end = free.pop(i)[0]

    def chunk(self, rows, multiple=1, per_thread=CHUNKS_PER_THREAD):
        """Rows of an op's smallest chunk: 1 / (per_thread * threads) of them, a multiple of `multiple`."""
        return max(multiple, -(-rows // (self.threads * per_thread * multiple)) * multiple)

    def bounds(self, rows, multiple=1, per_thread=CHUNKS_PER_THREAD):
        """The chunks' first rows, then `rows`: each chunk 1 / (GUIDED * threads) of the rows left, at least chunk()
        (per_thread 1: equal chunks, one a thread), all but the last a multiple of `multiple`."""
        least, starts = self.chunk(rows, multiple, per_thread), [0]
        while starts[-1] < rows:
            left = rows - starts[-1]
            size = -(-left // (GUIDED * self.threads * multiple)) * multiple
            starts.append(min(rows, starts[-1] + max(least, size)))
        return starts

    def run(self, name, rows, args, first, last, *, multiple=1, scratch=None, per_thread=CHUNKS_PER_THREAD):
        """Export `name` over `rows` rows on every thread, in chunks (bounds()) each thread takes while any are left:
        a chunk of rows r0 .. r1 gets args[i] + r0 * first[i] + r1 * last[i] for argument i. scratch: {argument
        index: a list of one address per thread} for what each thread needs of its own. False if a worker failed or
        did not finish: the pool is then closed, and `reason` says why."""
        bounds, argc = self.bounds(rows, multiple, per_thread), len(args)
        call = [0] * (BOUNDS - CALL) + bounds  # the control block's words from CALL on
        call[0], call[FN - CALL], call[ARGC - CALL] = len(bounds) - 1, self.index[name], argc
        call[FIRST - CALL : FIRST - CALL + argc], call[LAST - CALL : LAST - CALL + argc] = first, last
        for t in range(self.threads):
            own = list(args)
            for i, addresses in (scratch or {}).items():
                own[i] = addresses[t]
            call[SLOTS + t * SLOT - CALL : SLOTS + t * SLOT - CALL + argc] = own
        try:
            self._do(self.split, self._words(call))
        except PoolLost:
            return False
        return True

    def split(self, call):
        """A call (run's image of it) over the threads; PoolLost if a worker failed."""
        self.calls += 1
        failed = self._run(call, JOIN_TIMEOUT_MS)
        if failed is not None:
            name = next(name for name, i in self.index.items() if i == call[FN - CALL])
            stop(f"the pool of workers stopped ({failed} in {name}); running on one thread")
            raise PoolLost(reason)

    def close(self):
        self.js.close()
        self.kept.clear()  # its weak references go with it: no callback frees a block of a closed pool
        self.holders.clear()


async def start(threads, cases, why_one="one thread was asked for"):
    """Run the big kernels on `threads` threads (1: the calling thread alone, `reason` then `why_one`). True if they
    do; otherwise `reason` says why not. `cases`: {kernel name: a call of the backend's kernel} for the self-test
    (the backend builds them: its kernel modules import this one)."""
    global pool, reason, _starts
    if pool is not None and pool.threads == threads:
        return True
    _starts += 1
    this = _starts
    stop(why_one)
    if threads == 1:
        return True
    why = unavailable()
    if why:
        reason = why
        return False
    import js
    from pyodide.ffi import to_js

    reason = f"the pool of {threads} threads is starting"
    try:
        module = js.WebAssembly.Module.new(to_js(module_bytes()))
        started = await js.pyEngineWasmPool(module, threads - 1, native.heap_memory())
    except Exception as e:
        if this == _starts:
            reason = f"the pool of workers did not start ({e}); running on one thread"
        return False
    if this != _starts:  # set_backend asked again meanwhile: its answer stands
        started.close()
        return False
    pool = Pool(started, threads)
    why = _self_test(pool, cases)
    if why:
        stop(why)
        return False
    return True


def stop(why):
    global pool, reason
    if pool is not None:
        pool.close()
    pool, reason = None, why


def worth(work, *arrays, out=(), kept=()):
    """The running pool, if an op of `work` multiply-adds should use it: `arrays` its operands copied in (the last
    op's output, still in the shared memory, is not), `out` its outputs copied out (not while a recording
    differentiates: Pool.gradients), `kept` its weights (copied only where they are not a tensor's buffer, kept
    there; None: none)."""
    if pool is None or work < MIN_WORK:
        return None
    copied = sum(a.nbytes for a in arrays if pool.resident(a) is None)
    copied += sum(a.nbytes for a in kept if a is not None and a.flags.writeable)
    if not (native.log is not None and pool.gradients):
        copied += sum(a.nbytes for a in out)
    if work < MIN_INTENSITY * copied:
        return None
    return pool


def in_place(elements, *arrays):
    """The running pool, if an op of `elements` outputs that does a few operations per byte (an elementwise op, a
    small depthwise convolution or pool) should use it: while a capture records, where its operands `arrays` are all
    in the shared memory already (outputs of split ops, which the program keeps there), so its replay copies nothing
    in and leaves the output there for the next split op (a residual add between two convolutions); None otherwise
    (op by op every output is copied out, which costs more than such an op saves)."""
    if pool is None or native.log is None or elements < MIN_ELEMENTS or any(pool.resident(a) is None for a in arrays):
        return None
    return pool


# ---- the threaded kernels: each returns its output, or None when the pool was lost (the caller then runs it) ----


def gemm(p, a, b, m, n, k, transposed_b, out, bias=None, activation=0, transposed_a=False):
    """out[m, n] = activation(a @ b + bias): a (m x k; k x m when `transposed_a`), b (k x n; n x k when
    `transposed_b`)."""
    packed = p.packed(b, k, n, transposed_b)
    pbias = p.weights(bias) if bias is not None else 0
    p.begin()
    packed = p.pack(b, k, n, transposed_b) if packed is None else packed
    pbias = p.put(bias) if pbias is None else pbias
    pa, pc = p.put(a), p.alloc(m * n * 4)
    sai, sak = (1, m) if transposed_a else (k, 1)
    if m < COLUMNS_BELOW * p.threads:
        # gemm(a, sai, sak, bp, c, ldc, M, N, K, bias, res, act): columns j0 .. j1 (8 a panel) from bp + j0 * K,
        # c + j0, bias + j0, N = j1 - j0
        args = (pa, sai, sak, packed, pc, n, m, 0, k, pbias, 0, activation)
        first = (0, 0, 0, k * 4, 4, 0, 0, -1, 0, 4 if pbias else 0, 0, 0)
        last = (0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0)
        return p.get(pc, out) if p.run("gemm", n, args, first, last, multiple=8) else None
    # rows r0 .. r1 at a + r0 * sai, c + r0 * n, M = r1 - r0; a last panel of 1-4 columns in a tile of 4, as on one
    # thread (kernels/linalg.py gemm: a dense layer's 10 classes)
    args = (pa, sai, sak, packed, pc, n, 0, n, k, pbias, 0, activation)
    first = (sai * 4, 0, 0, 0, n * 4, 0, -1, 0, 0, 0, 0, 0)
    last = (0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0)
    name = "gemm_narrow_edge" if 1 <= n % 8 <= 4 else "gemm"
    return p.get(pc, out) if p.run(name, m, args, first, last, multiple=4) else None


def binary(p, code, a, na, b, nb, y):
    """y = a op b (kernels/math.c binary: each operand of y.size elements, or repeated: a scalar, a bias), the
    elements split over the threads, each chunk whole repeats of the shorter operand."""
    n = y.size
    kept = [p.weights(x) if size < n else None for x, size in ((a, na), (b, nb))]  # a weight repeated: kept there
    p.begin()
    pa, pb = (p.put(x) if at is None else at for x, at in zip((a, b), kept, strict=True))
    py = p.alloc(y.nbytes)
    # binary(op, a, na, b, nb, out, n): elements e0 .. e1 from out + e0, n = e1 - e0, and so each operand of n
    # elements; a repeated one as it is
    args = (code, pa, na * (na < n), pb, nb * (nb < n), py, 0)
    first = (0, 4 * (na == n), -(na == n), 4 * (nb == n), -(nb == n), 4, -1)
    last = (0, 0, int(na == n), 0, int(nb == n), 0, 1)
    repeat = min(na, nb)
    ran = p.run("binary", n, args, first, last, multiple=repeat if 1 < repeat < n else 4)
    return p.get(py, y) if ran else None


def sum_rows(p, x, rows, columns, out):
    """out = kernels/reduce.c sum_rows_strided of x (rows x columns), the columns split over the threads, 8 at a time
    (each column's sum is one lane's, the same whichever columns are summed beside it; a thread's chunk of 4 columns
    would read the cache lines of the 4 beside it too)."""
    p.begin()
    px, pout = p.put(x), p.alloc(out.nbytes)
    return p.get(pout, out) if _sum_columns(p, px, rows, columns, pout) else None


def _sum_columns(p, px, rows, columns, pout):
    """Whether the split call of sum_rows_strided on the pool's px (rows x columns) into pout ran."""
    # sum_rows_strided(x, R, C, ldx, out): columns c0 .. c1 from x + c0, out + c0, C = c1 - c0; ldx all of x's columns
    args, first, last = (px, rows, 0, columns, pout), (4, 0, -1, 0, 4), (0, 0, 1, 0, 0)
    return p.run("sum_rows_strided", columns, args, first, last, multiple=8)


def unary(p, code, x, y):
    """y = op(x) (kernels/math.c unary), the elements split over the threads."""
    p.begin()
    px, py = p.put(x), p.alloc(y.nbytes)
    # unary(op, x, out, n): elements e0 .. e1 from x + e0, out + e0, n = e1 - e0
    args, first, last = (code, px, py, 0), (0, 4, 4, -1), (0, 0, 0, 1)
    return p.get(py, y) if p.run("unary", y.size, args, first, last, multiple=4) else None


def fused(p, steps, count, tensors, scalars, nscalars, outputs, results, scratch, rows):
    """kernels/math.c fused_elementwise (`count` steps, `nscalars` scalars) of `tensors` into `results`, the elements
    split over the threads in `rows` equal parts (a tensor's image rows). The kernel finds its arrays in a table of
    addresses, which no argument's multiple can move, so each part has a table of its own (written once, when
    recorded: the arrays are the program's blocks). `scratch`: the floats each thread needs."""
    p.begin()
    size = tensors[0].size // rows  # a part's elements
    pointers = [p.put(t) for t in tensors] + [p.alloc(r.nbytes) for r in results]
    table = p.put(native.ints([at + i * size * 4 for i in range(rows) for at in pointers]), I32)
    psteps, pouts, pscalars = p.put(steps, I32), p.put(outputs, I32), p.put(scalars) if nscalars else 0
    own = [p.alloc(scratch * 4, local=True) for _ in range(p.threads)]
    # fused_elementwise(prog, steps, ptrs, tensors, scalars, n_scalars, outs, n_outs, scratch, n): parts r0 .. r1 from
    # table + r0 * len(pointers), n = (r1 - r0) * size
    args = (psteps, count, table, len(tensors), pscalars, nscalars, pouts, outputs.size, 0, 0)
    first, last = (0, 0, len(pointers) * 4, 0, 0, 0, 0, 0, 0, -size), (0,) * 9 + (size,)
    if not p.run("fused_elementwise", rows, args, first, last, scratch={8: own}):
        return None
    return tuple(p.get(at, r) for at, r in zip(pointers[len(tensors) :], results, strict=True))


def conv2d(p, x, shape, rows, weights, k, o, bias, activation, y, block):
    """y = activation(patches(x) @ weights + bias), kernels/nn.c conv2d's rows split over the threads (each with
    scratch for `block` rows of patches)."""
    packed = p.packed(weights, k, o)
    pbias = p.weights(bias) if bias is not None else 0
    p.begin()
    packed = p.pack(weights, k, o) if packed is None else packed
    pbias = p.put(bias) if pbias is None else pbias
    px, ps = p.put(x), p.put(shape, I32)
    py = p.alloc(y.nbytes)
    scratch = [p.alloc(block * k * 4, local=True) for _ in range(p.threads)]
    # conv2d(x, s, first, rows, wp, O, bias, act, out, scratch, block)
    args = (px, ps, 0, 0, packed, o, pbias, activation, py, 0, block)
    first, last = (0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0)
    return p.get(py, y) if p.run("conv2d", rows, args, first, last, scratch={9: scratch}) else None


class Panels(NamedTuple):
    """A rows kernel's argument: b (k x n) packed as the GEMM's panels (a depthwise filter's taps)."""

    b: np.ndarray
    k: int
    n: int


def rows_kernel(p, name, x, shape, rows, y, *args):
    """A kernel over output rows (n, oh) (depthwise, pool): kernels/nn.c's name(x, first, last, s, *args, y), where an
    array in args (weights) is in the shared memory and passed by its address there, and Panels by their panels'."""
    kept = [p.packed(*v) if isinstance(v, Panels) else p.weights(v) if isinstance(v, np.ndarray) else v for v in args]
    p.begin()
    args = [
        k if k is not None else p.pack(*v) if isinstance(v, Panels) else p.put(v)
        for v, k in zip(args, kept, strict=True)
    ]
    px, ps = p.put(x), p.put(shape, I32)
    py = p.alloc(y.nbytes)
    args = (px, 0, 0, ps, *args, py)
    first, last = [0] * len(args), [0] * len(args)
    first[1] = last[2] = 1
    return p.get(py, y) if p.run(name, rows, args, first, last) else None


# ---- the gradients: the input gradients by images, the filter gradients by blocks of rows, taps or channels -------


def conv2d_input_grad(p, dy, shape, images, pixels, weights, k, o, dx, block):
    """dx = kernels/nn.c conv2d_input_grad(dy, W), images split over the threads: `pixels` output pixels an image
    (each thread with scratch for `block` rows of patch gradients)."""
    packed = p.packed(weights, o, k, transposed=True)
    p.begin()
    packed = p.pack(weights, o, k, transposed=True) if packed is None else packed
    pdy, ps, pdx = p.put(dy), p.put(shape, I32), p.zeros(dx.nbytes)
    scratch = [p.alloc(block * k * 4, local=True) for _ in range(p.threads)]
    image = dx.nbytes // images
    # conv2d_input_grad(dy, s, rows, wtp, O, dx, scratch, block): images n0 .. n1 from dy + n0 * pixels * O, dx + n0
    # * image, rows (n1 - n0) * pixels
    args = (pdy, ps, 0, packed, o, pdx, 0, block)
    first, last = (pixels * o * 4, 0, -pixels, 0, 0, image, 0, 0), (0, 0, pixels, 0, 0, 0, 0, 0)
    ran = p.run("conv2d_input_grad", images, args, first, last, scratch={6: scratch})
    return p.get(pdx, dx) if ran else None


def conv2d_filter_grad(p, x, shape, rows, dy, taps, c, o, dw, block):
    """dW = kernels/nn.c conv2d_filter_grad, with the one-thread call's blocks of `block` rows, split over the threads
    by those blocks where each thread gets one and their partial sums fit in PARTIAL_FLOATS, else by the filter's taps
    (kh, kw) where it has several (else None: not split)."""
    blocks, k = -(-rows // block), taps * c
    if p.threads <= blocks and blocks * k * o <= PARTIAL_FLOATS:
        return _filter_grad_blocks(p, x, shape, rows, dy, k, o, dw, block, blocks)
    return _filter_grad_taps(p, x, shape, rows, dy, taps, c, o, dw, block) if taps > 1 else None


def _filter_grad_blocks(p, x, shape, rows, dy, k, o, dw, block, blocks):
    """dW by blocks of rows (kernels/nn.c conv2d_filter_grad_blocks): each thread packs only its blocks' rows of dy
    and writes each block's sum into a partial of its own; then sum_rows_strided adds the partials up in the blocks'
    order, their columns split over the threads (one thread's values, bit for bit)."""
    p.begin()
    px, ps, pdy = p.put(x), p.put(shape, I32), p.put(dy)
    partials, pdw = p.alloc(blocks * k * o * 4, local=True), p.alloc(dw.nbytes)
    scratch = [p.alloc(block * k * 4, local=True) for _ in range(p.threads)]
    packed = [p.alloc(block * -(-o // 8) * 8 * 4, local=True) for _ in range(p.threads)]
    # conv2d_filter_grad_blocks(x, s, rows, dy, O, partials, scratch, packed, block, b0, b1)
    args = (px, ps, rows, pdy, o, partials, 0, 0, block, 0, 0)
    first, last = (0,) * 9 + (1, 0), (0,) * 10 + (1,)
    if not p.run("conv2d_filter_grad_blocks", blocks, args, first, last, scratch={6: scratch, 7: packed}):
        return None
    return p.get(pdw, dw) if _sum_columns(p, partials, blocks, k * o, pdw) else None


def _filter_grad_taps(p, x, shape, rows, dy, taps, c, o, dw, block):
    """dW by the filter's taps (kernels/nn.c conv2d_filter_grad_taps), one chunk a thread: every chunk packs all of dy
    again."""
    p.begin()
    px, ps, pdy, pdw = p.put(x), p.put(shape, I32), p.put(dy), p.zeros(dw.nbytes)
    chunk = p.chunk(taps, per_thread=1)
    scratch = [p.alloc(block * chunk * c * 4, local=True) for _ in range(p.threads)]
    packed = [p.alloc(block * -(-o // 8) * 8 * 4, local=True) for _ in range(p.threads)]
    # conv2d_filter_grad_taps(x, s, rows, dy, O, dw, scratch, packed, block, t0, t1)
    args = (px, ps, rows, pdy, o, pdw, 0, 0, block, 0, 0)
    first, last = (0,) * 9 + (1, 0), (0,) * 10 + (1,)
    ran = p.run("conv2d_filter_grad_taps", taps, args, first, last, scratch={6: scratch, 7: packed}, per_thread=1)
    return p.get(pdw, dw) if ran else None


def images_kernel(p, name, images, arrays, shape, weights, dx, zeroed=False):
    """dx (zeroed, then added into) = kernels/nn.c's name(*arrays, N, s, [weights,] dx), images split over the
    threads: each of `arrays` (the image tensors it reads) and dx passed from the chunk's first image, N its images.
    `zeroed`: the kernel zeroes its images' dx itself (max_pool_grad), so each thread zeroes its own."""
    kept = p.weights(weights) if weights is not None else 0
    p.begin()
    kept = p.put(weights) if kept is None else kept
    pointers, ps = [p.put(a) for a in arrays], p.put(shape, I32)
    pdx = p.alloc(dx.nbytes) if zeroed else p.zeros(dx.nbytes)
    args = (*pointers, 0, ps, *([kept] if weights is not None else []), pdx)
    first = [a.nbytes // images for a in arrays] + [-1, 0] + [0] * (weights is not None) + [dx.nbytes // images]
    last = [0] * len(arrays) + [1] + [0] * (len(args) - len(arrays) - 1)
    return p.get(pdx, dx) if p.run(name, images, args, first, last) else None


def depthwise_filter_grad(p, x, dy, images, shape, channels, dw):
    """dW = kernels/nn.c depthwise_filter_grad, its channels split over the threads, 4 at a time."""
    p.begin()
    px, pdy, ps, pdw = p.put(x), p.put(dy), p.put(shape, I32), p.zeros(dw.nbytes)
    # depthwise_filter_grad(x, dy, N, s, dwt, c0, c1)
    args, first, last = (px, pdy, images, ps, pdw, 0, 0), (0,) * 5 + (1, 0), (0,) * 6 + (1,)
    return p.get(pdw, dw) if p.run("depthwise_filter_grad", channels, args, first, last, multiple=4) else None


def _self_test(p, cases):
    """Why the threaded kernels differ from the calling thread's on `cases` (shapes that do not split evenly), or None.

    The threaded cases run SELF_TEST_CALLS times, so that V8 optimizes the shared module's functions on every thread
    and the pool's path now (50-60 ms on 2 threads) rather than during a first model's warm-up, which ran them on
    baseline code: movenet-lightning's on 2 threads took 86 ms against 66 after (docs/journal/graph-models-ahead.md)."""
    global MIN_WORK, MIN_INTENSITY, pool
    saved, threaded = (MIN_WORK, MIN_INTENSITY), {}
    try:
        MIN_WORK = MIN_INTENSITY = 0
        threaded = {name: case() for name, case in cases.items()}
        for _ in range(SELF_TEST_CALLS - 1):
            if pool is None:
                break
            for case in cases.values():
                case()
    finally:
        MIN_WORK, MIN_INTENSITY = saved
    if pool is None:
        return reason
    pool = None  # the same kernels on the calling thread alone
    try:
        for name, case in cases.items():
            if not np.array_equal(threaded[name], case()):
                return (
                    f"the threaded kernels' self-test failed: {name} differs from one thread's; running on one thread"
                )
    finally:
        pool = p
    return None


def info():
    """backend_info()'s part: threads, and why one where the pool does not run."""
    if pool is None:
        return {
            "threads": 1,
            "threads_reason": reason,
            "threads_memory_bytes": 0,
            "threads_kept_bytes": 0,
            "threaded_calls": 0,
            "threads_copied_bytes": 0,
            "threads_spared_bytes": 0,
        }
    return {
        "threads": pool.threads,
        "threads_reason": None,
        "threads_memory_bytes": pool.size,
        "threads_kept_bytes": pool.kept_bytes,
        "threaded_calls": pool.calls,
        "threads_copied_bytes": pool.copied,
        "threads_spared_bytes": pool.spared,
    }


def changed(array):
    """`array`'s values were written in place: the pool's copies of it go (Pool.changed)."""
    if pool is not None:
        pool.changed(array)


def kept_bytes():
    """The weights kept in the shared memory (pe.memory().num_bytes_in_threads)."""
    return 0 if pool is None else pool.kept_bytes
