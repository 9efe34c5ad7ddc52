"""Constants and counters shared by the webgpu backend and its devices.

The device contract itself (create/destroy/write buffers, compile, dispatch, flush, read back, captured
programs, info, limits, lost, stats) is `py_engine.backend_protocols.Device`, with its semantics; its two
implementations are `wgpu_device.WgpuDevice` (wgpu-py, CPython) and `bridge_device.BridgeDevice` (the
browser's WebGPU through static/worker/bridge.js). static/worker/bridge.js states none of these constants: BridgeDevice hands it
BRIDGE_CONSTANTS when it opens the device.
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


# What static/worker/bridge.js must agree on with this side, handed to peBridge.open(): its names are the JS side's
BRIDGE_CONSTANTS = {"uniformBlock": UNIFORM_BLOCK, "uniformRing": UNIFORM_RING, "statFields": list(DeviceStats.FIELDS)}
