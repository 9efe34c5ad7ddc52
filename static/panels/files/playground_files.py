"""The user's working directory in the worker (static/panels/files/files_worker.js mounts it and calls use_folder): Python's
current folder and the first place imports look after the page's own modules, so `open("data.csv")` reads an
uploaded file and `import helpers` imports the editor's helpers.py.

Its modules are imported from source without writing .pyc files: a __pycache__ folder would fill the user's file
list, and a .pyc written in the same second as an edit of the same size would be taken for the edited source. When
the page changes a file (the editor's save, an upload, a rename or delete), forget_modules() drops every module
imported from the folder, so the next run imports the files as they are now.
"""

import importlib
import importlib.machinery
import os
import sys

FOLDER = None  # set by use_folder


class _SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    def set_data(self, path, data, *, _mode=0o666):
        """Where a loader writes the compiled module's .pyc: nothing is written."""


def _finder(path):
    if path != FOLDER:
        raise ImportError("not the user's folder")
    return importlib.machinery.FileFinder(path, (_SourceOnlyLoader, importlib.machinery.SOURCE_SUFFIXES))


def use_folder(folder):
    global FOLDER
    FOLDER = folder
    # The page's modules (static/worker/*.py, static/panels/*/*.py) are in the current folder, found through sys.path's "" until now: named
    # instead, they stay importable (teach.py is imported on Teach's first request), and a user's file of the same
    # name cannot shadow them.
    page = os.getcwd()
    at = sys.path.index("") if "" in sys.path else -1
    if at >= 0:
        sys.path[at] = page
    sys.path.insert(at + 1, folder)
    os.chdir(folder)
    sys.path_hooks.insert(0, _finder)
    sys.path_importer_cache.pop(folder, None)


def forget_modules():
    """Drop the modules imported from the folder: the next import reads their files again."""
    prefix = FOLDER + "/"
    for name, module in list(sys.modules.items()):
        if (getattr(module, "__file__", None) or "").startswith(prefix):
            del sys.modules[name]
    importlib.invalidate_caches()
