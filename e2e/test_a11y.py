"""Accessibility: axe-core (npm, pinned test-only in static/src/package.json; static/src/build.sh installs it) scans
the page after boot, then with an example run, its charts drawn, the Memory lab's leak table shown, a Teach sample
added and a classification made, on every panel at 1440x900 and 390x844: no serious or critical violation.

The page's CSP forbids inline scripts, so axe is not added as a <script> element: Playwright's init scripts run
through the DevTools protocol, which the CSP does not govern."""

from pathlib import Path

import pytest
from conftest import BOOT_TIMEOUT_MS, show_panel

AXE = Path(__file__).resolve().parent.parent / "static" / "src" / "node_modules" / "axe-core" / "axe.min.js"


@pytest.fixture
def page(webgpu_browser, server_url):
    if not AXE.exists():
        raise RuntimeError(
            f"{AXE} is missing: run static/src/build.sh (it installs static/src/package-lock.json's packages)"
        )
    context = webgpu_browser.new_context()
    context.add_init_script(path=str(AXE))
    page = context.new_page()
    page.goto(server_url)
    page.wait_for_function("() => window.playground && playground.state === 'ready'", timeout=BOOT_TIMEOUT_MS)
    yield page
    context.close()


def serious(page):
    """axe's serious and critical violations of the whole page: [(rule, help, [target...])]."""
    results = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        (v["id"], v["help"], [node["target"] for node in v["nodes"]][:5])
        for v in results["violations"]
        if v["impact"] in ("serious", "critical")
    ]


PANELS = ["Examples", "Charts", "Memory lab", "Classify", "Teach"]
VIEWPORTS = [{"width": 1440, "height": 900}, {"width": 390, "height": 844}]


def test_the_page_has_no_serious_or_critical_axe_violations(page):
    assert page.evaluate("typeof axe.run") == "function"
    assert serious(page) == []  # right after boot
    show_panel(page, "Examples")
    examples = page.get_by_role("region", name="Examples")
    examples.get_by_role("button", name="Train a classifier with live charts").click()
    page.wait_for_function("() => /Done in/.test(document.querySelector('#run-state').textContent)", timeout=300_000)
    examples.get_by_role("button", name="Tidy vs a leak").click()
    page.wait_for_function("() => playground.running === null && playground.charts().plots.length > 0")
    show_panel(page, "Memory lab")
    page.get_by_role("region", name="Memory lab").get_by_role("button", name="Find leaks").click()
    page.get_by_role("table", name="Live tensors (pe.leaks())").wait_for()
    show_panel(page, "Teach")
    page.get_by_role("button", name="Add the Cat sample to class 1").click()
    page.get_by_role("listitem", name="Class 1").get_by_text("1 image", exact=True).wait_for(timeout=300_000)
    show_panel(page, "Classify")
    page.get_by_role("button", name="Cat (PNG)").click()
    page.wait_for_function("() => document.querySelectorAll('#classify-results li').length === 5", timeout=300_000)
    # every panel, on a laptop's screen and on a phone's
    for viewport in VIEWPORTS:
        page.set_viewport_size(viewport)
        for name in PANELS:
            show_panel(page, name)
            assert serious(page) == [], (viewport, name)
