"""The gradient of every op's kernel, registered by kernel name (py_engine.kernel_registry.register_gradient).

They live apart from the ops because a gradient is written with other ops (a sum's gradient broadcasts, a
broadcast's gradient sums): the ops import each other only downwards, and the gradients sit above them all.
"""

from . import fused, image, indexing, linalg, math, nn, recurrent, reduce, sequence, shape  # noqa: F401 - each registers
