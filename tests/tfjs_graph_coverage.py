"""TF.js's graph-model ops and which of them py_engine runs: TF.js's lists are read from the installed
tfjs-converter (its operations/op_list/*.js, one file per category, each op a 'tfOpName'), ours from
py_engine/models/graph_ops.py (OPS, the executor's own control, function, TensorList and source ops, and NOT_HERE with the
reason for each op it does not run). tests/test_tfjs_graph_coverage.py checks them; scripts/tfjs_coverage.py
prints the table for the README."""

import json
import re

from py_engine.models.graph_ops import CONTROL_OPS, FUNCTION_OPS, LIST_OPS, OPS, SOURCE_OPS, missing_engine_ops
from tests.tfjs_node import TFJS

CONVERTER = TFJS / "node_modules" / "@tensorflow" / "tfjs-converter"
OP_LISTS = CONVERTER / "dist" / "operations" / "op_list"


def converter_version():
    return json.loads((CONVERTER / "package.json").read_text())["version"]


def tfjs_ops():
    """{category: [op names]} from tfjs-converter's op lists, in their files' order."""
    found = {}
    for path in sorted(OP_LISTS.glob("*.js")):
        names = re.findall(r"'tfOpName':\s*'([^']+)'", path.read_text())
        if names:
            found[path.stem] = names
    return found


def runs_here(op):
    """Whether py_engine's graph executor runs `op`."""
    if op in CONTROL_OPS or op in LIST_OPS or op in SOURCE_OPS or op in FUNCTION_OPS:
        return True
    return op in OPS and not missing_engine_ops(op)


def table(ops):
    """docs/graph_models.md's table: per category, TF.js's ops, those that run here, and how many do not."""
    rows = [
        f"| | TensorFlow.js {converter_version()} graph ops | py_engine | not here |",
        "|---|---|---|---|",
    ]
    for category, names in ops.items():
        here = sum(map(runs_here, names))
        rows.append(f"| {category.replace('_', ' ')} | {len(names)} | {here} | {len(names) - here or '-'} |")
    total = sum(len(names) for names in ops.values())
    here = sum(runs_here(op) for names in ops.values() for op in names)
    rows.append(f"| **all** | **{total}** | **{here}** | **{total - here}** |")
    return "\n".join(rows)
