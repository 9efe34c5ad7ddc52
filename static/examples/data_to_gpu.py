# data_to_gpu: hand a tensor's GPU buffer to other WebGPU code without reading it back. The result holds the
# browser's GPUBuffer; the values stay on the GPU, and release() gives the buffer back to the engine.
# It needs the webgpu backend: elsewhere a tensor's values live in Python's memory and there is no GPUBuffer to hand.
if pe.get_backend() != "webgpu":
    result = (
        f"data_to_gpu needs the webgpu backend; this page runs on {pe.get_backend()}: pick webgpu in the Backend menu"
    )
else:
    x = pe.arange(0, 1024, dtype="float32") * 2.0
    readbacks = pe.stats().get("readbacks")
    gpu = x.data_to_gpu()
    buffer = gpu.buffer  # a GPUBuffer: pass it to your own WebGPU code (a bind group, a copy, a canvas texture)
    print(f"GPUBuffer of {buffer.size} bytes for a {gpu.dtype} tensor of shape {gpu.shape}")
    result = {
        "buffer_bytes": int(buffer.size),
        "shape": list(gpu.shape),
        "dtype": gpu.dtype,
        "readbacks": pe.stats().get("readbacks") - readbacks,
        "tensors_with_the_handle": pe.memory().num_tensors,
    }
    gpu.release()  # the handle kept the buffer alive
    x.dispose()
    result["tensors_after_release"] = pe.memory().num_tensors
result
