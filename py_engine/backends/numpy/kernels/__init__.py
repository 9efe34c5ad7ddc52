"""The numpy kernels, one module per family; importing them registers them for the numpy backend."""

from . import creation, fused, image, indexing, linalg, math, nn, recurrent, reduce, sequence, shape  # noqa: F401
