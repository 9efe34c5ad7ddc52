"""static/'s panels follow the registry's rules (static/page/panels.js, docs/page.md "Where the code is"): each panel
folder's page module is listed once in static/panels/list.js and registers itself, its requests are "ID.ACTION" and
answered by the worker script it names, in its own folder; its section and stylesheet are in its folder too, and the
server puts its tab, section and stylesheet into the page (app/page_panels.py), so a new panel is its folder and one
registry line, in the served page and in the export alike. These read the sources and the server's answers; the e2e
tests drive the panels themselves."""

import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app import create_app
from app.export import export_site
from app.page_panels import filled_page
from tests.server_site import build_site

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


class PageParts(HTMLParser):
    """A page's panel tabs [(data-panel, aria-controls, id, label)], sections {id: aria-label} and stylesheets."""

    def __init__(self, page: str):
        super().__init__()
        self.tabs, self.sections, self.stylesheets = [], {}, []
        self._tab = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "button" and attrs.get("role") == "tab" and "data-panel" in attrs:
            self._tab = [attrs["data-panel"], attrs.get("aria-controls"), attrs.get("id"), ""]
        elif tag == "section" and "id" in attrs:
            self.sections[attrs["id"]] = attrs.get("aria-label")
        elif tag == "link" and attrs.get("rel") == "stylesheet":
            self.stylesheets.append(attrs["href"])

    def handle_data(self, data):
        if self._tab is not None:
            self._tab[3] += data

    def handle_endtag(self, tag):
        if tag == "button" and self._tab is not None:
            self.tabs.append(tuple(self._tab))
            self._tab = None


def test_the_page_has_each_listed_panels_tab_section_and_stylesheet_in_the_registrys_order():
    parts = PageParts(filled_page(STATIC).body.decode())
    ids = [registration(PANELS / folder)["id"] for folder, _ in LISTED]
    assert [tab[0] for tab in parts.tabs] == ids
    assert all(tab[1] == tab[0] and tab[2] == f"tab-{tab[0]}" and tab[3] for tab in parts.tabs), parts.tabs
    assert set(ids) <= set(parts.sections)
    css = [f"panels/{folder}/{folder}.css" for folder, _ in LISTED if (PANELS / folder / f"{folder}.css").is_file()]
    assert [href for href in parts.stylesheets if href.startswith("panels/")] == css


def test_index_html_names_no_panel_and_each_panels_section_is_in_its_folder():
    parts = PageParts((STATIC / "index.html").read_text())
    ids = {folder: registration(PANELS / folder)["id"] for folder, _ in LISTED}
    assert not parts.tabs and not set(parts.sections) & set(ids.values()), (parts.tabs, parts.sections)
    assert not [href for href in parts.stylesheets if href.startswith("panels/")], parts.stylesheets
    for folder, panel_id in ids.items():
        assert PageParts((PANELS / folder / f"{folder}.html").read_text()).sections.keys() == {panel_id}


@pytest.fixture(scope="module")
def site_with_a_new_panel(tmp_path_factory):
    """A site with the page's index.html and panels, and one panel more: its folder and one line in the registry."""
    settings = build_site(tmp_path_factory.mktemp("site"))
    shutil.rmtree(settings.models_dir / "broken")  # its model.json is not JSON, which stops an export
    shutil.copyfile(STATIC / "index.html", settings.static_dir / "index.html")
    shutil.copytree(PANELS, settings.static_dir / "panels")
    new = settings.static_dir / "panels" / "gauges"
    new.mkdir()
    (new / "gauges_panel.js").write_text(
        'import { registerPanel } from "../../page/panels.js";\n\nregisterPanel({ id: "gauges", init() {} });\n'
    )
    (new / "gauges.html").write_text(
        '<section id="gauges" class="gauges panel" aria-label="Gauges" data-tab="Gauges &amp; dials">\n'
        "  <h2>Gauges</h2>\n</section>\n"
    )
    (new / "gauges.css").write_text(".gauges h2 { color: var(--accent); }\n")
    with open(settings.static_dir / "panels" / "list.js", "a") as registry:
        registry.write('import "./gauges/gauges_panel.js";\n')
    return settings


def test_a_new_panel_is_its_folder_and_one_registry_line_in_the_served_page_and_the_export(
    site_with_a_new_panel, tmp_path
):
    served = TestClient(create_app(site_with_a_new_panel)).get("/")
    assert served.status_code == 200, served.text
    parts = PageParts(served.text)
    assert parts.tabs[-1] == ("gauges", "gauges", "tab-gauges", "Gauges & dials")
    assert [tab[0] for tab in parts.tabs][:-1] == [registration(PANELS / folder)["id"] for folder, _ in LISTED]
    assert parts.sections["gauges"] == "Gauges" and parts.stylesheets[-1] == "panels/gauges/gauges.css"

    dest = tmp_path / "export"
    export_site(site_with_a_new_panel, dest, log=lambda *_: None)
    exported = (dest / "index.html").read_text()
    assert exported == served.text and "<!-- panels:" not in exported


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda panels: (panels / "files" / "files.html").unlink(), "static/panels/files/files.html is missing"),
        (
            lambda panels: (panels / "files" / "files.html").write_text('<div id="files">'),
            'static/panels/files/files.html must begin with its <section id="ID" data-tab=',
        ),
        (
            lambda panels: (panels / "list.js").write_text('import "./files/files.js";\n'),
            "static/panels/list.js: './files/files.js' is not a panel",
        ),
    ],
    ids=["no section", "not a section", "not a panel module"],
)
def test_a_panel_the_page_cannot_show_is_a_500_that_says_what_to_change(tmp_path, change, message):
    settings = build_site(tmp_path)
    shutil.copyfile(STATIC / "index.html", settings.static_dir / "index.html")
    shutil.copytree(PANELS, settings.static_dir / "panels")
    change(settings.static_dir / "panels")
    answer = TestClient(create_app(settings)).get("/")
    assert answer.status_code == 500 and message in answer.json()["error"], answer.text
