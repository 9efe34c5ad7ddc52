"""The webgpu backend: buffer reuse, batched submits, the pipeline cache, uniforms, readback, loss.

Kernels are Python functions `fn(backend, *inputs, **attrs)` whose inputs are `GpuArray`s; they
allocate outputs with `backend.empty` and record work with `backend.dispatch`. Nothing here waits
for the GPU except `read`: dispatches are recorded into one command encoder and submitted in
batches (on readback, every `batch_size` dispatches, when the uniform ring is full, or on `flush`).
"""

import asyncio
import struct

import numpy as np

from ... import dtypes
from .buffer_pool import BufferPool
from .device import UNIFORM_BLOCK, UNIFORM_RING
from .wgsl import ITEMSIZE_ON_GPU, MAX_RANK

_WORD_CODES = {int: "i", float: "f", bool: "i"}


class GpuArray:
    """What a kernel sees of a tensor: a buffer id with a shape and dtype."""

    __slots__ = ("buffer", "dtype", "shape", "size")

    def __init__(self, buffer, shape, dtype):
        self.buffer, self.shape, self.dtype = buffer, shape, dtype
        n = 1
        for d in shape:
            n *= d
        self.size = n


class WebGPUBackend:
    name = "webgpu"
    is_gpu = True

    def __init__(self, device, batch_size=64):
        self.device = device
        self.pool = BufferPool(device)
        self.batch_size = batch_size
        self._uniforms = bytearray(UNIFORM_RING)
        self._uniform_end = 0
        self._recorded = 0
        kind = device.info.get("adapter_type", "") + " " + device.info.get("architecture", "")
        # CPU WebGPU (SwiftShader, llvmpipe) runs register-blocked kernels ~2x faster than
        # shared-memory tiles; real GPUs want the tiles (shared/FACTS.md).
        self.on_cpu = "cpu" in kind.lower() or "swiftshader" in kind.lower()
        self.variants = {}  # kernel family -> the variant chosen for this adapter
        self.dry_run = None  # a list while warm-up collects shaders instead of dispatching

    # ---- the engine's backend interface -----------------------------------------------------

    def info(self):
        return {**self.device.info, "variants": dict(self.variants), "on_cpu_adapter": self.on_cpu}

    def memory_caveats(self):
        return []

    def allocated_bytes(self):
        return self.pool.bytes_allocated

    def upload(self, array):
        dtype = dtypes.of_numpy(array.dtype)
        host = array.astype(np.uint32) if dtype == dtypes.bool_ else array
        nbytes = array.size * ITEMSIZE_ON_GPU
        buf = self.pool.acquire(nbytes)
        if nbytes:
            self.device.write_buffer(buf, np.ascontiguousarray(host))
        return GpuArray(buf, array.shape, dtype), nbytes

    def read(self, handle):
        self.flush()
        raw = self.device.read_buffer(handle.buffer, handle.size * ITEMSIZE_ON_GPU)
        return self._decode(raw, handle)

    async def read_async(self, handle):
        self.flush()
        raw = await self.device.read_buffer_async(handle.buffer, handle.size * ITEMSIZE_ON_GPU)
        return self._decode(raw, handle)

    @staticmethod
    def _decode(raw, handle):
        if handle.dtype == dtypes.bool_:
            return np.frombuffer(raw, np.uint32).astype(bool)
        return np.frombuffer(raw, dtypes.NUMPY[handle.dtype]).copy()

    def free(self, handle):
        self.pool.release(handle.buffer)

    def run(self, fn, inputs, attrs):
        args = []
        for t in inputs:
            h = t._buf.handle
            if len(t.shape) > MAX_RANK:
                raise ValueError(f"webgpu kernels support rank <= {MAX_RANK}; got shape {t.shape}")
            args.append(h if h.shape == t.shape else GpuArray(h.buffer, t.shape, h.dtype))
        out = fn(self, *args, **attrs) if attrs else fn(self, *args)
        if type(out) is tuple:
            return [(o, o.size * ITEMSIZE_ON_GPU, o.shape, o.dtype) for o in out], True
        return [(out, out.size * ITEMSIZE_ON_GPU, out.shape, out.dtype)], False

    # ---- what kernels use -------------------------------------------------------------------

    def empty(self, shape, dtype):
        shape = tuple(shape)
        n = 1
        for d in shape:
            n *= d
        return GpuArray(self.pool.acquire(n * ITEMSIZE_ON_GPU), shape, dtype)

    def dispatch(self, shader, arrays, uniforms, workgroups):
        """Record one dispatch. `uniforms`: ints and floats packed as 32-bit words from word 0."""
        if self.dry_run is not None:
            self.dry_run.append(shader)
            return
        if not self.device.has_pipeline(shader.key):
            self.device.compile(shader.key, shader.source, shader.n_in, shader.n_out)
        if self._uniform_end + UNIFORM_BLOCK > UNIFORM_RING:
            self.flush()
        offset = self._uniform_end
        fmt = "<" + "".join(map(_WORD_CODES.__getitem__, map(type, uniforms)))
        struct.pack_into(fmt, self._uniforms, offset, *uniforms)
        self._uniform_end += UNIFORM_BLOCK
        self.device.dispatch(shader.key, [a.buffer for a in arrays], offset, workgroups)
        self._recorded += 1
        if self._recorded >= self.batch_size:
            self.flush()

    def flush(self):
        """Submit every recorded dispatch in one command buffer."""
        if self._recorded:
            self.device.flush(memoryview(self._uniforms)[: self._uniform_end])
            self._uniform_end = self._recorded = 0
        self.pool.submitted()

    async def warmup(self, shaders):
        """Compile pipelines without running them, all at once (a browser compiles them in parallel);
        returns how many were new."""
        new = {s.key: s for s in shaders if not self.device.has_pipeline(s.key)}.values()
        await asyncio.gather(*(self.device.compile_async(s.key, s.source, s.n_in, s.n_out) for s in new))
        return len(new)

    def native_buffer(self, handle):
        return self.device.native_buffer(handle.buffer)

    def stats(self):
        return {
            **self.device.stats(),
            "pool_bytes_allocated": self.pool.bytes_allocated,
            "pool_bytes_in_use": self.pool.bytes_in_use,
            "pool_reuses": self.pool.reused,
            "recorded_unsubmitted": self._recorded,
            "variants": dict(self.variants),
        }

    def release_pool(self):
        self.flush()
        self.pool.release_free()

    @property
    def lost(self):
        return self.device.lost


__all__ = ["GpuArray", "WebGPUBackend"]
