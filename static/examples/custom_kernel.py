# A custom WGSL kernel with its gradient (docs/custom_kernels.md): swish(x) = x * sigmoid(x) as a compute shader
# for webgpu, a numpy version for the CPU, and one gradient written with ops for both.
SWISH_WGSL = """
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  let i = id.x;
  if (i >= params.n) { return; }
  out[i] = x[i] / (1.0 + exp(-x[i]));
}
"""


def swish_dispatch(x):  # the output's shape and dtype, the workgroups (64 threads each) and the uniforms
    return pe.Dispatch(outputs={"out": (x.shape, "float32")}, workgroups=-(-x.size // 64), uniforms={"n": x.size})


def swish_grad(dy, inputs, outputs, attrs):  # d/dx x*s(x) = s + x*s*(1-s)
    (x,) = inputs
    s = pe.sigmoid(x)
    return (dy * (s + x * s * (1.0 - s)),)


program = pe.Program("ExampleSwish", SWISH_WGSL, inputs=["x"], uniforms={"n": "u32"}, dispatch=swish_dispatch)
pe.register_kernel("ExampleSwish", "webgpu", program, override=True)  # override: the example may run twice
pe.register_kernel("ExampleSwish", "numpy", lambda x: (x / (1 + np.exp(-x))).astype(np.float32), override=True)
pe.register_gradient("ExampleSwish", swish_grad)

x = pe.tensor(np.linspace(-4, 4, 9, dtype=np.float32))
with pe.scope():
    y = pe.run_kernel("ExampleSwish", [x])
    dy_dx = pe.grad(lambda t: pe.run_kernel("ExampleSwish", [t]).sum())(x)
    values, slopes = await y.data(), await dy_dx.data()
expected = x.numpy() / (1 + np.exp(-x.numpy()))
pe.browser.plot(np.linspace(-4, 4, 9), {"swish": values, "gradient": slopes}, title="swish and its gradient")
result = {
    "backend": pe.get_backend(),
    "max_error": float(np.abs(values - expected).max()),
    "slopes": slopes.round(3).tolist(),
}
result
