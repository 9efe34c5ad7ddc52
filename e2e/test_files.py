"""The user's files through accessible roles and names: the Files panel (upload by its button and by a drop anywhere on
the page, read in Python, written by Python and listed, downloaded byte for byte, renamed, deleted, kept across a
reload, a file over the limit refused with its size and the limit) and the editor's files as tabs (two files, one
importing the other and re-imported when edited; Ctrl+S saves; the tabs kept across a reload; an example opens in a
tab of its own); the keyboard path through the editor (Tab in, Tab indents, Esc then Tab out, its focus ring and
description) and Stop's shortcut, Ctrl+."""

import re

import pytest
from conftest import BOOT_TIMEOUT_MS, editor, show_panel, wait_until_idle
from playwright.sync_api import expect

RUN_MS = 120_000
CSV = "name,count\nadam,3\neve,5\n"


@pytest.fixture(scope="module")
def page(webgpu_browser, server_url):
    """A page in a browser profile of its own (its IndexedDB and localStorage start empty), as it starts (wasm)."""
    context = webgpu_browser.new_context()
    page = context.new_page()
    page.goto(server_url)
    ready(page)
    yield page
    context.close()


def ready(page):
    page.wait_for_function("() => window.playground && playground.state === 'ready'", timeout=BOOT_TIMEOUT_MS)
    page.wait_for_function("() => document.querySelector('#editor').shadowRoot")  # CodeMirror has loaded


def files_region(page):
    return page.get_by_role("region", name="Files", exact=True)


def listed(page):
    """The Files panel's list: {name: size text}."""
    items = files_region(page).get_by_role("list", name="Files in the working directory").get_by_role("listitem")
    return {item.locator(".file-name").inner_text(): item.locator(".file-size").inner_text() for item in items.all()}


def files_status(page):
    return page.get_by_role("status", name="Files status")


def type_code(page, lines):
    """Replace the active file's code by typing `lines` (without their indentation: the editor indents after a colon)."""
    editor(page).click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.type("\n".join(lines))


def run(page):
    """Ctrl+Enter in the editor; the Output log's text once the run ended."""
    state = page.get_by_role("status", name="Run state")
    state.evaluate("line => { line.textContent = '' }")
    editor(page).press("Control+Enter")
    page.wait_for_function(
        "() => /Done in|after/.test(document.querySelector('#run-state').textContent)", timeout=RUN_MS
    )
    return page.get_by_role("log", name="Output").inner_text()


def python(page, code):
    return page.evaluate("code => playground.runPython(code)", code)


def file_tab(page, name):
    return page.get_by_role("tablist", name="Open files").get_by_role("tab", name=name, exact=True)


def test_a_csv_uploaded_by_the_button_and_a_file_dropped_on_the_page_are_files_python_reads(page, tmp_path):
    show_panel(page, "Files")
    assert files_region(page).get_by_text("No files yet.").is_visible()
    data = tmp_path / "data.csv"
    data.write_text(CSV)
    with page.expect_file_chooser() as chooser:
        files_region(page).get_by_role("button", name="Upload files").click()
    chooser.value.set_files(str(data))
    expect(files_status(page)).to_have_text("Uploaded data.csv (24 B).")
    assert listed(page) == {"data.csv": "24 B"}
    assert python(page, "import csv; list(csv.DictReader(open('data.csv')))") == [
        {"name": "adam", "count": "3"},
        {"name": "eve", "count": "5"},
    ]
    # dropped on the Output log, with another panel showing: the Files panel opens with it
    show_panel(page, "Charts")
    drop(page, page.get_by_role("log", name="Output"), "notes.txt", "dropped text")
    expect(files_status(page)).to_have_text("Uploaded notes.txt (12 B).")
    assert files_region(page).is_visible()
    # dropped on the editor: uploaded, not pasted into the code
    code = editor(page).inner_text()
    drop(page, editor(page), "more.txt", "not code")
    expect(files_status(page)).to_have_text("Uploaded more.txt (8 B).")
    assert editor(page).inner_text() == code
    assert python(page, "import os; [open(n).read() for n in ('notes.txt', 'more.txt')], os.getcwd()") == [
        ["dropped text", "not code"],
        "/files",
    ]
    assert listed(page) == {"data.csv": "24 B", "more.txt": "8 B", "notes.txt": "12 B"}
    # dropped on Classify's drop area: the image is Classify's, not a file
    show_panel(page, "Classify")
    drop(page, page.get_by_label(re.compile("Drop an image here")), "photo.png", "not a picture")
    expect(page.get_by_role("region", name="Classify an image")).to_contain_text(
        "Could not classify the image", timeout=RUN_MS
    )
    assert "photo.png" not in listed(page)


def drop(page, target, name, text):
    """Drop a file on `target` as a user dragging it from their desktop would."""
    transfer = page.evaluate_handle(
        "([name, text]) => { const t = new DataTransfer(); t.items.add(new File([text], name)); return t; }",
        [name, text],
    )
    target.dispatch_event("dragover", {"dataTransfer": transfer})
    target.dispatch_event("drop", {"dataTransfer": transfer})


def test_what_python_writes_is_listed_after_the_run_and_downloads_byte_for_byte(page):
    type_code(page, ["with open('out.bin', 'wb') as f:", "f.write(bytes(range(256)) * 4)"])
    run(page)
    show_panel(page, "Files")
    expect(files_region(page).get_by_text("out.bin")).to_be_visible()
    assert listed(page)["out.bin"] == "1.0 KiB"
    with page.expect_download() as download:
        files_region(page).get_by_role("button", name="Download out.bin").click()
    assert download.value.suggested_filename == "out.bin"
    with open(download.value.path(), "rb") as f:
        assert f.read() == bytes(range(256)) * 4


def test_rename_and_delete_ask_and_python_sees_the_result(page):
    show_panel(page, "Files")
    files_region(page).get_by_role("button", name="Rename notes.txt").click()
    dialog = page.get_by_role("dialog", name="Rename notes.txt")
    dialog.get_by_role("textbox", name="New name").fill("data.csv")
    dialog.get_by_role("button", name="Rename").click()  # a name that is taken
    expect(files_region(page).get_by_role("alert")).to_contain_text('there is a file "data.csv" already')
    files_region(page).get_by_role("button", name="Rename notes.txt").click()
    dialog.get_by_role("textbox", name="New name").fill("renamed.txt")
    dialog.get_by_role("button", name="Rename").click()
    expect(files_status(page)).to_have_text("Renamed notes.txt to renamed.txt.")
    assert "renamed.txt" in listed(page) and "notes.txt" not in listed(page)
    assert python(page, "import os; open('renamed.txt').read(), os.path.exists('notes.txt')") == ["dropped text", False]

    files_region(page).get_by_role("button", name="Delete more.txt").click()
    page.get_by_role("dialog", name="Delete more.txt?").get_by_role("button", name="Cancel").click()
    assert "more.txt" in listed(page)
    files_region(page).get_by_role("button", name="Delete more.txt").click()
    page.get_by_role("dialog", name="Delete more.txt?").get_by_role("button", name="Delete").click()
    expect(files_status(page)).to_have_text("Deleted more.txt.")
    assert "more.txt" not in listed(page)
    assert python(page, "import os; os.path.exists('more.txt')") is False


def test_a_file_over_the_limit_is_refused_with_its_size_and_the_limit(page):
    # 300 MiB made of one MiB's blob: the browser holds the MiB once, and the worker refuses without reading
    refused = page.evaluate(
        """() => {
             const mib = new Blob([new Uint8Array(2 ** 20)]);
             return playground.files.upload([new File(Array(300).fill(mib), 'huge.bin')])
               .then(() => 'uploaded', (error) => error.message);
           }"""
    )
    assert refused == (
        "huge.bin is 300.0 MiB: a file can have 120.0 MiB at most here (the browser's storage keeps no bigger one); "
        "nothing was uploaded"
    ), refused
    assert "huge.bin" not in listed(page)
    # one that Python writes is there for the code, and the panel says it cannot be kept, nor any file until it goes
    type_code(page, ["open('huge.bin', 'wb').write(bytes(130 * 2 ** 20))"])
    run(page)
    show_panel(page, "Files")
    note = files_region(page).get_by_role("note")
    expect(note).to_contain_text("Files are not kept across reloads here: the browser's storage refused them")
    assert "files of up to 120.0 MiB are kept" in note.inner_text()
    assert listed(page)["huge.bin"] == "130.0 MiB"
    page.evaluate("playground.files.remove('huge.bin')")
    expect(note).to_be_hidden()


def test_two_editor_files_import_each_other_and_an_edited_module_is_imported_again(page):
    page.get_by_role("button", name="New file").click()
    dialog = page.get_by_role("dialog", name="New file")
    dialog.get_by_role("textbox", name="File name").fill("lib/helpers.py")
    dialog.get_by_role("button", name="Create").click()
    expect(page.get_by_role("status", name="Editor files")).to_contain_text("a file name cannot hold /")
    assert page.get_by_role("tablist", name="Open files").get_by_role("tab").all_inner_texts() == ["main.py"]
    page.get_by_role("button", name="New file").click()
    dialog.get_by_role("textbox", name="File name").fill("helpers.py")
    dialog.get_by_role("button", name="Create").click()
    expect(file_tab(page, "helpers.py")).to_have_attribute("aria-selected", "true")
    page.keyboard.type('def greet(name):\nreturn "hi " + name')
    page.keyboard.press("Control+s")
    expect(page.get_by_role("status", name="Editor files")).to_have_text("Saved helpers.py.")
    assert python(page, "open('helpers.py').read()") == 'def greet(name):\n    return "hi " + name'

    file_tab(page, "main.py").click()
    type_code(page, ["import helpers", "helpers.greet('ada')"])
    assert run(page).strip() == "hi ada"
    # helpers.py edited and not saved: Run saves every open file, and the module is imported afresh
    file_tab(page, "helpers.py").click()
    editor(page).click()
    page.keyboard.press("Control+End")
    page.keyboard.type(".upper()")
    expect(file_tab(page, "helpers.py")).to_have_attribute("title", re.compile("Unsaved"))
    file_tab(page, "main.py").click()
    assert run(page).strip() == "hi ADA"
    assert page.evaluate("playground.editorFiles()") == [
        {"name": "main.py", "unsaved": False},
        {"name": "helpers.py", "unsaved": False},
    ]


def test_an_example_opens_in_a_tab_of_its_own_and_leaves_the_users_files_be(page):
    file_tab(page, "main.py").click()
    mine = editor(page).inner_text()
    show_panel(page, "Examples")
    page.get_by_role("region", name="Examples").get_by_role("button", name="Tidy vs a leak").click()
    expect(file_tab(page, "tidy_vs_leak.py")).to_have_attribute("aria-selected", "true")
    page.wait_for_function("() => /Done in/.test(document.querySelector('#run-state').textContent)", timeout=RUN_MS)
    assert "pe.tidy" in editor(page).inner_text()
    file_tab(page, "main.py").click()
    assert editor(page).inner_text() == mine


def test_files_and_editor_tabs_are_kept_across_a_reload(page):
    file_tab(page, "helpers.py").click()
    page.reload()
    ready(page)
    tabs = page.get_by_role("tablist", name="Open files").get_by_role("tab")
    assert tabs.all_inner_texts() == ["main.py", "helpers.py", "tidy_vs_leak.py"]
    expect(file_tab(page, "helpers.py")).to_have_attribute("aria-selected", "true")
    assert editor(page).inner_text() == 'def greet(name):\n    return "hi " + name.upper()'
    show_panel(page, "Files")
    expect(files_region(page).get_by_text("renamed.txt")).to_be_visible()
    assert set(listed(page)) == {"data.csv", "helpers.py", "main.py", "out.bin", "renamed.txt", "tidy_vs_leak.py"}
    assert python(page, "open('data.csv').read()") == CSV
    file_tab(page, "main.py").click()
    page.keyboard.press("ArrowRight")  # the arrow keys move between the tabs, and the focus with them
    expect(file_tab(page, "helpers.py")).to_be_focused()
    expect(file_tab(page, "helpers.py")).to_have_attribute("aria-selected", "true")
    page.keyboard.press("ArrowLeft")
    expect(file_tab(page, "main.py")).to_be_focused()
    assert run(page).strip() == "hi ADA"


def test_close_saves_a_file_and_open_in_files_brings_it_back(page):
    file_tab(page, "helpers.py").click()
    editor(page).click()
    page.keyboard.press("Control+End")
    page.keyboard.type("  # closed")
    page.get_by_role("button", name="Close helpers.py").click()
    expect(page.get_by_role("status", name="Editor files")).to_have_text(
        "Closed helpers.py: it is saved in Files, where Open brings it back."
    )
    assert file_tab(page, "helpers.py").count() == 0
    show_panel(page, "Files")
    files_region(page).get_by_role("button", name="Open helpers.py").click()
    expect(file_tab(page, "helpers.py")).to_have_attribute("aria-selected", "true")
    assert editor(page).inner_text().endswith(".upper()  # closed")
    assert "helpers_2.py" not in page.get_by_role("tablist", name="Open files").inner_text()


def test_the_keyboard_goes_into_the_editor_indents_and_leaves_by_esc_then_tab(page):
    in_editor = "() => document.activeElement.id === 'editor' && !!document.activeElement.shadowRoot.activeElement"
    file_tab(page, "main.py").click()
    close = page.get_by_role("button", name="Close main.py")
    close.focus()  # the last control before the editor
    page.keyboard.press("Tab")
    assert page.evaluate(in_editor)
    expect(editor(page)).to_have_accessible_description(re.compile("press Esc, then Tab, to leave the editor"))
    # the focus ring (CodeMirror marks itself focused just after the focus event)
    page.wait_for_function(
        "() => { const s = getComputedStyle(document.querySelector('#editor').shadowRoot.querySelector('.cm-editor'));"
        " return s.outlineStyle === 'solid' && s.outlineWidth === '3px'; }"
    )
    page.keyboard.press("Control+End")
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")  # indents
    assert page.evaluate(in_editor)
    assert editor(page).inner_text().endswith("\n    ")
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    assert not page.evaluate(in_editor)


def test_ctrl_period_stops_a_run_from_the_editor(page):
    stop = page.get_by_role("button", name="Stop", exact=True)
    assert stop.get_attribute("aria-keyshortcuts") == "Control+."
    assert "Ctrl+." in stop.inner_text()
    type_code(page, ["import asyncio", "await asyncio.sleep(60)"])
    editor(page).press("Control+Enter")
    page.wait_for_function("() => playground.running !== null")
    page.keyboard.press("Control+.")
    wait_until_idle(page, 10_000)
    assert page.get_by_role("status", name="Run state").inner_text().startswith("KeyboardInterrupt after")


def test_rename_in_the_editor_renames_the_saved_file_too(page):
    page.get_by_role("button", name="New file").click()
    page.get_by_role("dialog", name="New file").get_by_role("textbox", name="File name").fill("scratch.py")
    page.get_by_role("dialog", name="New file").get_by_role("button", name="Create").click()
    expect(file_tab(page, "scratch.py")).to_have_attribute("aria-selected", "true")
    page.keyboard.type("NOTE = 'kept'")
    page.keyboard.press("Control+s")
    expect(page.get_by_role("status", name="Editor files")).to_have_text("Saved scratch.py.")
    page.get_by_role("region", name="Code").get_by_role("button", name="Rename scratch.py").click()
    dialog = page.get_by_role("dialog", name="Rename scratch.py")
    dialog.get_by_role("textbox", name="New name").fill("notes.py")
    dialog.get_by_role("button", name="Rename").click()
    expect(file_tab(page, "notes.py")).to_have_attribute("aria-selected", "true")
    show_panel(page, "Files")
    expect(files_region(page).get_by_role("button", name="Open notes.py")).to_be_visible()
    assert "scratch.py" not in listed(page)
    assert python(page, "import notes; notes.NOTE") == "kept"


def test_an_upload_over_a_file_open_in_the_editor_shows_in_its_tab(page):
    file_tab(page, "notes.py").click()
    page.evaluate("playground.files.upload([new File([\"NOTE = 'uploaded'\\n\"], 'notes.py')])")
    expect(editor(page)).to_have_text("NOTE = 'uploaded'")
    assert run(page).strip() == ""  # Run saves the tab, which holds the upload now
    assert python(page, "import notes; notes.NOTE") == "uploaded"
    # deleted in Files while open: the tab is unsaved, and Ctrl+S writes it again
    page.evaluate("playground.files.remove('notes.py')")
    expect(file_tab(page, "notes.py")).to_have_attribute("title", re.compile("Unsaved"))
    editor(page).press("Control+s")
    expect(page.get_by_role("status", name="Editor files")).to_have_text("Saved notes.py.")
    assert python(page, "open('notes.py').read()") == "NOTE = 'uploaded'\n"
