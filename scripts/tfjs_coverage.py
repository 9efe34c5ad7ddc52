"""Print the table of what py_engine has of TensorFlow.js's layers API, for the README, from the coverage test's
lists (tests/tfjs_coverage.py reads them from the real TF.js in tests/tfjs; it needs node and `npm ci --prefix
tests/tfjs`, as the interop tests do):

    .venv/bin/python scripts/tfjs_coverage.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.tfjs_coverage import missing, table, tfjs_names  # after the repo root is on the path


def main():
    names = tfjs_names()
    print(table(names, missing(names)))


if __name__ == "__main__":
    main()
