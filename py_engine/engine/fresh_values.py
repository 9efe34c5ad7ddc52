"""Values a captured function's replay makes anew: the host values that change on every call (a learning rate,
Adam's bias corrections, random draws).

A function recorded by pe.capture keeps the Python values it used as constants of its program. A value made
with `ENGINE.fresh_tensors(make_arrays)` is not frozen: every replay calls make_arrays again and writes its arrays
into the same buffers before the program runs (one upload each, no Python per op). Outside a recording it is an
ordinary upload, so code that uses it runs the same with or without capture.
"""

import numpy as np

from .. import dtypes

_DTYPES = {np.dtype(np.float32): dtypes.float32, np.dtype(np.int32): dtypes.int32}


class FreshValues:
    def fresh_tensors(self, make_arrays):
        """Tensors holding make_arrays()'s numpy arrays (float32 or int32), one upload each; while pe.capture
        records, each replay calls make_arrays again (its side effects included: it runs once per call, recorded or
        replayed) and its arrays, of the same shapes and dtypes, become the tensors' new values."""
        arrays = check_arrays(make_arrays(), None)
        tensors = [self.from_numpy(a, _DTYPES[a.dtype]) for a in arrays]
        # where the tensors went (a lost device falls back mid-call); with none, make_arrays still runs per replay
        backend = tensors[0]._buf.backend if tensors else self.active()
        recorder = getattr(backend, "recorder", None)
        if recorder is not None:
            recorder.made_per_replay(lambda: check_arrays(make_arrays(), arrays), [t._buf.handle for t in tensors])
        return tensors


def check_arrays(arrays, recorded):
    """arrays as a list of contiguous numpy arrays, checked against the recorded ones (same shapes and dtypes)."""
    arrays = [np.ascontiguousarray(a) for a in arrays]
    for i, a in enumerate(arrays):
        if a.dtype not in _DTYPES:
            raise TypeError(f"fresh_tensors: array {i} is {a.dtype}; make float32 or int32 arrays")
    if recorded is not None and [(a.shape, a.dtype) for a in arrays] != [(a.shape, a.dtype) for a in recorded]:
        raise ValueError(
            "fresh_tensors: a replay made arrays of shapes/dtypes "
            f"{[(a.shape, str(a.dtype)) for a in arrays]}, the recording made "
            f"{[(a.shape, str(a.dtype)) for a in recorded]}; fresh values must keep their shapes and dtypes"
        )
    return arrays
