"""A reader of PyTorch's legacy (non-zip) serialization, `torch.save(..., _use_new_zipfile_serialization=False)`,
with numpy and no torch.

The file is five pickles and then the raw storages:
  1. the magic number 0x1950a86a20f9469cfc6c, 2. the protocol version 1001, 3. sys info (byte order, sizes),
  4. the saved object, in which each tensor is `torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)`
     and each storage a persistent id ('storage', torch.<Type>Storage, key, location, numel, view),
  5. the list of storage keys, in the order their data follows;
then for each key an int64 element count and that many elements. Tensors are rebuilt after the storages are read,
with their strides (weights converted from TensorFlow are often stored channels-last). Only the globals a tensor
file needs are resolved, so a hostile file cannot run code.
"""

import collections
import io
import pickle
import struct
from pathlib import Path

import numpy as np

MAGIC = 0x1950A86A20F9469CFC6C
PROTOCOL = 1001

STORAGE_DTYPES = {
    "DoubleStorage": np.float64,
    "FloatStorage": np.float32,
    "HalfStorage": np.float16,
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}


class TorchLegacyError(ValueError):
    """The file is not a legacy torch file this reader can read (wrong format, corrupt, truncated, or unsafe)."""


class _StorageType:
    def __init__(self, name):
        self.name, self.dtype = name, np.dtype(STORAGE_DTYPES[name])


class _Storage:
    """A storage named in the pickle; its array arrives after the pickle (or is a slice of its root's)."""

    def __init__(self, key, dtype, numel, view=None):
        self.key, self.dtype, self.numel, self.view = key, dtype, numel, view
        self.array = None


class _Tensor:
    """A tensor waiting for its storage's data."""

    def __init__(self, storage, offset, size, stride):
        self.storage, self.offset, self.size, self.stride = storage, offset, tuple(size), tuple(stride)

    def build(self, where):
        flat = self.storage.array
        if any(n < 0 for n in self.size) or any(s < 0 for s in self.stride) or len(self.size) != len(self.stride):
            raise TorchLegacyError(f"{where}: tensor of size {self.size} has invalid strides {self.stride}")
        if 0 not in self.size:
            last = self.offset + sum((n - 1) * s for n, s in zip(self.size, self.stride))
            if self.offset < 0 or last >= flat.size:
                raise TorchLegacyError(
                    f"{where}: tensor of size {self.size}, stride {self.stride} at offset {self.offset} reaches "
                    f"element {last} of a storage of {flat.size}"
                )
        view = np.lib.stride_tricks.as_strided(
            flat[self.offset :],
            shape=self.size,
            strides=[s * flat.itemsize for s in self.stride],
            writeable=False,
        )
        return view.copy(order="C")  # the result owns its memory, laid out C-contiguous


def _rebuild_tensor_v2(storage, offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None):
    return _Tensor(storage, offset, size, stride)


def _rebuild_tensor(storage, offset, size, stride):
    return _Tensor(storage, offset, size, stride)


def _rebuild_parameter(data, requires_grad=False, backward_hooks=None):
    return data


_GLOBALS = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
}


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, storages, views):
        super().__init__(file)
        self.storages, self.views = storages, views

    def find_class(self, module, name):
        if module == "torch" and name in STORAGE_DTYPES:
            return _StorageType(name)
        if (module, name) in _GLOBALS:
            return _GLOBALS[module, name]
        raise TorchLegacyError(f"refusing to load {module}.{name}: only tensors, storages and dicts are read")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 6 and pid[0] == "storage"):
            raise TorchLegacyError(f"unknown persistent id {pid!r:.80}")
        _, storage_type, key, _location, numel, view = pid
        if not isinstance(storage_type, _StorageType):
            raise TorchLegacyError(f"storage {key!r} has unsupported type {storage_type!r}")
        root = self.storages.get(key)
        if root is None:
            root = self.storages[key] = _Storage(key, storage_type.dtype, int(numel))
        if view is None:
            return root
        view_key, offset, size = view  # an older file's storage view: a slice of the root storage
        self.views.append(_Storage(view_key, root.dtype, int(size), (root, int(offset))))
        return self.views[-1]


def _resolve(obj, where):
    if isinstance(obj, _Tensor):
        return obj.build(where)
    if isinstance(obj, dict):
        return type(obj)((k, _resolve(v, f"{where}[{k!r}]")) for k, v in obj.items())
    if isinstance(obj, list | tuple):
        return type(obj)(_resolve(v, f"{where}[{i}]") for i, v in enumerate(obj))
    return obj


def _read_exact(f, n, what):
    data = f.read(n)
    if len(data) != n:
        raise TorchLegacyError(f"file is truncated: {what} needs {n} bytes, only {len(data)} left")
    return data


def loads(data: bytes):
    """The object saved in a legacy torch file, with every tensor as a numpy array."""
    if data[:4] == b"PK\x03\x04":
        raise TorchLegacyError("this is torch's zip format (torch >= 1.6 default); only the legacy format is read")
    f = io.BytesIO(data)
    storages: dict[str, _Storage] = {}
    views: list[_Storage] = []
    try:
        header = [_Unpickler(f, storages, views).load() for _ in range(3)]
        if header[0] != MAGIC:
            raise TorchLegacyError(f"not a legacy torch file: magic number {header[0]!r:.40} is not {MAGIC:#x}")
        if header[1] != PROTOCOL:
            raise TorchLegacyError(f"unsupported legacy protocol version {header[1]!r}, expected {PROTOCOL}")
        order = "<" if header[2].get("little_endian", True) else ">"
        result = _Unpickler(f, storages, views).load()
        keys = _Unpickler(f, storages, views).load()
    except TorchLegacyError:
        raise
    except (pickle.UnpicklingError, EOFError, AttributeError, ValueError, TypeError, KeyError) as e:
        raise TorchLegacyError(f"not a readable legacy torch file: {type(e).__name__}: {e}") from None
    if set(keys) != set(storages):
        raise TorchLegacyError(f"storage list names {len(keys)} storages, the object uses {len(storages)}")
    for key in keys:
        storage = storages[key]
        (numel,) = struct.unpack(order + "q", _read_exact(f, 8, f"the size of storage {key}"))
        if numel != storage.numel:
            raise TorchLegacyError(f"storage {key} holds {numel} elements, the object says {storage.numel}")
        raw = _read_exact(f, numel * storage.dtype.itemsize, f"storage {key} ({numel} x {storage.dtype})")
        storage.array = np.frombuffer(raw, storage.dtype.newbyteorder(order)).astype(storage.dtype, copy=False)
    for storage in views:
        root, offset = storage.view
        if offset < 0 or offset + storage.numel > root.numel:
            raise TorchLegacyError(f"storage view {storage.key} lies outside storage {root.key}")
        storage.array = root.array[offset : offset + storage.numel]
    if f.read(1):
        raise TorchLegacyError("unexpected data after the last storage")
    return _resolve(result, "object")


def load(path: str | Path):
    """Reads a legacy torch file (e.g. a .pth state_dict) from disk; see loads."""
    return loads(Path(path).read_bytes())
