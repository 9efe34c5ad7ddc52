"""The webcam, with Chromium's fake camera (--use-fake-device-for-media-stream, its moving test pattern, and
--use-fake-ui-for-media-stream, which grants it): Classify's "Camera" button classifies its frames live, the top-5
and the time per frame update, and the tensor count stays flat over 100 frames; Teach records frames into a class
while its button is held (mouse or keyboard); with the camera on, both fit a phone's screen. Without a camera, or with
the permission refused, a clear message."""

import re

import pytest
from conftest import BOOT_TIMEOUT_MS, CHROMIUM, QUIET_FLAGS, show_panel
from playwright.sync_api import expect

FAKE_CAMERA = "--use-fake-device-for-media-stream"
GRANT_CAMERA = "--use-fake-ui-for-media-stream"
FRAMES_MS = 300_000


def launch(playwright, *flags):
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=[*QUIET_FLAGS, *flags])


@pytest.fixture(scope="module")
def page(playwright, server_url):
    """A page in a browser with the fake camera, granted; no WebGPU flag: the page starts on wasm."""
    browser = launch(playwright, FAKE_CAMERA, GRANT_CAMERA)
    page = browser.new_page()
    page.goto(server_url)
    page.wait_for_function("() => window.playground && playground.state === 'ready'", timeout=BOOT_TIMEOUT_MS)
    yield page
    browser.close()


PHONE = {"width": 390, "height": 844}
SIZES = """() => [...document.querySelectorAll('button, select, input, summary, [role="tab"], video')]
    .filter((e) => e.checkVisibility() && e.getClientRects().length)
    .map((e) => [e.getAttribute('aria-label') || e.textContent.trim() || e.id, e.getBoundingClientRect()])"""


def fits_a_phone(page):
    """At 390 px wide, with the camera on: nothing past the right edge, every control at least 32 px tall."""
    page.set_viewport_size(PHONE)
    try:
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        shown = page.evaluate(SIZES)
        assert not [(name, box["right"]) for name, box in shown if box["right"] > PHONE["width"]], shown
        assert not [(name, box["height"]) for name, box in shown if box["height"] < 32], shown
    finally:
        page.set_viewport_size({"width": 1280, "height": 720})


def frames(status):
    found = re.search(r"(\d+) frames? classified", status.inner_text())
    return int(found.group(1)) if found else 0


def test_classify_names_the_cameras_frames_live_with_flat_memory(page):
    show_panel(page, "Classify")
    panel = page.get_by_role("region", name="Classify an image")
    camera = panel.get_by_role("button", name="Camera", exact=True)
    camera.click()
    expect(camera).to_have_attribute("aria-pressed", "true")
    assert panel.get_by_label("Camera view").is_visible()
    status = panel.get_by_role("status", name="Camera status")
    tensors = page.get_by_role("complementary", name="Memory").get_by_role("definition").first
    page.wait_for_function(
        "() => /(\\d+) frames classified/.test(document.querySelector('#camera-status').textContent)"
        " && Number(/(\\d+) frames/.exec(document.querySelector('#camera-status').textContent)[1]) >= 10",
        timeout=FRAMES_MS,
    )
    at_10 = int(tensors.inner_text())
    assert len(panel.get_by_role("listitem").all()) == 5
    assert re.search(r"wasm: preprocess \d+ ms · forward", page.locator("#classify-status").inner_text())
    page.wait_for_function(
        "() => Number((/(\\d+) frames/.exec(document.querySelector('#camera-status').textContent) || [0, 0])[1]) >= 110",
        timeout=FRAMES_MS,
    )
    assert int(tensors.inner_text()) == at_10  # 100 frames later: every frame's tensors were released
    fits_a_phone(page)
    assert re.search(r"classified · \d+ ms per frame$", status.inner_text()), status.inner_text()
    camera.click()
    assert camera.get_attribute("aria-pressed") == "false"
    assert re.fullmatch(r"Camera off after \d+ frames, \d+ ms per frame\.", status.inner_text()), status.inner_text()
    assert frames(status) == 0 and not page.locator("#camera-video").is_visible()


def count(teach, n):
    text = teach.get_by_role("listitem", name=f"Class {n}").locator(".teach-count").inner_text()
    return int(text.split()[0])


def test_teach_records_the_cameras_frames_while_a_class_button_is_held(page):
    show_panel(page, "Teach")
    teach = page.get_by_role("region", name="Teach")
    record = teach.get_by_role("button", name="Hold to record camera frames into class 1")
    assert record.is_disabled()  # the camera is off
    teach.get_by_role("button", name="Use the camera").click()
    expect(record).to_be_enabled()
    fits_a_phone(page)
    before = count(teach, 1)
    record.hover()
    page.mouse.down()
    page.wait_for_function(
        "n => Number(document.querySelector('.teach-class .teach-count').textContent.split(' ')[0]) >= n",
        arg=before + 3,
        timeout=60_000,
    )
    page.mouse.up()
    page.wait_for_timeout(1500)  # a frame in flight when the button was let go is still added
    held = count(teach, 1)
    page.wait_for_timeout(1500)
    assert count(teach, 1) == held >= before + 3  # nothing more once the button is released
    # by keyboard: Space held on class 2's button
    second = teach.get_by_role("button", name="Hold to record camera frames into class 2")
    second.focus()
    page.keyboard.down(" ")
    page.wait_for_function(
        "() => Number(document.querySelectorAll('.teach-class .teach-count')[1].textContent.split(' ')[0]) >= 2",
        timeout=FRAMES_MS,
    )
    page.keyboard.up(" ")
    status = teach.get_by_role("status", name="Teach status")
    status.filter(has_text="from the camera added to Class 2").wait_for(timeout=FRAMES_MS)
    teach.get_by_role("button", name="Use the camera").click()
    assert teach.get_by_role("button", name="Hold to record camera frames into class 1").is_disabled()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ([GRANT_CAMERA], "No camera was found: connect one and try again, or choose an image file instead."),
        (
            [FAKE_CAMERA],
            "The camera is blocked for this page: allow it (the camera icon in the address bar), then try again.",
        ),
    ],
    ids=["no-camera", "refused"],
)
def test_no_camera_or_a_refused_permission_says_what_to_do(playwright, server_url, flags, message):
    browser = launch(playwright, *flags)
    try:
        page = browser.new_page()
        page.goto(server_url + "?panel=classify", wait_until="domcontentloaded")  # the page need not have booted
        page.get_by_role("button", name="Camera", exact=True).click()
        status = page.get_by_role("status", name="Camera status")
        status.filter(has_text=message).wait_for(timeout=30_000)
        assert page.get_by_role("button", name="Camera", exact=True).get_attribute("aria-pressed") == "false"
    finally:
        browser.close()
