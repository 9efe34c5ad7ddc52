"""Print the tables of what py_engine has of TensorFlow.js: docs/api.md's, of its layers API (from the coverage test's
lists: tests/tfjs_coverage.py reads them from the real TF.js in tests/tfjs; it needs node and
`npm ci --prefix tests/tfjs`, as the interop tests do), and with --graph docs/graph_models.md's, of the graph-model ops
per category (tests/tfjs_graph_coverage.py reads them from the installed tfjs-converter):

    .venv/bin/python scripts/tfjs_coverage.py
    .venv/bin/python scripts/tfjs_coverage.py --graph
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests import tfjs_graph_coverage  # after the repo root is on the path
from tests.tfjs_coverage import missing, table, tfjs_names


def main():
    if "--graph" in sys.argv[1:]:
        print(tfjs_graph_coverage.table(tfjs_graph_coverage.tfjs_ops()))
        return
    names = tfjs_names()
    print(table(names, missing(names)))


if __name__ == "__main__":
    main()
