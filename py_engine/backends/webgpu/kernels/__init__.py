"""WGSL kernels, one module per family; importing them registers them for the webgpu backend."""

from ....kernel_registry import registered_on
from . import creation, fused, image, indexing, linalg, math, nn, recurrent, reduce, sequence, shape  # noqa: F401

# Each of these is a function of its inputs' shapes and dtypes and its attributes, so the backend may replay a
# logged run of it (dispatch_plans.py). Users' kernels, registered later, are not in the set.
BUILT_IN = frozenset(registered_on("webgpu"))
TAKES_HOST_SCALARS = math.TAKES_HOST_SCALARS | shape.TAKES_HOST_SCALARS
