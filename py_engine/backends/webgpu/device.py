"""The narrow interface between the webgpu backend and a WebGPU device.

Two implementations share these semantics: `wgpu_device.WgpuDevice` (wgpu-py, CPython) and the
browser's `bridge.js`. Everything above this line (shader choice, dispatch math, buffer reuse) is
Python that does not know where it runs.

Bindings follow one convention for every shader: binding 0 is a 256-byte uniform block read with a
dynamic offset from the uniform ring; bindings 1..n are the read-only inputs, then the outputs.

    create_buffer(nbytes) -> id          destroy_buffer(id)
    write_buffer(id, data, offset=0)     data: bytes-like, copied at call time
    compile(key, source, n_in, n_out)    sync; compile_async: the same without blocking (warm-up)
    dispatch(key, buffer_ids, uniform_offset, workgroups)   recorded, not yet submitted
    flush(uniform_bytes)                 write the uniform ring, submit every recorded dispatch
    read_buffer(id, nbytes) -> bytes     after submitted work; read_buffer_async for the event loop
    native_buffer(id) -> the platform's buffer object (for data_to_gpu)
    info, limits, lost (None or the reason), stats()

Captured programs (py_engine/capture.py): a recorded sequence of dispatches, built once and replayed whole.

    create_program(dispatches, uniform_bytes) -> id
        dispatches: [(key, buffer_ids, (x, y, z))] of compiled pipelines; uniform_bytes: one 256-byte block per
        dispatch, in order, written once into the program's own uniform buffer (dispatch i reads block i). The
        bind groups are made here, so a replay creates nothing.
    run_program(id, copies_in, copies_out)
        copies: [(src id, dst id, nbytes)], nbytes a multiple of 4. In one command buffer and one submit: the
        copies in, every dispatch in one compute pass, the copies out. Work recorded by dispatch() must be flushed
        first (the submit does not include it). Counts its dispatches and one submit in stats().
    destroy_program(id)                  its uniform buffer and bind groups (the buffers it binds stay)
"""

UNIFORM_BLOCK = 256  # bytes of uniforms each dispatch can read (64 u32 words)
UNIFORM_RING = 256 * 1024  # uniforms of up to 1024 dispatches per submit


class DeviceStats:
    """Counters that make CPU<->GPU traffic and GPU work visible."""

    FIELDS = (
        "dispatches",
        "submits",
        "pipeline_compiles",
        "compile_ms",
        "uploads",
        "upload_bytes",
        "readbacks",
        "readback_bytes",
        "buffers_created",
        "buffers_destroyed",
    )

    def __init__(self):
        for f in self.FIELDS:
            setattr(self, f, 0)

    def as_dict(self):
        return {f: getattr(self, f) for f in self.FIELDS}
