"""static/panels/files/playground_files.py in CPython: the user's folder becomes the current one and importable after the page's
own folder, its modules are imported without .pyc files, and forget_modules() makes the next import read an edited
file, even one of the same size edited within the same second. (In the page: e2e/test_files.py.)"""

import importlib
import importlib.util
import os
import sys
from pathlib import Path

import pytest

MODULE = Path(__file__).resolve().parent.parent / "static" / "panels" / "files" / "playground_files.py"


def playground_files():
    """A fresh copy of the module, not put in sys.modules."""
    spec = importlib.util.spec_from_file_location("playground_files", MODULE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """(the page's folder, the user's folder), the page's current as in the worker; sys's import state restored after."""
    page, user = tmp_path / "page", tmp_path / "files"
    page.mkdir()
    user.mkdir()
    monkeypatch.chdir(page)
    monkeypatch.setattr(sys, "path", ["", *sys.path])
    monkeypatch.setattr(sys, "path_hooks", list(sys.path_hooks))
    monkeypatch.setattr(sys, "path_importer_cache", dict(sys.path_importer_cache))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # as the page's worker has it (startup_cache.py)
    before = set(sys.modules)
    yield page, user
    for name in set(sys.modules) - before:
        del sys.modules[name]


def test_the_users_folder_is_current_and_imports_come_from_source_without_pyc(folders):
    page, user = folders
    files = playground_files()
    (page / "page_side_module.py").write_text("WHERE = 'page'\n")
    (user / "page_side_module.py").write_text("WHERE = 'user'\n")  # cannot shadow the page's module
    (user / "user_helpers.py").write_text("VALUE = 1\n")
    files.use_folder(str(user))
    assert os.getcwd() == str(user)
    assert sys.path[:2] == [str(page), str(user)]
    assert importlib.import_module("page_side_module").WHERE == "page"
    assert importlib.import_module("user_helpers").VALUE == 1
    assert sorted(p.name for p in user.iterdir()) == ["page_side_module.py", "user_helpers.py"]  # no __pycache__

    stat = (user / "user_helpers.py").stat()
    (user / "user_helpers.py").write_text("VALUE = 2\n")  # the same size...
    os.utime(user / "user_helpers.py", ns=(stat.st_atime_ns, stat.st_mtime_ns))  # ...and time stamp
    assert importlib.import_module("user_helpers").VALUE == 1  # imported already
    files.forget_modules()
    assert "user_helpers" not in sys.modules and "page_side_module" in sys.modules
    assert importlib.import_module("user_helpers").VALUE == 2
