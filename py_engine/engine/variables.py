"""Variables: named tensors that no scope releases, whose value `assign` replaces."""

import itertools

from .. import dtypes
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor, Variable
from .host import host_array


class Variables:
    def __init__(self):
        super().__init__()
        self.variables = {}
        self._var_ids = itertools.count(1)

    def as_tensor(self, value, dtype=None, op="op"):
        """(tensor, is_temporary). Tensors pass through (cast if `dtype` differs); other values are converted."""
        if isinstance(value, Tensor):
            if dtype is None or dtypes.normalize(dtype, op) == value.dtype:
                return value, False
            return self.run_kernel("Cast", (value,), {"dtype": dtypes.normalize(dtype, op)}), True
        arr, dt = host_array(value, dtype, op)
        return self.from_numpy(arr, dt), True

    def unused_variable_name(self, name):
        """`name` if no variable has it, else the first free one of name_1, name_2, ... (as Keras names weights)."""
        if name not in self.variables:
            return name
        k = 1
        while f"{name}_{k}" in self.variables:
            k += 1
        return f"{name}_{k}"

    def variable(self, initial, trainable=True, name=None, dtype=None):
        if name is None:
            name = f"Variable_{next(self._var_ids)}"
            while name in self.variables:
                name = f"Variable_{next(self._var_ids)}"
        elif name in self.variables:
            raise ValueError(f"a variable named {name!r} already exists; choose another name or dispose it first")
        value, temporary = self.as_tensor(initial, dtype, "variable")
        v = self.make_tensor(value._live_buffer(), value.shape, value.dtype, Variable)
        v.var_name, v.trainable = name, bool(trainable)
        self.variables[name] = v
        if temporary:
            self.dispose_tensor(value)
        return v

    def assign(self, v, value):
        v._live_buffer()
        new, temporary = self.as_tensor(value, None if isinstance(value, Tensor) else v.dtype, "assign")
        try:
            if new.shape != v.shape:
                raise ShapeError(f"assign: {v.var_name} has shape {v.shape}, the new value has shape {new.shape}")
            if new.dtype != v.dtype:
                raise DTypeError(f"assign: {v.var_name} is {v.dtype}, the new value is {new.dtype}; cast it first")
            buf, old = new._live_buffer(), v._buf
            # a captured program rewrites v's buffer on every replay: the value goes into it, so the program goes on
            # (unless another tensor shares the buffer, which keeps its value)
            in_place = buf is not old and old.refs == 1 and buf.backend is old.backend
            if in_place and self.rewritten_by_a_program(old) and old.backend.overwrite(old.handle, buf.handle):
                old.writes += 1  # programs that keep a copy of the old value record again
                return
            buf.refs += 1
            v._buf = buf
            self.unref(old)
        finally:
            if temporary:
                self.dispose_tensor(new)

    def dispose_variables(self):
        for v in list(self.variables.values()):
            self.dispose_tensor(v)
