"""The numbers the SIMD kernels' C and their Python wrappers agree on: which epilogue, which elementwise op, how many
elements a fused program works on at a time. This table is the one source: scripts/build_wasm_kernels.py generates
kernels/op_codes.h from it for the C (tests/test_wasm_build.py fails while the header is stale).

In C each code is <PREFIX>_<NAME> (ACT_RELU6, BINARY_REAL_DIV, BINARY_RELU_GRAD, UNARY_SIGMOID, FUSED_SQRT)."""

# a GEMM's or a convolution's epilogue, applied to each output after its sum (ACT_); a hard-swish's is its scale's
# float32 bits (kernels/simd.h's activate: a positive scale's bits exceed every code here)
ACTIVATIONS = {"linear": 0, "relu": 1, "relu6": 2}
# binary(): out = a op b (BINARY_)
BINARY = {"Add": 0, "Sub": 1, "Mul": 2, "RealDiv": 3, "Maximum": 4, "Minimum": 5, "SquaredDifference": 8}
# binary_i32(): out = a op b on int32 arrays, as numpy's (BINARY_I32_)
BINARY_I32 = {"Add": 0, "Sub": 1, "Mul": 2, "FloorDiv": 3, "Mod": 4}
# binary() too: an activation's gradient from (dy, y) (BINARY_<activation>_GRAD)
ACTIVATION_GRAD = {"relu": 6, "relu6": 7}
# unary(): out = op x (UNARY_)
UNARY = {"Relu": 0, "Relu6": 1, "Neg": 2, "Abs": 3, "Sqrt": 4, "Square": 5, "Sigmoid": 6}
# fused_elementwise()'s steps (FUSED_)
FUSED = {
    "Add": 0,
    "Sub": 1,
    "Mul": 2,
    "RealDiv": 3,
    "Maximum": 4,
    "Minimum": 5,
    "Neg": 6,
    "Sqrt": 7,
    "Square": 8,
    "Abs": 9,
    "Relu": 10,
    "Relu6": 11,
}
FUSED_CHUNK = 256  # fused_elementwise() works this many elements at a time, each value's CHUNK floats in its scratch

# what the header declares: (C prefix, table, C suffix)
ENUMS = (
    ("ACT", ACTIVATIONS, ""),
    ("BINARY", BINARY, ""),
    ("BINARY", ACTIVATION_GRAD, "_GRAD"),
    ("BINARY_I32", BINARY_I32, ""),
    ("UNARY", UNARY, ""),
    ("FUSED", FUSED, ""),
)
CONSTANTS = {"FUSED_CHUNK": FUSED_CHUNK}
