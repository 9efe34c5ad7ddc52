"""The weightsManifest of the TF.js layers format, and the weight shards it describes.

A manifest group is {"paths": [...], "weights": [{"name", "shape", "dtype"}, ...]}: the weights' values,
little-endian (a weight with a "quantization" {dtype: uint8 | uint16 | float16, min, scale} stored in that dtype,
as TF.js's converter writes them and TF.js's loader reads them), concatenated in manifest order and cut into shards of at most `max_shard_bytes` at byte
boundaries (a weight may span two shards), exactly as TF.js writes them. This engine adds "sha256" and
"sizes" (one per path), which TF.js ignores, and checks them when it loads.
"""

import asyncio
import hashlib
import math

import numpy as np

from .. import dtypes
from .errors import ModelLoadError
from .fetch import sha256_of

DEFAULT_SHARD_BYTES = 4 * 1024 * 1024
DTYPES = {"float32": np.dtype("<f4"), "int32": np.dtype("<i4"), "bool": np.dtype(np.bool_)}
QUANTIZED = {"uint8": np.dtype(np.uint8), "uint16": np.dtype("<u2"), "float16": np.dtype("<f2")}


def _manifest_dtype(name, array):
    """The manifest dtype an array is stored as: float32, or int32 (a bool tensor's too); another dtype would
    lose values silently, so it is refused."""
    if array.dtype == np.float32:
        return "float32"
    if array.dtype in (np.int32, np.bool_):
        return "int32"
    raise ValueError(f"weight {name!r} has dtype {array.dtype}; TF.js weights here are float32 or int32")


def pack(named_arrays, max_shard_bytes=DEFAULT_SHARD_BYTES):
    """(weightsManifest, shard bytes in path order) for [(name, array)]; no weights make an empty manifest."""
    if not named_arrays:
        return [], []
    if len({name for name, _ in named_arrays}) != len(named_arrays):
        raise ValueError("weight names must be unique")  # the loader refuses a manifest naming one twice
    specs, parts = [], []
    for name, array in named_arrays:
        array = np.asarray(array)
        dtype = _manifest_dtype(name, array)
        specs.append({"name": name, "shape": list(array.shape), "dtype": dtype})
        parts.append(np.ascontiguousarray(array, DTYPES[dtype]).tobytes())
    data = b"".join(parts)
    count = max(1, math.ceil(len(data) / max_shard_bytes))
    shards = [data[k * max_shard_bytes : (k + 1) * max_shard_bytes] for k in range(count)]
    group = {
        "paths": [f"group1-shard{k + 1}of{count}.bin" for k in range(count)],
        "weights": specs,
        "sha256": [hashlib.sha256(s).hexdigest() for s in shards],
        "sizes": [len(s) for s in shards],
    }
    return [group], shards


def check_group(group, number):
    """Refuse a manifest group this loader cannot read, naming the weight; returns the bytes its weights need."""
    if (
        not isinstance(group, dict)
        or not isinstance(group.get("paths"), list)
        or not isinstance(group.get("weights"), list)
    ):
        raise ModelLoadError(f"weightsManifest group {number} needs a list of 'paths' and a list of 'weights'")
    for path in group["paths"]:
        if not isinstance(path, str) or "://" in path or path.startswith(("/", "\\")):
            raise ModelLoadError(f"weightsManifest group {number}: shard path {path!r} must be relative to model.json")
    for key in ("sha256", "sizes"):
        if key in group and len(group[key]) != len(group["paths"]):
            raise ModelLoadError(f"weightsManifest group {number}: '{key}' must have one entry per path")
    total = 0
    for spec in group["weights"]:
        name = spec.get("name")
        if spec.get("dtype", "float32") not in DTYPES:
            raise ModelLoadError(f"weight {name!r} has dtype {spec.get('dtype')!r}; supported: {', '.join(DTYPES)}")
        shape = spec.get("shape")
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise ModelLoadError(f"weight {name!r} has an invalid shape {shape!r} in the manifest")
        total += math.prod(shape) * _stored_dtype(spec).itemsize
    return total


def _stored_dtype(spec):
    """The dtype a weight's bytes are in: its own, or its quantization's (checked as TF.js's decodeWeight does)."""
    name, dtype, quantization = spec.get("name"), spec.get("dtype", "float32"), spec.get("quantization")
    if quantization is None:
        return DTYPES[dtype]
    stored = quantization.get("dtype") if isinstance(quantization, dict) else None
    if stored not in QUANTIZED:
        raise ModelLoadError(f"weight {name!r} has quantization dtype {stored!r}; supported: {', '.join(QUANTIZED)}")
    if stored == "float16" and dtype != "float32":
        raise ModelLoadError(f"weight {name!r} is quantized to float16, which only a float32 weight can be")
    if stored != "float16":
        if dtype == "bool":
            raise ModelLoadError(f"weight {name!r} is a bool quantized to {stored}: TF.js quantizes float32 and int32")
        if not all(isinstance(quantization.get(k), (int, float)) for k in ("min", "scale")):
            raise ModelLoadError(f"weight {name!r} is quantized to {stored} without numbers 'min' and 'scale'")
    return QUANTIZED[stored]


def verify(group, shards, need, digests=None):
    """Refuse shards that do not hold what the manifest says, naming the shard: a size differing from "sizes",
    bytes that do not add up to what the weights need (the shard whose sha256 fails is the truncated one), or
    a sha256 differing from "sha256". digests: the shards' sha256 (hex) if already computed."""
    paths, sizes = group["paths"], group.get("sizes")
    for path, data, size in zip(paths, shards, sizes or [None] * len(paths)):
        if size is not None and len(data) != size:
            state = "truncated" if len(data) < size else "too long"
            raise ModelLoadError(f"shard {path!r} is {state}: {len(data)} bytes, the manifest says {size}")
    if "sha256" not in group:
        digests = []
    elif digests is None:
        digests = [hashlib.sha256(data).hexdigest() for data in shards]
    bad = [k for k, digest in enumerate(digests) if digest != group["sha256"][k]]
    have = sum(map(len, shards))
    if have != need:
        culprits = bad or range(len(paths))
        listed = ", ".join(repr(paths[k]) for k in culprits)
        state = "truncated" if have < need else "too long"
        raise ModelLoadError(
            f"{'shard' if len(culprits) == 1 else 'shards'} {listed} {'is' if len(culprits) == 1 else 'are'} {state}: "
            f"the group's {len(paths)} shard(s) hold {have} bytes, the weights listed with them need {need}"
        )
    if bad:
        k = bad[0]
        raise ModelLoadError(
            f"shard {paths[k]!r} is corrupt: its sha256 is {digests[k]}, the manifest says {group['sha256'][k]}"
        )


def unpack(group, shards):
    """{weight name: array} from a group's (verified) shards: each weight copied once from the shard(s) holding it
    (one copy for 18.8 MB of weights, not a joined copy of every shard and then another), then dequantized.

    A group with quantized weights, whose values are converted anyway, has its shards still in the browser's memory
    copied into Python whole, each in one call: its weights are then converted from there (movenet's 180 weights:
    one call into JavaScript rather than 180, 4 of its 9 ms). float16 weights that follow one another in a shard are
    widened together, in one call into the wasm module where it runs, each weight a view of its part of the result
    (movenet's 149 in 9 calls, centernet's 227 in 16), the others dequantized in one numpy expression each."""
    if any(spec.get("quantization") is not None for spec in group["weights"]):
        shards = [_whole(shard) if hasattr(shard, "copy_into") else shard for shard in shards]
    arrays, halves, k, at = {}, _Halves(), 0, 0  # at: the offset in shard k
    for spec in group["weights"]:
        stored = _stored_dtype(spec)
        count = math.prod(spec["shape"])
        size = count * stored.itemsize
        while size and at == len(shards[k]):
            k, at = k + 1, 0
        quantized = size and spec.get("quantization") is not None
        in_python = quantized and not hasattr(shards[k], "copy_into") and at + size <= len(shards[k])
        if in_python and stored == QUANTIZED["float16"]:
            halves.add(arrays, shards[k], at, spec["name"], spec["shape"], count)
            at += size
            continue
        halves.widen(arrays)
        if in_python:
            out = np.frombuffer(shards[k], stored, count, at).reshape(spec["shape"])  # converted below, not kept
            at += size
        else:
            out = np.empty(spec["shape"], stored)
            dest, filled = out.reshape(-1).view(np.uint8), 0
            while filled < dest.size:  # a weight may span shards
                while at == len(shards[k]):
                    k, at = k + 1, 0
                n = min(dest.size - filled, len(shards[k]) - at)
                _copy(shards[k], at, dest[filled : filled + n])
                filled, at = filled + n, at + n
        arrays[spec["name"]] = _dequantized(spec, out)
    halves.widen(arrays)
    return arrays


class _Halves:
    """float16 weights lying one after the other in a shard, widened together once the run ends."""

    def __init__(self):
        self.shard, self.start, self.end, self.weights = None, 0, 0, []

    def add(self, arrays, shard, at, name, shape, count):
        if self.weights and (shard is not self.shard or at != self.end):
            self.widen(arrays)
        if not self.weights:
            self.shard, self.start, self.end = shard, at, at
        self.weights.append((name, shape, count))
        self.end = at + 2 * count
        arrays[name] = None  # its place in the manifest's order

    def widen(self, arrays):
        if not self.weights:
            return
        values = dtypes.widen_float16(np.frombuffer(self.shard, "<f2", (self.end - self.start) // 2, self.start))
        offset = 0
        for name, shape, count in self.weights:
            arrays[name] = values[offset : offset + count].reshape(shape)
            offset += count
        self.weights = []


def _whole(shard):
    """A shard in the browser's memory as a numpy array of its bytes: one copy."""
    data = np.empty(len(shard), np.uint8)
    shard.copy_into(data, 0)
    return data


def _dequantized(spec, stored):
    """A weight's values from its stored array, as TF.js's decodeWeight computes them: v * scale + min (in double,
    rounded half up for int32), float16 widened."""
    quantization, dtype = spec.get("quantization"), DTYPES[spec.get("dtype", "float32")]
    if quantization is None:
        return stored
    if quantization["dtype"] == "float16":
        return dtypes.widen_float16(stored)
    values = stored * float(quantization["scale"]) + float(quantization["min"])
    # an array even for a scalar weight (numpy's arithmetic on a 0-d array gives a scalar)
    return np.asarray((np.floor(values + 0.5) if dtype == DTYPES["int32"] else values).astype(dtype))


def _copy(shard, start, dest):
    """Bytes [start, start + dest.size) of a shard (bytes, or a body still in the browser's memory) into `dest`."""
    if hasattr(shard, "copy_into"):
        shard.copy_into(dest, start)
    else:
        dest[:] = np.frombuffer(shard, np.uint8, dest.size, start)


def zeros(group):
    """{weight name: zeros} of a group's weights, without their shards."""
    return {spec["name"]: np.zeros(spec["shape"], DTYPES[spec.get("dtype", "float32")]) for spec in group["weights"]}


async def fetch(location, groups, on_progress=None):
    """{weight name: array} of every group's weights, their shards (relative to `location`, an io.fetch.Location)
    fetched concurrently and checked; on_progress(bytes loaded, bytes total) as io.fetch reports it."""
    return await (await start_fetch(location, groups, on_progress))


async def start_fetch(location, groups, on_progress=None):
    """fetch(...) as a task, every shard's request made when this returns (without a turn of the event loop), so the
    caller goes on at once (a graph model's graph is parsed and checked; in CPython the threads read the shards
    meanwhile, in the page the browser moves their bodies in only while Python waits). A manifest this loader cannot
    read makes a failed task. A caller that stops waiting calls abandon(task)."""
    try:
        totals = [check_group(group, k + 1) for k, group in enumerate(groups)]
    except ModelLoadError as e:
        failed = asyncio.get_running_loop().create_future()
        failed.set_exception(e)
        return failed
    shards = [(group, k) for group in groups for k in range(len(group["paths"]))]
    names = [f"shard {group['paths'][k]!r}" for group, k in shards]
    targets = [location.resolve(group["paths"][k]) for group, k in shards]
    sha256 = any("sha256" in group for group in groups)
    reading = location.read_all(targets, names, sum(totals), on_progress, sha256)
    task = asyncio.ensure_future(_arrays(groups, totals, reading))
    task.add_done_callback(lambda _: reading.cancel())  # abandoned before it awaited the reads: they stop too
    return task


async def _arrays(groups, totals, reading):
    """{weight name: array} of the groups' shards, once `reading` (Location.read_all's) has them, each group checked."""
    arrays = {}
    for (group, own), need in zip(_per_group(groups, await reading), totals):
        datas = [data for data, _ in own]
        # unpacked while the browser computes the sha256 (shards of the wrong length are not): checked after
        unpacked = unpack(group, datas) if sum(map(len, datas)) == need else {}
        verify(group, datas, need, [await sha256_of(digest) for _, digest in own])
        _add(arrays, unpacked)
    return arrays


def unpack_all(groups, shards):
    """{weight name: array} of every group's weights from `shards` (bytes, every group's paths in order) already in
    memory, each group checked as fetch checks it."""
    totals = [check_group(group, k + 1) for k, group in enumerate(groups)]
    listed = sum(len(group["paths"]) for group in groups)
    if listed != len(shards):
        raise ModelLoadError(f"the weights manifest lists {listed} shard(s), {len(shards)} were given")
    arrays = {}
    for (group, datas), need in zip(_per_group(groups, shards), totals):
        verify(group, datas, need)
        _add(arrays, unpack(group, datas))
    return arrays


def _per_group(groups, items):
    """(group, its items) for each group: `items` (shards, or what was read of them) in all the groups' paths' order."""
    at = 0
    for group in groups:
        yield group, items[at : at + len(group["paths"])]
        at += len(group["paths"])


def _add(arrays, unpacked):
    for name, array in unpacked.items():
        if name in arrays:
            raise ModelLoadError(twice(name))
        arrays[name] = array


def abandon(task):
    """Stop a start_fetch task; its failure, if it has failed, is not reported (the caller raises its own)."""
    task.cancel()
    task.add_done_callback(lambda t: t.cancelled() or t.exception())


def twice(name):
    return f"weight {name!r} appears twice in the weights manifest"
