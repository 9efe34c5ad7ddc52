"""Accessibility: axe-core (npm, pinned test-only in static/src/package.json; static/src/build.sh installs it) scans the
page after boot, then with an example run (in an editor tab of its own), its charts drawn, the Memory lab's leak table
shown, a file in the Files panel, a Teach sample added and a classification made, on every panel at 1440x900 and
390x844, with the rename dialog open, then again with the camera on in Classify (its frames classified live) and in
Teach (Chromium's fake camera, granted): no serious or critical violation.

The page's CSP forbids inline scripts, so axe is not added as a <script> element: Playwright's init scripts run
through the DevTools protocol, which the CSP does not govern."""

from pathlib import Path

import pytest
from conftest import BOOT_TIMEOUT_MS, WEBGPU_FLAG, show_panel
from playwright.sync_api import expect
from test_camera import FAKE_CAMERA, FRAMES_MS, GRANT_CAMERA, launch

AXE = Path(__file__).resolve().parent.parent / "static" / "src" / "node_modules" / "axe-core" / "axe.min.js"


@pytest.fixture
def page(playwright, server_url):
    """A page with axe, in a browser with WebGPU (SwiftShader) and Chromium's fake camera, granted."""
    if not AXE.exists():
        raise RuntimeError(
            f"{AXE} is missing: run static/src/build.sh (it installs static/src/package-lock.json's packages)"
        )
    browser = launch(playwright, WEBGPU_FLAG, FAKE_CAMERA, GRANT_CAMERA)
    context = browser.new_context()
    context.add_init_script(path=str(AXE))
    page = context.new_page()
    page.goto(server_url)
    page.wait_for_function("() => window.playground && playground.state === 'ready'", timeout=BOOT_TIMEOUT_MS)
    yield page
    browser.close()


def serious(page):
    """axe's serious and critical violations of the whole page: [(rule, help, [target...])]."""
    results = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        (v["id"], v["help"], [node["target"] for node in v["nodes"]][:5])
        for v in results["violations"]
        if v["impact"] in ("serious", "critical")
    ]


PANELS = ["Examples", "Files", "Charts", "Memory lab", "Classify", "Vision", "Teach"]
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
    page.evaluate("playground.files.upload([new File(['a,b\\n1,2\\n'], 'data.csv')])")
    scan_every_panel(page, "camera off")
    show_panel(page, "Files")
    page.get_by_role("button", name="Rename data.csv").click()
    expect(page.get_by_role("dialog", name="Rename data.csv")).to_be_visible()
    assert serious(page) == []
    page.keyboard.press("Escape")
    # the camera on: Classify names its frames live, and Teach shows it with a record button per class
    show_panel(page, "Classify")
    classify = page.get_by_role("region", name="Classify an image")
    classify.get_by_role("button", name="Camera", exact=True).click()
    expect(classify.get_by_role("status", name="Camera status")).to_contain_text("frames classified", timeout=FRAMES_MS)
    show_panel(page, "Teach")
    teach = page.get_by_role("region", name="Teach")
    teach.get_by_role("button", name="Use the camera").click()
    expect(teach.get_by_role("button", name="Hold to record camera frames into class 1")).to_be_enabled()
    assert teach.get_by_label("Teach camera view").is_visible()
    scan_every_panel(page, "camera on")


def scan_every_panel(page, state):
    """Every panel, on a laptop's screen and on a phone's."""
    for viewport in VIEWPORTS:
        page.set_viewport_size(viewport)
        for name in PANELS:
            show_panel(page, name)
            assert serious(page) == [], (state, viewport, name)
