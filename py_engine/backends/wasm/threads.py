"""The wasm backend's threads: the big kernels (products, convolutions, depthwise convolutions, pooling) split by
output rows over a pool of workers that run the same kernels (kernels_shared.wasm) on a shared WebAssembly.Memory.

Pyodide's memory is not shared, so a threaded op copies its operands into the shared memory (an arena, reused by
every op: it grows to the largest op's operands and stays), every thread, the calling one too, takes chunks of
output rows until none are left (no two write the same bytes), and the output is copied back into a numpy array.
The host provides the pool (`globalThis.pyEngineWasmPool`: static/worker/wasm_pool.js, loaded by the page's worker, or by
tests/pyodide/run.mjs in Node); where it cannot (not cross-origin isolated, no SharedArrayBuffer, no host pool),
the backend runs on one thread and says why. A worker that stops answering ends the pool: the op, and every op
after it, runs on the calling thread alone.
"""

from importlib import resources
from types import SimpleNamespace

import numpy as np

from . import native
from .native import F32, I32

# multiply-adds (about) below which an op stays on the calling thread: the copies and a worker's wake-up cost more
MIN_WORK = 1 << 19
# multiply-adds per byte copied in and out below which an op stays on the calling thread: a thread's kernel does
# about 8 G/s, a copy 8 GB/s, so on 2 threads an op must save more kernel time (half of it) than its copies cost.
# Depthwise convolutions (9 or 25 per output, 8 bytes in and out) and pooling mostly stay.
MIN_INTENSITY = 2
ARENA = 4096  # static/worker/wasm_pool.js: the control block comes first
ALIGN = 16
JOIN_TIMEOUT_MS = 10000  # a worker that has not finished its share by then is taken for dead
# an op's rows in about this many chunks per thread: a thread that gets less of the CPU takes fewer
CHUNKS_PER_THREAD = 4

pool = None  # the running Pool, or None: every kernel on the calling thread
reason = "one thread was asked for"  # why pool is None
_starts = 0  # start() calls so far: a start overtaken by a later one closes what it started


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
        self._post, self._run = js_pool.post, js_pool.run
        self._copy_in, self._copy_out, self._reserve = js_pool.copyIn, js_pool.copyOut, js_pool.reserve
        self.size = self._reserve(0)
        self.top = ARENA
        self.calls = 0  # kernel calls split over the threads (backend_info's threaded_calls)

    def begin(self):
        """Start an op: its operands go into the arena from the start."""
        self.top = ARENA

    def alloc(self, nbytes):
        """The shared address of `nbytes` of the arena for this op."""
        at = self.top
        self.top = -(-(at + nbytes) // ALIGN) * ALIGN
        if self.top > self.size:
            self.size = self._reserve(self.top)
        return at

    def put(self, array, dtype=F32):
        """`array` (C-contiguous, `dtype`) copied into the arena: its shared address."""
        at = self.alloc(array.nbytes)
        self._copy_in(at, native.address(array, array.size, dtype), array.nbytes)
        return at

    def get(self, at, array):
        """The arena's bytes at `at` copied into `array` (a float32 array the wrapper allocated)."""
        self._copy_out(native.address(array, array.size), at, array.nbytes)
        return array

    def run(self, name, rows, args, first, last, *, multiple=1, scratch=None):
        """Export `name` over `rows` rows on every thread, in chunks each thread takes while any are left: a chunk
        of rows r0 .. r1 gets args[i] + r0 * first[i] + r1 * last[i] for argument i. scratch: {argument index: a
        list of one address per thread} for what each thread needs of its own. False if a worker failed or did
        not finish: the pool is then closed, and `reason` says why."""
        self.calls += 1
        chunk = max(multiple, -(-rows // (self.threads * CHUNKS_PER_THREAD * multiple)) * multiple)
        for t in range(self.threads):
            own = list(args)
            for i, addresses in (scratch or {}).items():
                own[i] = addresses[t]
            self._post(t, *own)
        failed = self._run(self.index[name], rows, chunk, JOIN_TIMEOUT_MS, *first, *last)
        if failed is None:
            return True
        stop(f"the pool of workers stopped ({failed} in {name}); running on one thread")
        return False

    def close(self):
        self.js.close()


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


def worth(work, *arrays):
    """The running pool, if an op of `work` multiply-adds whose operands and output are `arrays` should use it."""
    if pool is None or work < MIN_WORK or work < MIN_INTENSITY * sum(a.nbytes for a in arrays):
        return None
    return pool


# ---- the threaded kernels: each returns its output, or None when the pool was lost (the caller then runs it) ----


def gemm(p, a, b, m, n, k, transposed_b, out, bias=None, activation=0):
    """out[m, n] = activation(a @ b + bias): a (m x k) row-major, b (k x n; n x k when `transposed_b`)."""
    p.begin()
    pa, pb = p.put(a), p.put(b)
    packed = p.alloc(-(-n // 8) * 8 * k * 4)
    p.exports.pack_b(pb, k, n, *((1, k) if transposed_b else (n, 1)), packed)
    pbias = p.put(bias) if bias is not None else 0
    pc = p.alloc(m * n * 4)
    # gemm(a, sai, sak, bp, c, ldc, M, N, K, bias, res, act): rows r0 .. r1 at a + r0 * k, c + r0 * n, M = r1 - r0
    args = (pa, k, 1, packed, pc, n, 0, n, k, pbias, 0, activation)
    first = (k * 4, 0, 0, 0, n * 4, 0, -1, 0, 0, 0, 0, 0)
    last = (0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0)
    return p.get(pc, out) if p.run("gemm", m, args, first, last, multiple=4) else None


def conv2d(p, x, shape, rows, weights, k, o, bias, activation, y, block):
    """y = activation(patches(x) @ weights + bias), kernels/nn.c conv2d's rows split over the threads (each with
    scratch for `block` rows of patches)."""
    p.begin()
    px, ps, pw = p.put(x), p.put(shape, I32), p.put(weights)
    packed = p.alloc(-(-o // 8) * 8 * k * 4)
    p.exports.pack_b(pw, k, o, o, 1, packed)
    pbias = p.put(bias) if bias is not None else 0
    py = p.alloc(y.nbytes)
    scratch = [p.alloc(block * k * 4) for _ in range(p.threads)]
    # conv2d(x, s, first, rows, wp, O, bias, act, out, scratch, block)
    args = (px, ps, 0, 0, packed, o, pbias, activation, py, 0, block)
    first, last = (0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0)
    return p.get(py, y) if p.run("conv2d", rows, args, first, last, scratch={9: scratch}) else None


def rows_kernel(p, name, x, shape, rows, y, *args):
    """A kernel over output rows (n, oh) (depthwise, pool): kernels/nn.c's name(x, first, last, s, *args, y), where an
    array in args is copied in and passed by its shared address."""
    p.begin()
    px, ps = p.put(x), p.put(shape, I32)
    args = [p.put(v) if isinstance(v, np.ndarray) else v for v in args]
    py = p.alloc(y.nbytes)
    args = (px, 0, 0, ps, *args, py)
    first, last = [0] * len(args), [0] * len(args)
    first[1] = last[2] = 1
    return p.get(py, y) if p.run(name, rows, args, first, last) else None


def _self_test(p, cases):
    """Why the threaded kernels differ from the calling thread's on `cases` (shapes that do not split evenly), or None.

    As the backend's own self-test, large enough (a few ms) that V8 compiles the shared module's optimized code
    now rather than during the first forward pass, which would otherwise run its baseline code (twice as slow)."""
    global MIN_WORK, MIN_INTENSITY
    saved, threaded = (MIN_WORK, MIN_INTENSITY), {}
    try:
        MIN_WORK = MIN_INTENSITY = 0
        threaded = {name: case() for name, case in cases.items()}
    finally:
        MIN_WORK, MIN_INTENSITY = saved
    global pool
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
        return {"threads": 1, "threads_reason": reason, "threads_memory_bytes": 0, "threaded_calls": 0}
    return {
        "threads": pool.threads,
        "threads_reason": None,
        "threads_memory_bytes": pool.size,
        "threaded_calls": pool.calls,
    }
