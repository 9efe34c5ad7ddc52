"""TF.js's selu constants: one definition for the kernels of every backend and for selu's gradient."""

SELU_SCALE, SELU_SCALE_ALPHA = 1.0507009873554805, 1.7580993408473768  # used as float32 operands
