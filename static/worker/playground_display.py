"""What the page shows of a value (the Output log's last expression), and the plain data runPython returns.

`describe(value)` makes a tree of small dicts the page draws (static/page/output_log.js, `value`):

    {"kind": "none"}
    {"kind": "scalar", "type", "text"}                      bool, int, float, numpy scalars
    {"kind": "text", "type", "text", "clipped"}             str (real newlines), a model's summary; a short
                                                            one-line str in a container is a scalar, quoted
    {"kind": "tensor", "type", "name", "shape", "dtype", "backend", "nbytes", "disposed",
     "stats", "note", "table", "values"}                    pe tensors and numpy arrays
    {"kind": "list", "type", "length", "items", "more"}     list, tuple, set, frozenset
    {"kind": "dict", "type", "length", "items", "more"}     dict; objects with to_dict() and dataclasses, by field
    {"kind": "frame", "type", "shape", "columns", "index_name", "rows", "dtypes"}
                                                            a pandas DataFrame or Series (a Series as one column):
                                                            all rows up to FRAME_ROWS, else the first and last
                                                            FRAME_EDGE (None in `rows` marks the gap); columns
                                                            alike ("…" in `columns` and the cells marks theirs);
                                                            each row {"index", "cells"}, all text
    {"kind": "figure", "png", "alt", "width", "height"}     a matplotlib Figure, drawn by playground_figures.py
    {"kind": "repr", "type", "text"}                        anything else: its repr(), clipped

Nothing a user's value does can break it: every repr(), to_dict(), summary and readback is guarded and falls back
to a line that says what failed; containers are shown up to MAX_ITEMS items and MAX_DEPTH levels, the whole
tree up to MAX_NODES nodes, cycles once; dataclasses are read field by field, never deep-copied (pe.profile's
result holds backend objects that cannot be copied).
"""

import dataclasses
import itertools
import sys

import numpy as np

import py_engine as pe

MAX_ITEMS = 50  # items shown of a list, tuple, set or dict
MAX_DEPTH = 6  # levels of nesting shown
MAX_NODES = 2000  # nodes in one tree
MAX_TEXT = 100_000  # characters of a string
MAX_REPR = 2000  # characters of a repr()
MAX_READ = 1 << 24  # elements a tensor may have to be read back for its statistics and table
TABLE_ROWS = TABLE_COLS = 8  # cells shown of the last two axes; longer axes show their first and last ones
MAX_JSON_VALUES = 16  # a tensor up to this size also lists its values, as runPython returns them
FRAME_ROWS = 60  # a DataFrame up to this many rows shows them all (pandas' display.max_rows) ...
FRAME_EDGE = 5  # ... a longer one its first and last FRAME_EDGE (pandas' display.min_rows, halved)
FRAME_COLS = 20  # columns shown of a DataFrame: all up to this many, else the first and last half of them
pixel_ratio = 1  # device pixels per CSS pixel of the page's screen, for figures (playground_run.run sets it)


def _clip(text, limit):
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)


def safe_repr(value):
    """repr(value), clipped; a repr that raises becomes a line naming the type and the error."""
    try:
        text = repr(value)
    except BaseException as e:  # a user's __repr__ may raise anything, even KeyboardInterrupt
        text = f"<{type(value).__name__} object: repr() failed: {type(e).__name__}: {e}>"
    text, clipped = _clip(text, MAX_REPR)
    return text + (f"... ({clipped} more characters)" if clipped else "")


def _fields(value):
    """An object's fields as a dict without copying them: to_dict() when it has one, else its dataclass fields."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
    if hasattr(value, "to_dict") and not isinstance(value, type):
        fields = value.to_dict()
        return fields if isinstance(fields, dict) else None
    return None


def _cell(x):
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (float, np.floating)):
        return f"{float(x):.6g}"
    return str(x)


def _picks(n, limit):
    """Indices shown of an axis of length n: all of them, or the first limit-1 and the last (None marks the gap)."""
    return list(range(n)) if n <= limit else [*range(limit - 2), None, n - 1]


def _table(values):
    """The last two axes of the first slice of `values` as rows of text cells, with their labels."""
    lead = values.ndim - 2
    label = "[" + ", ".join(["0"] * lead + [":", ":"]) + "]" if lead > 0 else None
    grid = values[(0,) * lead] if lead > 0 else values.reshape(1, -1) if values.ndim < 2 else values
    rows, cols = _picks(grid.shape[0], TABLE_ROWS), _picks(grid.shape[1], TABLE_COLS)
    cells = [["…" if r is None or c is None else _cell(grid[r, c]) for c in cols] for r in rows]
    return {
        "label": label,
        "rows": ["…" if r is None else str(r) for r in rows] if values.ndim >= 2 else None,
        "cols": ["…" if c is None else str(c) for c in cols] if values.ndim >= 1 else None,
        "cells": cells,
    }


def _stats(values):
    """min/max/mean/std of a numeric tensor with more than one value, over its non-NaN values (the counts of NaN
    and infinite values are given apart); counts of True and False for bool."""
    if values.size < 2 or values.dtype.kind not in "biuf":  # e.g. a numpy array of objects or strings
        return None
    if values.dtype == np.bool_:
        return {"true": int(values.sum()), "false": int(values.size - values.sum())}
    x = values.astype(np.float64)
    nan, inf = np.isnan(x), np.isinf(x)
    stats = {}
    if not nan.all():
        stats |= {"min": _cell(values[~nan].min()), "max": _cell(values[~nan].max())}
    finite = x[~nan & ~inf]
    if finite.size:
        stats |= {"mean": _cell(finite.mean()), "std": _cell(finite.std())}
    if nan.any():
        stats["nan"] = int(nan.sum())
    if inf.any():
        stats["inf"] = int(inf.sum())
    return stats


def _frame_picks(n, limit, edge):
    """Positions shown of n rows or columns: all up to limit, else the first and last `edge` (None marks the gap)."""
    return list(range(n)) if n <= limit else [*range(edge), None, *range(n - edge, n)]


def _frame(value, pandas):
    """A DataFrame or Series as a table of text: head and tail of long ones (see the module docstring)."""
    frame = value.to_frame() if isinstance(value, pandas.Series) else value
    n_rows, n_cols = frame.shape
    rows, cols = _frame_picks(n_rows, FRAME_ROWS, FRAME_EDGE), _frame_picks(n_cols, FRAME_COLS, FRAME_COLS // 2)
    names = [str(c) for c in frame.columns]
    if isinstance(value, pandas.Series) and value.name is None:
        names = ["value"]  # a header that says what the column holds, where pandas shows none
    shown = []
    for r in rows:
        if r is None:
            shown.append(None)
            continue
        cells = ["…" if c is None else _frame_cell(frame.iat[r, c], pandas) for c in cols]
        shown.append({"index": str(frame.index[r]), "cells": cells})
    index_name = frame.index.name
    return {
        "kind": "frame",
        "type": type(value).__name__,
        "shape": list(value.shape),
        "columns": ["…" if c is None else names[c] for c in cols],
        "index_name": None if index_name is None else str(index_name),
        "rows": shown,
        "dtypes": ["" if c is None else str(frame.dtypes.iloc[c]) for c in cols],
    }


def _frame_cell(x, pandas):
    missing = x is None or (not isinstance(x, str) and pandas.api.types.is_scalar(x) and pandas.isna(x))
    return "NaN" if missing else _cell(x)  # NaN, None, NaT and pd.NA alike, as pandas shows them


async def _tensor(value):
    is_tensor = isinstance(value, pe.Tensor)
    node = {
        "kind": "tensor",
        "type": type(value).__name__,
        "shape": list(value.shape),
        "dtype": str(value.dtype),
        "name": getattr(value, "var_name", None) if is_tensor else None,
        "backend": None,
        "nbytes": None,
        "disposed": bool(is_tensor and value.is_disposed),
        "stats": None,
        "note": None,
        "table": None,
        "values": None,
    }
    if node["disposed"]:
        return node
    size = int(np.prod(value.shape, dtype=np.int64))
    if is_tensor:
        node["backend"] = value._buf.backend.name
        node["nbytes"] = value._buf.nbytes
    else:
        node["nbytes"] = int(value.nbytes)
    if size > MAX_READ:
        node["note"] = f"{size:,} values: too many to read back for statistics (at most {MAX_READ:,})"
        return node
    try:
        values = (await value.data()).reshape(value.shape) if is_tensor else np.asarray(value)
    except Exception as e:  # e.g. the GPU device was lost: say so, show the rest
        node["note"] = f"its values could not be read: {type(e).__name__}: {e}"
        return node
    node["stats"] = _stats(values)
    node["table"] = _table(values) if size else None
    if size <= MAX_JSON_VALUES:
        node["values"] = values.tolist()
    return node


class _Describer:
    def __init__(self):
        self.nodes = 0
        self.path = set()  # ids of the containers being described: a cycle is shown once

    async def describe(self, value, depth=0):
        self.nodes += 1
        if self.nodes > MAX_NODES:
            return {"kind": "repr", "type": type(value).__name__, "text": f"... (more than {MAX_NODES} values)"}
        try:
            return await self._describe(value, depth)
        except Exception as e:  # a property, to_dict() or len() of the user's object raised: show its repr instead
            text = f"{safe_repr(value)}  ({type(e).__name__} while showing it: {e})"
            return {"kind": "repr", "type": type(value).__name__, "text": text}

    async def _describe(self, value, depth):
        kind = type(value).__name__
        if value is None:
            return {"kind": "none"}
        if isinstance(value, (bool, int, float, np.number, np.bool_)):
            text = (
                str(value) if isinstance(value, np.generic) else safe_repr(value)
            )  # numpy's str(): 0.1, not float32(0.1)
            return {"kind": "scalar", "type": kind, "text": text}
        if isinstance(value, str) and depth > 0 and "\n" not in value and len(value) <= MAX_REPR:
            return {"kind": "scalar", "type": kind, "text": repr(value)}  # in a container: quoted, as Python shows it
        if isinstance(value, str):
            text, clipped = _clip(value, MAX_TEXT)
            return {"kind": "text", "type": kind, "text": text, "clipped": clipped}
        if isinstance(value, (pe.Tensor, np.ndarray)):
            return await _tensor(value)
        # pandas and matplotlib values exist only once the code imported them: never imported here
        pandas = sys.modules.get("pandas")
        if pandas is not None and isinstance(value, (pandas.DataFrame, pandas.Series)):
            return _frame(value, pandas)
        figures = sys.modules.get("matplotlib.figure")
        if figures is not None and isinstance(value, figures.Figure):
            import playground_figures  # imports matplotlib's Agg, already imported with the code's figure

            return playground_figures.shown_value(value)
        # a Model exists only once py_engine.models is imported: asking pe.Model would import it (pe imports it lazily)
        models = sys.modules.get("py_engine.models")
        if models is not None and isinstance(value, models.Model):
            return {"kind": "text", "type": kind, "text": value.summary(print_fn=None), "clipped": 0}
        if depth >= MAX_DEPTH or id(value) in self.path:
            return {"kind": "repr", "type": kind, "text": safe_repr(value)}
        if isinstance(value, (list, tuple, set, frozenset, dict)):
            items = value.items() if isinstance(value, dict) else value
            return await self._container(value, kind, items, depth)
        fields = _fields(value)
        if fields is not None:
            return await self._container(value, kind, fields.items(), depth)
        return {"kind": "repr", "type": kind, "text": safe_repr(value)}

    async def _container(self, value, kind, items, depth):
        self.path.add(id(value))
        try:
            shown = list(itertools.islice(items, MAX_ITEMS))
            length = len(items)
            if isinstance(value, (list, tuple, set, frozenset)):
                children = [await self.describe(v, depth + 1) for v in shown]
                return {"kind": "list", "type": kind, "length": length, "items": children, "more": length - len(shown)}
            children = [
                [k if isinstance(k, str) else safe_repr(k), await self.describe(v, depth + 1)] for k, v in shown
            ]
            return {"kind": "dict", "type": kind, "length": length, "items": children, "more": length - len(shown)}
        finally:
            self.path.discard(id(value))


async def describe(value):
    """The display tree of `value` (see the module docstring)."""
    return await _Describer().describe(value)


async def to_jsonable(value):
    """`value` as None/bool/int/float/str/list/dict for runPython: tensors and arrays become {shape, dtype, values}
    (a disposed tensor {shape, dtype, disposed: true}), numpy scalars numbers, tuples lists, dict keys strings,
    objects with to_dict() and dataclasses their fields, anything else its repr()."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, pe.Tensor):
        out = {"shape": list(value.shape), "dtype": str(value.dtype)}
        if value.is_disposed:
            return {**out, "disposed": True}
        return {**out, "values": (await value.data()).reshape(value.shape).tolist()}
    if isinstance(value, np.ndarray):
        return {"shape": list(value.shape), "dtype": str(value.dtype), "values": value.tolist()}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): await to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [await to_jsonable(v) for v in value]
    try:
        fields = _fields(value)
    except Exception:  # a to_dict() that fails: the repr says what the object is
        fields = None
    if fields is not None:
        return await to_jsonable(fields)
    return safe_repr(value)
