"""static/'s panels follow the registry's rules (static/page/panels.js, docs/page.md "Where the code is"): each panel
folder's page module is listed once in static/panels/list.js and registers itself, its requests are "ID.ACTION" and
answered by the worker script it names, in its own folder, and index.html has its tab and section. These read the
sources; the e2e tests drive the panels themselves."""

import re
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parent.parent / "static"
PANELS = STATIC / "panels"
LISTED = re.findall(r'^import "\./(\w+)/(\w+)_panel\.js";$', (PANELS / "list.js").read_text(), re.M)
RUNTIME_REQUESTS = {"run", "exec", "clearNamespace", "memory", "stats", "info", "setBackend", "complete"}


def registration(folder: Path) -> dict:
    """registerPanel({id, worker, ...})'s id and worker script, read from the folder's NAME_panel.js."""
    source = (folder / f"{folder.name}_panel.js").read_text()
    call = re.search(r"registerPanel\(\{(.*?)\}\);", source, re.S)
    assert call, f"{folder.name}_panel.js: registerPanel({{...}}) was not found; update this test's parser"
    panel_id = re.search(r'\bid: "([\w-]+)"', call.group(1))
    worker = re.search(r'\bworker: "([^"]+)"', call.group(1))
    return {"id": panel_id.group(1), "worker": worker and worker.group(1)}


def registered_folders() -> list[Path]:
    return [folder for folder in sorted(PANELS.iterdir()) if (folder / f"{folder.name}_panel.js").is_file()]


def test_every_panel_folder_is_listed_once_and_every_listed_one_exists():
    assert [folder for folder, _ in LISTED] == [name for name, _ in LISTED]  # ./NAME/NAME_panel.js
    assert sorted(folder for folder, _ in LISTED) == [folder.name for folder in registered_folders()]


@pytest.mark.parametrize("folder", registered_folders(), ids=lambda folder: folder.name)
def test_a_panels_requests_are_its_own_and_its_worker_script_answers_them(folder):
    panel = registration(folder)
    sent = set()
    for script in folder.glob("*.js"):
        sent |= set(re.findall(r'\brequest\(\s*"([\w.-]+)"', script.read_text()))
    own = {op for op in sent if op.startswith(panel["id"] + ".")}
    assert sent - own <= RUNTIME_REQUESTS | {op for op in sent if op.startswith("files.")}, sent - own
    if not own:
        assert panel["worker"] is None
        return
    assert panel["worker"] == f"panels/{folder.name}/{folder.name}_worker.js"
    answered = set(re.findall(r'handleRequest\(\s*"([\w.-]+)"', (STATIC / panel["worker"]).read_text()))
    assert own <= answered, own - answered
    assert all(op.startswith(panel["id"] + ".") for op in answered), answered


@pytest.mark.parametrize("folder", registered_folders(), ids=lambda folder: folder.name)
def test_index_html_has_each_panels_tab_and_section(folder):
    panel_id = registration(folder)["id"]
    page = (STATIC / "index.html").read_text()
    assert f'data-panel="{panel_id}"' in page and f'<section id="{panel_id}"' in page
