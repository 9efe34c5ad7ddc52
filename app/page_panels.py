"""The page with its panels: static/index.html, filled from the panel registry (static/panels/list.js), so a new panel
is its folder and its line there (docs/page.md, "A new panel").

index.html marks three places with a comment on a line of its own: `<!-- panels: stylesheets -->` (in the head: the
link of each panel's NAME.css, where its folder has one), `<!-- panels: tabs -->` (in the tab list: a tab per panel)
and `<!-- panels: sections -->` (each panel's NAME.html: its <section>, whose id names its tab and whose data-tab is
the tab's label). The panels come in the registry's order. The server fills them in its answer for the page, and the
export writes that answer, so the tabs and panels are in the HTML, styled, before any script runs: nothing moves
while the page boots, nothing more is fetched, and the static copy is the same page.
"""

import hashlib
import html
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from app.compression import gzip_of
from app.file_cache import FileCache, Watched
from app.paths import safe_file

REGISTRY = "panels/list.js"
MARKER = re.compile(r"^([ \t]*)<!-- panels: (stylesheets|tabs|sections) -->\n", re.M)
IMPORT = re.compile(r"""^import\s+["']([^"']*)["']""", re.M)
LISTED = re.compile(r"\./(\w+)/(\w+)_panel\.js")
_pages: FileCache["FilledPage"] = FileCache(max_entries=4)


class PanelError(Exception):
    """The registry, or a panel folder, is not what the page needs; the message says what to change."""


@dataclass(frozen=True)
class FilledPage:
    body: bytes
    sha256: str
    gzipped: bytes | None  # its gzip, where that pays (app/compression.py)


@dataclass(frozen=True)
class Panel:
    id: str  # its section's id: its tab controls it
    tab: str  # the tab's label
    section: str  # static/panels/<folder>/<folder>.html
    stylesheet: str | None  # panels/<folder>/<folder>.css, where it has one


def filled_page(static_dir: Path) -> FilledPage | None:
    """static/index.html with its panels filled in (None where there is no index.html), remembered until one of the
    files it is made of changes."""
    return _pages.get(static_dir.resolve(), lambda watched: _fill(static_dir, watched))


def _fill(static_dir: Path, watched: Watched) -> FilledPage | None:
    watched.add(static_dir / "index.html")
    index = safe_file(static_dir, "index.html")
    if index is None:
        return None
    page = index.read_text(encoding="utf-8")
    if MARKER.search(page):
        panels = read_panels(static_dir, watched)
        page = MARKER.sub(lambda marker: _indent(PARTS[marker[2]](panels), marker[1]), page)
    body = page.encode()
    return FilledPage(body, hashlib.sha256(body).hexdigest(), gzip_of(body))


def read_panels(static_dir: Path, watched: Watched) -> list[Panel]:
    """The registry's panels, in its order."""
    registry = _read(static_dir, REGISTRY, watched, "the panel registry, one `import` line per panel")
    panels = []
    for target in IMPORT.findall(registry):
        listed = LISTED.fullmatch(target)
        if not listed or listed[1] != listed[2]:
            raise PanelError(
                f'static/{REGISTRY}: {target!r} is not a panel; each line is `import "./NAME/NAME_panel.js";`, the '
                "page module of the panel folder static/panels/NAME/"
            )
        panels.append(_panel(static_dir, listed[1], watched))
    ids = [panel.id for panel in panels]
    if len(set(ids)) != len(ids):
        raise PanelError(f"static/{REGISTRY}: two panels have the same section id: {ids}")
    return panels


def _panel(static_dir: Path, folder: str, watched: Watched) -> Panel:
    rel = f"panels/{folder}/{folder}.html"
    section = _read(static_dir, rel, watched, "the panel's <section>, which the page shows under its tab").strip()
    start = _first_tag(section)
    if start is None or start[0] != "section" or not start[1].get("id") or not start[1].get("data-tab"):
        raise PanelError(
            f'static/{rel} must begin with its <section id="ID" data-tab="Tab label" ...>: the id names the panel '
            "(registerPanel's id), data-tab its tab"
        )
    css = f"panels/{folder}/{folder}.css"
    watched.add(static_dir / css)  # a stylesheet added later fills the page again
    return Panel(
        id=start[1]["id"],
        tab=start[1]["data-tab"],
        section=section,
        stylesheet=css if safe_file(static_dir, css) else None,
    )


def _read(static_dir: Path, rel: str, watched: Watched, what: str) -> str:
    watched.add(static_dir / rel)
    file = safe_file(static_dir, rel)
    if file is None:
        raise PanelError(f"static/{rel} is missing: {what}")
    return file.read_text(encoding="utf-8")


class _FirstTag(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tag = None

    def handle_starttag(self, tag, attrs):
        if self.tag is None:
            self.tag = (tag, {name: value or "" for name, value in attrs})


def _first_tag(markup: str) -> tuple[str, dict[str, str]] | None:
    """The first start tag of `markup` and its attributes (their values unescaped)."""
    parser = _FirstTag()
    parser.feed(markup)
    return parser.tag


def _indent(lines: list[str], prefix: str) -> str:
    return "".join(f"{prefix}{line}\n" if line else "\n" for text in lines for line in text.split("\n"))


def _attr(value: str) -> str:
    return html.escape(value, quote=True)


PARTS = {
    "stylesheets": lambda panels: [
        f'<link rel="stylesheet" href="{_attr(panel.stylesheet)}">' for panel in panels if panel.stylesheet
    ],
    "tabs": lambda panels: [
        f'<button type="button" role="tab" id="tab-{_attr(panel.id)}" aria-controls="{_attr(panel.id)}" '
        f'data-panel="{_attr(panel.id)}">{html.escape(panel.tab, quote=False)}</button>'
        for panel in panels
    ],
    "sections": lambda panels: [panel.section for panel in panels],
}
