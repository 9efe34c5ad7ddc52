"""What one allocation may take on a WebGPU device, and the errors that say why it cannot.

The backend checks every allocation here before it takes anything from the buffer pool, so a refused
allocation leaves nothing behind and the error names the op that asked. Unchecked, an over-limit
buffer fails where nobody asked for it: wgpu-py refuses it at the first bind group, and the browser
hands back an invalid buffer whose error poisons the command buffer of some later submit.
"""

from ...errors import ResourceExhaustedError
from .wgsl import ITEMSIZE_ON_GPU

MAX_ELEMENTS = 2**31 - 1  # element counts reach the shaders as i32 uniform words
# WebGPU's defaults, which every device supports: used for a limit the device does not report
DEFAULT_LIMITS = {
    "max_buffer_size": 268435456,
    "max_storage_buffer_binding_size": 134217728,
    "max_compute_workgroups_per_dimension": 65535,
}


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
