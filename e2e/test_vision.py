"""The Vision tab and the vision examples, with Chromium's fake camera playing scikit-image's astronaut photo
(--use-file-for-fake-video-capture, a Y4M file made from static/samples/astronaut.png): each task finds what is there
live (drawn on the canvas, listed as text, frames per second and the backend shown) with a flat tensor count; a
sample photo; the examples that use pe.vision run from the gallery."""

import re

import numpy as np
import pytest
from conftest import BOOT_TIMEOUT_MS, CHROMIUM, QUIET_FLAGS, REPO, show_panel
from playwright.sync_api import expect

from tests.vision_cases import write_y4m

FRAMES_MS = 300_000
RUN_MS = 300_000
STATUS = "#vision .status[aria-label='Vision status']"


def rgb_of(playwright, path):
    """The PNG at path as uint8 RGB [height, width, 3], decoded by Chromium (no image library in the venv)."""
    browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=QUIET_FLAGS)
    try:
        page = browser.new_page()
        data = path.read_bytes().hex()
        width, height, rgba = page.evaluate(
            """async (hex) => {
                const bytes = new Uint8Array(hex.match(/../g).map((h) => parseInt(h, 16)));
                const bitmap = await createImageBitmap(new Blob([bytes], { type: "image/png" }));
                const context = new OffscreenCanvas(bitmap.width, bitmap.height).getContext("2d");
                context.drawImage(bitmap, 0, 0);
                const pixels = context.getImageData(0, 0, bitmap.width, bitmap.height).data;
                return [bitmap.width, bitmap.height, Array.from(pixels)];
            }""",
            data,
        )
    finally:
        browser.close()
    return np.array(rgba, np.uint8).reshape(height, width, 4)[..., :3]


@pytest.fixture(scope="module")
def page(playwright, server_url, tmp_path_factory):
    """A page on wasm in a browser whose fake camera films the astronaut photo, granted."""
    video = tmp_path_factory.mktemp("camera") / "astronaut.y4m"
    write_y4m(rgb_of(playwright, REPO / "static" / "samples" / "astronaut.png"), video)
    flags = ["--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"]
    browser = playwright.chromium.launch(
        executable_path=CHROMIUM,
        headless=True,
        args=[*QUIET_FLAGS, *flags, f"--use-file-for-fake-video-capture={video}"],
    )
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(server_url)
    page.wait_for_function("() => window.playground && playground.state === 'ready'", timeout=BOOT_TIMEOUT_MS)
    yield page
    browser.close()


def frames(page):
    found = re.search(r"· (\d+) frames? ·", page.locator(STATUS).inner_text())
    return int(found.group(1)) if found else 0


def wait_for_frames(page, n):
    page.wait_for_function(
        """([selector, n]) => {
            const found = / · (\\d+) frames? · /.exec(document.querySelector(selector).textContent);
            return found && Number(found[1]) >= n;
        }""",
        arg=[STATUS, n],
        timeout=FRAMES_MS,
    )


# each task, what the astronaut photo shows of it in the list, and how many frames the tensor count is watched over
# (no sample shows hands: that task's list says it found none, frame after frame)
TASKS = [
    ("Pose", r"^person \d+%: 1[0-7] of 17 keypoints seen \(nose, ", 100),
    ("Objects", r"^person \d+% at x \d+ to \d+, y \d+ to \d+$", 10),
    ("Faces", r"^face \d+%, happy at x \d+ to \d+, y \d+ to \d+, 6 points$", 30),
    ("Hands", r"^Nothing found \(hands\)\.$", 20),
]


@pytest.mark.parametrize(("task", "listed", "watched"), TASKS, ids=[t[0] for t in TASKS])
def test_each_task_runs_live_on_the_camera_with_results_drawn_listed_and_flat_memory(page, task, listed, watched):
    show_panel(page, "Vision")
    panel = page.get_by_role("region", name="Vision")
    panel.get_by_role("radio", name=task).check()
    camera = panel.get_by_role("button", name="Camera", exact=True)
    camera.click()
    expect(camera).to_have_attribute("aria-pressed", "true")
    wait_for_frames(page, 5)
    found = panel.get_by_role("list", name="Found")
    assert found.get_attribute("aria-live") == "polite"
    items = found.get_by_role("listitem").all_inner_texts()
    assert items and re.search(listed, items[0]), items
    assert panel.get_by_role("img", name="The image with what was found").is_visible()
    status = panel.get_by_role("status", name="Vision status").inner_text()
    assert re.match(r"wasm · \d+\.\d frames per second · \d+ frames · \d+ ms to detect$", status), status
    tensors = page.evaluate("playground.lastMemory.num_tensors")
    at = frames(page)
    wait_for_frames(page, at + watched)
    assert page.evaluate("playground.lastMemory.num_tensors") == tensors  # every frame's tensors were released
    camera.click()
    expect(camera).to_have_attribute("aria-pressed", "false")
    expect(panel.get_by_role("status", name="Vision status")).to_have_text(
        re.compile(r"^Camera off after \d+ frames\.$")
    )


def test_a_sample_photo_shows_the_pose_of_the_astronaut(page):
    show_panel(page, "Vision")
    panel = page.get_by_role("region", name="Vision")
    panel.get_by_role("radio", name="Pose").check()
    panel.get_by_role("group", name="Vision samples").get_by_role("button", name="Astronaut (PNG)").click()
    status = panel.get_by_role("status", name="Vision status")
    expect(status).to_have_text(re.compile(r"^wasm: 1 found in \d+ ms"), timeout=RUN_MS)
    item = panel.get_by_role("list", name="Found").get_by_role("listitem").first.inner_text()
    assert re.match(r"person \d+%: 1[0-7] of 17 keypoints seen \(nose, left eye, right eye", item), item
    answer = page.evaluate("playground.vision.last")
    assert answer["task"] == "pose" and len(answer["results"][0]["keypoints"]) == 17
    nose = answer["results"][0]["keypoints"][0]
    assert nose["name"] == "nose" and 150 < nose["x"] < 300 and 50 < nose["y"] < 200, nose  # her face, in 512x512
    # the canvas shows the photo with the pose drawn over it: the nose's dot, in the first pose's yellow
    drawn = page.evaluate(
        """([x, y]) => Array.from(document.querySelector('#vision canvas').getContext('2d')
            .getImageData(Math.round(x), Math.round(y), 1, 1).data)""",
        [nose["x"], nose["y"]],
    )
    assert drawn == [255, 212, 59, 255], drawn


def run_example(page, title):
    """Click the example in the gallery; its `result` once the run ended without an error."""
    show_panel(page, "Examples")
    page.get_by_role("status", name="Run state").evaluate("line => { line.textContent = '' }")
    page.get_by_role("region", name="Examples").get_by_role("button", name=title, exact=True).click()
    page.wait_for_function(
        "() => /Done in|after/.test(document.querySelector('#run-state').textContent)", timeout=RUN_MS
    )
    state = page.get_by_role("status", name="Run state").text_content()
    assert state.startswith("Done in"), f"{title}: {state}\n{page.get_by_role('log', name='Output').inner_text()}"
    return page.evaluate("playground.runPython('result')")


@pytest.mark.parametrize(
    ("title", "listed", "drawn"),
    [
        ("Detect objects in a photo", ["person"], r"^Objects: 512x512, 1 box \(person \d+%\)$"),
        ("Faces and emotions", None, r"^Faces: 512x512, 1 box \(face \d+%\), 6 points$"),
    ],
    ids=["objects", "faces"],
)
def test_the_photo_examples_draw_what_they_found(page, title, listed, drawn):
    result = run_example(page, title)
    if listed is not None:
        assert result == listed, result
    else:
        (face,) = result
        assert max(face["emotion"], key=face["emotion"].get) == "happy" and len(face["landmarks"]) == 6, face
    (picture,) = page.get_by_role("log", name="Output").get_by_role("img").all()
    assert re.match(drawn, picture.get_attribute("aria-label")), picture.get_attribute("aria-label")


def test_the_pose_example_draws_the_cameras_frames_live_in_one_picture(page):
    before = page.evaluate("playground.memory()")["num_tensors"]
    result = run_example(page, "Pose from the camera")
    assert result == {"frames": 30, "keypoints": 17}, result
    output = page.get_by_role("log", name="Output")
    pictures = output.get_by_role("img").all()
    assert len(pictures) == 1  # each frame replaced the last (show_image's key)
    assert re.match(r"Frame 30: \d+ keypoints: \d+x\d+, 1[0-7] points$", pictures[0].get_attribute("aria-label"))
    page.evaluate("playground.runPython('detector.dispose()')")
    assert page.evaluate("playground.memory()")["num_tensors"] == before  # the frames' tensors went with each step


def count(teach, n):
    return int(teach.get_by_role("listitem", name=f"Class {n}").locator(".teach-count").inner_text().split()[0])


def test_teach_pose_classes_recorded_trained_predicted_live_and_kept_across_a_reload(page):
    show_panel(page, "Teach")
    teach = page.get_by_role("region", name="Teach")
    teach.get_by_role("radio", name="Poses").check()
    expect(teach.get_by_role("status", name="Teach status")).to_have_text("Classes of poses: add examples to each.")
    teach.get_by_role("textbox", name="Class 1 name").fill("astronaut")
    teach.get_by_role("textbox", name="Class 2 name").fill("nobody")
    teach.get_by_role("button", name="Use the camera").click()
    record = teach.get_by_role("button", name="Hold to record camera frames into class 1")
    expect(record).to_be_enabled()
    record.hover()
    page.mouse.down()
    page.wait_for_function(
        "() => Number(document.querySelector('.teach-class .teach-count').textContent.split(' ')[0]) >= 6",
        timeout=FRAMES_MS,
    )
    page.mouse.up()
    for sample in ("Cat", "Coffee", "Rocket"):
        teach.get_by_role("button", name=f"Add the {sample} sample to class 2").click()
    expect(teach.get_by_role("listitem", name="Class 2").locator(".teach-count")).to_have_text(
        "3 images", timeout=RUN_MS
    )
    recorded = count(teach, 1)
    features = page.evaluate("playground.teach.embed('samples/astronaut.png').then((f) => Array.from(f))")
    assert len(features) == 51 and all(0 <= v <= 1 for v in features[2::3])  # (x / width, y / height, score) x 17

    teach.get_by_label("Epochs").fill("40")
    teach.get_by_role("button", name="Train", exact=True).click()
    status = teach.get_by_role("status", name="Teach status")
    expect(status).to_contain_text(f"Trained on {recorded + 3} images for 40 epochs", timeout=RUN_MS)
    live = teach.get_by_role("button", name="Predict live from the camera")
    live.click()
    expect(live).to_have_attribute("aria-pressed", "true")
    expect(status).to_have_text(
        re.compile(r"^Live: astronaut \(\d+%\) · ([3-9]|\d\d+) frames classified"), timeout=RUN_MS
    )
    best = teach.get_by_role("list", name="Your classes' probabilities").get_by_role("listitem").first
    assert best.inner_text().startswith("astronaut: ")
    live.click()
    expect(live).to_have_attribute("aria-pressed", "false")
    teach.get_by_role("button", name="Use the camera").click()
    assert (
        page.evaluate("playground.teach.exportModel()")["modelJson"]["userDefinedMetadata"]["teach"]["kind"] == "pose"
    )

    page.reload()
    page.wait_for_function("() => window.playground && playground.state === 'ready'", timeout=BOOT_TIMEOUT_MS)
    assert page.evaluate("playground.teach.restored") is True
    teach = page.get_by_role("region", name="Teach")
    assert teach.get_by_role("radio", name="Poses").is_checked()
    expect(teach.get_by_role("textbox", name="Class 1 name")).to_have_value("astronaut")
    assert (count(teach, 1), count(teach, 2)) == (recorded, 3)
    result = page.evaluate("playground.teach.train({epochs: 5})")  # the kept features train without a new embedding
    assert result["classes"] == ["astronaut", "nobody"] and result["examples"] == recorded + 3
    teach.get_by_role("button", name="Clear classes").click()
    expect(teach.get_by_role("status", name="Teach status")).to_contain_text("Cleared")
    page.reload()
    page.wait_for_function("() => window.playground && playground.state === 'ready'", timeout=BOOT_TIMEOUT_MS)
    assert page.evaluate("playground.teach.restored") is False
