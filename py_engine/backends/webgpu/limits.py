"""What one allocation may take on a WebGPU device, and the errors that say why it cannot.

The backend checks every allocation here before it takes anything from the buffer pool, so a refused
allocation leaves nothing behind and the error names the op that asked. Unchecked, an over-limit
buffer fails where nobody asked for it: wgpu-py refuses it at the first bind group, and the browser
hands back an invalid buffer whose error poisons the command buffer of some later submit.
"""

from ...errors import ResourceExhaustedError
from .wgsl import ITEMSIZE_ON_GPU

MAX_ELEMENTS = 2**31 - 1  # element counts reach the shaders as i32 uniform words

# WebGPU's default limits (the spec's "Limits" table): what every browser gives on every adapter. A device is asked
# for these, in CPython as in the page (static/worker/gpu_device.js), so a kernel that runs in one runs in the other: wgpu-py
# would otherwise give the adapter's own (on llvmpipe a workgroup of 1024 threads or 32 KiB of workgroup memory,
# which a browser refuses). Both ask for ADAPTER_MAXIMA at the adapter's maxima instead: large tensors fit one
# buffer, and fused kernels bind many.
WEBGPU_DEFAULT_LIMITS = {
    "max-buffer-size": 268435456,
    "max-storage-buffer-binding-size": 134217728,
    "max-storage-buffers-per-shader-stage": 8,
    "max-compute-workgroup-storage-size": 16384,
    "max-compute-invocations-per-workgroup": 256,
    "max-compute-workgroup-size-x": 256,
    "max-compute-workgroup-size-y": 256,
    "max-compute-workgroup-size-z": 64,
    "max-compute-workgroups-per-dimension": 65535,
    "max-bind-groups": 4,
    "max-bindings-per-bind-group": 1000,
    "max-uniform-buffers-per-shader-stage": 12,
    "max-uniform-buffer-binding-size": 65536,
    "max-dynamic-uniform-buffers-per-pipeline-layout": 8,
    "max-dynamic-storage-buffers-per-pipeline-layout": 4,
    "min-uniform-buffer-offset-alignment": 256,
    "min-storage-buffer-offset-alignment": 256,
}
ADAPTER_MAXIMA = ("max-buffer-size", "max-storage-buffer-binding-size", "max-storage-buffers-per-shader-stage")
# The same, as a device's limits are named here (snake_case): for a limit the device does not report
DEFAULT_LIMITS = {name.replace("-", "_"): value for name, value in WEBGPU_DEFAULT_LIMITS.items()}


def required_limits(adapter_limits):
    """The limits to ask a device for (hyphenated WebGPU names, as wgpu-py takes them): ADAPTER_MAXIMA at the
    adapter's maxima, the rest WebGPU's defaults, none past what the adapter reports (an OpenGL adapter may report
    less than a browser's)."""
    wanted = {}
    for name, default in WEBGPU_DEFAULT_LIMITS.items():
        if name in ADAPTER_MAXIMA:
            wanted[name] = adapter_limits[name]
        else:
            better = max if name.startswith("min-") else min  # an alignment is better smaller, a maximum larger
            wanted[name] = better(default, adapter_limits.get(name, default))
    return wanted


def device_limit(device_limits, name):
    return device_limits.get(name, DEFAULT_LIMITS[name])


HELP = (
    "use a smaller batch or split the work into smaller tensors, or run it on the numpy backend "
    "(await pe.set_backend('numpy'))"
)


def human(nbytes):
    """A byte count for people: 8589934592 -> '8.0 GiB'."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


def _what(op, shape, dtype, nbytes):
    return f"{op}: a {dtype} tensor of shape {tuple(shape)} needs {nbytes} bytes ({human(nbytes)})"


class AllocationLimits:
    """The largest buffer this device can take, from its limits (snake_case WebGPU names)."""

    def __init__(self, device_limits):
        buffer = device_limit(device_limits, "max_buffer_size")
        binding = device_limit(device_limits, "max_storage_buffer_binding_size")
        # every buffer is bound whole as a storage buffer, so the smaller limit applies; sizes are whole words
        self.max_bytes = min(buffer, binding) // ITEMSIZE_ON_GPU * ITEMSIZE_ON_GPU
        self.limit_name = "maxBufferSize" if buffer < binding else "maxStorageBufferBindingSize"

    def fits(self, count):
        """Whether `count` elements fit one buffer and the shaders' i32 element counts."""
        return count * ITEMSIZE_ON_GPU <= self.max_bytes and count <= MAX_ELEMENTS

    def too_large(self, op, shape, dtype, count):
        nbytes = count * ITEMSIZE_ON_GPU
        if nbytes > self.max_bytes:
            limit = f"this GPU's largest buffer, {self.max_bytes} bytes ({human(self.max_bytes)}, {self.limit_name})"
        else:
            limit = f"the {MAX_ELEMENTS} elements that the shaders' 32-bit signed indices can address"
        return ResourceExhaustedError(f"{_what(op, shape, dtype, nbytes)}, over {limit}; nothing was allocated: {HELP}")


def over_budget(op, shape, dtype, nbytes, budget, in_use):
    return ResourceExhaustedError(
        f"{_what(op, shape, dtype, nbytes)}, but {in_use} bytes ({human(in_use)}) of GPU memory are in use and the "
        f"budget is {budget} bytes ({human(budget)}); nothing was allocated: dispose what you no longer need "
        "(pe.tidy, pe.dispose), raise the budget with pe.set_memory_budget, or " + HELP
    )


def out_of_memory(op, shape, dtype, nbytes, error):
    return ResourceExhaustedError(
        f"{_what(op, shape, dtype, nbytes)}, and the GPU is out of memory even after the buffer pool gave its unused "
        f"buffers back ({str(error).strip().splitlines()[-1]}); nothing was allocated: dispose what you no longer "
        "need, or " + HELP
    )
