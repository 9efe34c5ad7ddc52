"""Accessibility: axe-core (npm, pinned test-only in web/package.json; web/build.sh installs it) scans the page after
boot, with an example run, its charts drawn, the Memory lab's leak table shown and a classification made: no
serious or critical violation.

The page's CSP forbids inline scripts, so axe is not added as a <script> element: Playwright's init scripts run
through the DevTools protocol, which the CSP does not govern."""

from pathlib import Path

import pytest
from conftest import BOOT_TIMEOUT_MS

AXE = Path(__file__).resolve().parent.parent / "web" / "node_modules" / "axe-core" / "axe.min.js"


@pytest.fixture
def page(webgpu_browser, server_url):
    if not AXE.exists():
        raise RuntimeError(f"{AXE} is missing: run web/build.sh (it installs web/package-lock.json's packages)")
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


def test_the_page_has_no_serious_or_critical_axe_violations(page):
    assert page.evaluate("typeof axe.run") == "function"
    assert serious(page) == []  # right after boot
    page.get_by_role("region", name="Examples").get_by_role(
        "button", name="Train a classifier with live charts"
    ).click()
    page.wait_for_function("() => /Done in/.test(document.querySelector('#run-state').textContent)", timeout=300_000)
    page.get_by_role("region", name="Examples").get_by_role("button", name="Tidy vs a leak").click()
    page.wait_for_function("() => playground.running === null && playground.charts().plots.length > 0")
    page.get_by_role("region", name="Memory lab").get_by_role("button", name="Find leaks").click()
    page.get_by_role("table", name="Live tensors (pe.leaks())").wait_for()
    page.get_by_role("button", name="Cat (PNG)").click()
    page.wait_for_function("() => document.querySelectorAll('#classify-results li').length === 5", timeout=300_000)
    assert page.get_by_role("region", name="Charts").is_visible()
    assert serious(page) == []
