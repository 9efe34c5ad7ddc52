"""Tensor and Variable: handles to refcounted data buffers owned by a backend.

A tensor's memory is released only by `dispose`, `tidy` or a scope, never by Python's garbage
collector: GPU memory must be freed at a known moment, as in TensorFlow.js. Operators and most
methods (`x + y`, `x.sum()`) are attached by `py_engine.ops`.
"""

import numpy as np

from .errors import DisposedTensorError


class Tensor:
    __slots__ = ("_buf", "_created_at", "_disposed_at", "_scope", "dtype", "id", "kept", "shape")
    __array_ufunc__ = None  # numpy must hand `ndarray + tensor` to Tensor.__radd__
    __hash__ = None  # `==` makes a tensor, as in numpy
    _engine = None  # the Engine that makes tensors; set by py_engine.engine, which imports this module

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def rank(self):
        return len(self.shape)

    ndim = rank

    @property
    def is_disposed(self):
        return self._buf is None

    @property
    def name(self):
        return f"Tensor#{self.id}"

    def _live_buffer(self):
        buf = self._buf
        if buf is None:
            raise DisposedTensorError(self._disposed_message())
        return buf

    def _disposed_message(self):
        msg = f"{self.name} (shape {self.shape}, {self.dtype}) was disposed and cannot be used"
        if self._created_at or self._disposed_at:
            msg += f"; created at {self._created_at}, disposed at {self._disposed_at}"
        else:
            msg += "; call pe.set_debug(True) to see where it was created and disposed"
        return msg + ". Keep it alive with pe.keep(t) or by returning it from tidy."

    def data_sync(self):
        """A flat numpy copy of the values; blocks until the backend has them."""
        return self._engine.read(self).reshape(-1)

    async def data(self):
        """A flat numpy copy of the values, without blocking the event loop."""
        return (await self._engine.read_async(self)).reshape(-1)

    def numpy(self):
        return self._engine.read(self)

    def data_to_gpu(self):
        """The GPU buffer holding the values (no readback); call .release() on the result when done."""
        return self._engine.data_to_gpu(self)

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def tolist(self):
        return self.numpy().tolist()

    def item(self):
        if self.size != 1:
            raise ValueError(f"item(): {self.name} has shape {self.shape}; only a tensor of one element has an item")
        return self.numpy().reshape(()).item()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        if self.size != 1:
            raise ValueError(
                f"the truth value of {self.name} with shape {self.shape} is ambiguous; use .any() or .all()"
            )
        return bool(self.item())

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a scalar tensor")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a scalar tensor")
        return (self[i] for i in range(self.shape[0]))

    def dispose(self):
        self._engine.dispose_tensor(self)

    def __repr__(self):
        if self._buf is None:
            return f"Tensor(<disposed>, shape={self.shape}, dtype={self.dtype}, id={self.id})"
        body = np.array2string(self.numpy(), separator=", ", threshold=64, edgeitems=3, prefix="Tensor(")
        return f"Tensor({body}, shape={self.shape}, dtype={self.dtype}, id={self.id})"


class Variable(Tensor):
    """A named tensor whose value can be replaced; no tidy or scope ever releases it."""

    __slots__ = ("trainable", "var_name")

    @property
    def name(self):
        return self.var_name

    def assign(self, value):
        self._engine.assign(self, value)
        return self

    def __repr__(self):
        return f"Variable({self.var_name!r}, trainable={self.trainable}) " + super().__repr__()
