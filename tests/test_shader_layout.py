"""The shader layer (backends/webgpu/shader_layout.py): named uniforms laid out and packed as WGSL reads them,
named bindings, the errors for a field missing, undeclared or out of range, and only the functions a shader
calls."""

import asyncio
import struct

import numpy as np
import pytest

import py_engine as pe
from py_engine.backends.webgpu.kernels.math import HELPERS
from py_engine.backends.webgpu.shader_layout import Uniforms, compose_linear_shader
from py_engine.backends.webgpu.wgsl import drop_unused_functions, linear_groups
from py_engine.engine import ENGINE


def words(layout, values):
    block = bytearray(256)
    nbytes = layout.pack_into(block, 0, values)
    return nbytes, block


def test_fields_sit_at_wgsl_uniform_offsets_and_arrays_are_zero_filled():
    layout = Uniforms("T", {"count": "u32", "bias": "i32", "scale": "f32", "shape": "u32[6]", "last": "i32"})
    # count, bias, scale at words 0-2; the array aligns to 16 bytes (word 4) and takes two vec4s; last at 12
    assert [(f.name, f.offset) for f in layout.fields] == [
        ("count", 0),
        ("bias", 1),
        ("scale", 2),
        ("shape", 4),
        ("last", 12),
    ]
    nbytes, block = words(layout, {"count": 7, "bias": -3, "scale": 0.5, "shape": (2, 3), "last": -1})
    assert nbytes == 64  # the struct's size: rounded up to its 16-byte alignment
    assert struct.unpack_from("<IifI", block) == (7, -3, 0.5, 0)
    assert struct.unpack_from("<8I", block, 16) == (2, 3, 0, 0, 0, 0, 0, 0)
    assert struct.unpack_from("<i", block, 48) == (-1,)
    assert "fn u_shape(k: u32) -> u32 { return u.shape[k >> 2u][k & 3u]; }" in layout.declare()


@pytest.mark.parametrize(
    ("values", "error", "message"),
    [
        ({"count": 1}, ValueError, "T: missing uniform 'shape'"),
        ({"count": 1, "shape": [], "rank": 2}, ValueError, "T: uniform 'rank' is not declared"),
        ({"count": -1, "shape": []}, ValueError, "T: uniform 'count' = -1 is out of the u32 range"),
        ({"count": 1.5, "shape": []}, TypeError, "T: uniform 'count' is u32, got 1.5 (an integer)"),
        ({"count": 1, "shape": [1] * 9}, ValueError, "T: uniform 'shape' holds 8 values, got 9"),
        ({"count": 1, "shape": [2**31]}, ValueError, "T: uniform 'shape' = 2147483648 is out of the i32 range"),
        ([1, []], TypeError, "T: uniforms must be a dict"),
    ],
)
def test_a_wrong_value_names_the_shader_and_the_field(values, error, message):
    layout = Uniforms("T", {"count": "u32", "shape": "i32[8]"})
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        words(layout, values)


def test_a_layout_over_the_256_byte_block_is_refused_when_declared():
    with pytest.raises(ValueError, match=r"T: the uniforms take 272 bytes .* a dispatch has 256"):
        Uniforms("T", {"count": "u32", "a": "u32[32]", "b": "u32[32]"})
    with pytest.raises(ValueError, match=r"T: uniform 'x' has type 'u64'"):
        Uniforms("T", {"x": "u64"})


@pytest.fixture
def gpu():
    assert asyncio.run(pe.set_backend("webgpu")), ENGINE.fallback_reason
    return ENGINE.backend


def test_the_gpu_reads_each_field_where_it_was_packed(gpu):
    # every field copied into the output by the shader: the WGSL struct and the packing agree on the layout
    body = """  let k = i % 4u;
  switch (i / 4u) {
    case 0u: { out[i] = f32(u.count) + 0.0 * f32(k); }
    case 1u: { out[i] = f32(u.bias); }
    case 2u: { out[i] = u.scale; }
    default: { out[i] = f32(u_shape(i - 12u)) + f32(u.last) * 1000.0; }
  }"""
    shader = compose_linear_shader(
        "TestLayout",
        body,
        outputs=[("out", "float32")],
        uniforms={"bias": "i32", "scale": "f32", "shape": "i32[6]", "last": "i32"},
    )
    out = gpu.empty((18,), "float32")
    values = {"count": 18, "bias": -5, "scale": 0.25, "shape": [1, -2, 3, -4, 5, -6], "last": 2}
    gpu.dispatch(shader, [out], values, linear_groups(18))
    got = gpu.read(out)
    gpu.free(out)
    assert got[:4].tolist() == [18] * 4
    assert got[4:8].tolist() == [-5] * 4
    assert got[8:12].tolist() == [0.25] * 4
    assert got[12:].tolist() == [2001, 1998, 2003, 1996, 2005, 1994]


def test_a_dispatch_of_no_workgroups_records_nothing(gpu):
    shader = compose_linear_shader("TestNothing", "  out[i] = 1.0;", outputs=[("out", "float32")])
    before = gpu.stats()["dispatches"], gpu.stats()["pipeline_compiles"]
    out = gpu.empty((0,), "float32")
    gpu.dispatch(shader, [out], {"count": 0}, linear_groups(0))
    gpu.flush()
    gpu.free(out)
    assert (gpu.stats()["dispatches"], gpu.stats()["pipeline_compiles"]) == before


def test_an_empty_output_dispatches_nothing_on_any_kernel(gpu):
    before = gpu.stats()["dispatches"]
    x, w = pe.tensor(np.zeros((0, 3), np.float32)), pe.tensor(np.zeros((3, 0), np.float32))
    images, filters = pe.tensor(np.zeros((0, 1, 1, 3), np.float32)), pe.tensor(np.ones((1, 1, 3, 2), np.float32))
    outs = [
        pe.exp(x),
        x + x,
        pe.matmul(x, w),
        pe.transpose(x),
        pe.conv2d(images, filters),
    ]
    assert [o.shape for o in outs] == [(0, 3), (0, 3), (0, 0), (3, 0), (0, 1, 1, 2)]
    assert gpu.stats()["dispatches"] == before
    # outputs that are not empty: a product and a reduction over nothing still write their zeros
    zeros = [pe.matmul(w, x), pe.sum(x, axis=0)]
    assert [z.numpy().tolist() for z in zeros] == [[[0.0] * 3] * 3, [0.0] * 3]
    assert gpu.stats()["dispatches"] == before + 2
    pe.dispose([x, w, images, filters, *outs, *zeros])


@pytest.mark.parametrize("on_cpu", [True, False], ids=["register-blocked", "tiled"])
@pytest.mark.parametrize("channels", [4, 3], ids=["four-lanes", "one-lane"])
def test_fused_convolutions_store_through_their_epilogue_on_every_template(gpu, rng, on_cpu, channels):
    # the GEMM variants and both depthwise bodies get the bias + activation as a parameter, bound after the filter
    saved, gpu.on_cpu = gpu.on_cpu, on_cpu
    try:
        x = rng.standard_normal((2, 5, 6, channels)).astype(np.float32)
        w = rng.standard_normal((3, 3, channels, 5)).astype(np.float32)
        d = rng.standard_normal((3, 3, channels, 1)).astype(np.float32)
        bias, dbias = rng.standard_normal(5).astype(np.float32), rng.standard_normal(channels).astype(np.float32)
        tensors = [pe.tensor(a) for a in (x, w, d, bias, dbias)]
        tx, tw, td, tb, tdb = tensors
        pairs = [
            (pe.fused_conv2d(tx, tw, tb, "relu", padding="same"), pe.conv2d(tx, tw, padding="same") + tb),
            (pe.fused_depthwise_conv2d(tx, td, tdb, "relu"), pe.depthwise_conv2d(tx, td) + tdb),
        ]
        for fused, plain in pairs:
            np.testing.assert_allclose(fused.numpy(), np.maximum(plain.numpy(), 0), rtol=1e-5, atol=1e-5)
        pe.dispose([*tensors, *(t for pair in pairs for t in pair)])
    finally:
        gpu.on_cpu = saved


def test_a_program_keeps_the_functions_its_main_calls_and_drops_the_rest_with_their_comments():
    source = compose_linear_shader(
        "Pow:test", "  out[i] = pow_f(x[i], 2.0);", [("x", "float32")], [("out", "float32")], {}, HELPERS
    ).source
    defined = {line.split("(")[0][3:] for line in source.splitlines() if line.startswith("fn ")}
    # pow_f and what it calls, directly (is_nan, nan, is_inf) or through them (f32_from_bits); main
    assert defined == {"pow_f", "is_nan", "nan", "is_inf", "f32_from_bits", "main"}
    assert "numpy's (C99's) pow" in source  # a kept function keeps its comment
    assert "divmod" not in source and "log_safe" not in source  # a dropped one loses it too


def test_dropping_unused_functions_counts_no_brace_in_a_comment_and_leaves_source_without_main_as_it_is():
    source = "fn a() -> f32 { return 1.0; }  // a { b\nfn b() -> f32 { return a(); }\nfn c() {}\nfn main() { b(); }\n"
    assert (
        drop_unused_functions(source)
        == "fn a() -> f32 { return 1.0; }  // a { b\nfn b() -> f32 { return a(); }\nfn main() { b(); }\n"
    )
    assert drop_unused_functions("fn helper() {}\n", entry="main") == "fn helper() {}\n"


def test_a_pipeline_the_device_has_is_dispatched_without_making_its_source(gpu):
    # the page compiles the classifier's pipelines while it boots: its first classification need not write their WGSL
    def double():
        return compose_linear_shader("TestDouble", "  out[i] = f32(i) * 2.0;", outputs=[("out", "float32")])

    first, again = double(), double()
    for shader in (first, again):
        out = gpu.empty((4,), "float32")
        gpu.dispatch(shader, [out], {"count": 4}, linear_groups(4))
        assert gpu.read(out).tolist() == [0.0, 2.0, 4.0, 6.0]
        gpu.free(out)
    assert "fn main" in first.source and callable(again._source)  # the second was never compiled, nor written
