"""A big file in the Files panel (static/panels/files/files_worker.js): upload, Python's read, download and the boot that brings it
back from IndexedDB, next to the browser reading the same File by itself.

    .venv/bin/python bench/upload_files.py [--mib 100] [--url http://127.0.0.1:8000/]

The File is made in the page (what a file input or a drop gives the page: the bytes in the browser's blob store), so
the upload is the page's own work: the File handed to the worker, its bytes copied into Pyodide's file system and
stored in IndexedDB. Prints milliseconds and ratios against the reference, the browser's `await file.arrayBuffer()`.
Timings are for reading, never asserted in tests.
"""

import argparse
import time

from harness import launch, playground_server
from playwright.sync_api import sync_playwright

MAKE = """(mib) => {
  window.bigFile = new File([new Uint8Array(mib * 2 ** 20).fill(7)], 'big.bin');
  return window.bigFile.size;
}"""
TIMED = """async (what) => {
  const start = performance.now();
  const work = {
    read: () => bigFile.arrayBuffer(),
    upload: () => playground.files.upload([bigFile]),
    python: () => playground.runPython("len(open('big.bin', 'rb').read())"),
    download: () => playground.files.download('big.bin'),
    remove: () => playground.files.remove('big.bin'),
  }[what];
  const value = await work();
  return [performance.now() - start, typeof value === 'number' ? value : null];
}"""


def boot(page):
    """(ready_ms, the boot's files_ms: the working directory brought back from IndexedDB)"""
    page.wait_for_function("() => window.playground && playground.state !== 'starting'", timeout=300_000)
    info = page.evaluate("playground.ready")
    return info["ready_ms"], info["timings"]["files_ms"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=int, default=100)
    parser.add_argument("--url")
    args = parser.parse_args()
    with playground_server(args.url, needs_model=False) as url, sync_playwright() as p:
        browser = launch(p)
        page = browser.new_context(accept_downloads=True).new_page()
        page.goto(url + "?backend=numpy")
        boot(page)
        page.reload()  # a boot with an empty working directory, the browser's caches warm
        boot_empty, files_empty = boot(page)
        size = page.evaluate(MAKE, args.mib)
        read, _ = page.evaluate(TIMED, "read")
        upload, _ = page.evaluate(TIMED, "upload")
        python, length = page.evaluate(TIMED, "python")
        with page.expect_download():
            download, _ = page.evaluate(TIMED, "download")
        assert length == size, (length, size)
        page.reload()
        boot_with_file, files_with_file = boot(page)
        listed = page.evaluate("playground.files.list()")
        assert [f["size"] for f in listed if f["name"] == "big.bin"] == [size], listed
        remove, _ = page.evaluate(TIMED, "remove")
        browser.close()
    print(f"{args.mib} MiB file, {time.strftime('%Y-%m-%d')}")
    print(f"  reference: the browser reads the File           {read:8.0f} ms")
    for name, ms in [
        ("upload (worker, file system, IndexedDB)", upload),
        ("Python reads it (open().read())", python),
        ("download (to a Blob, saved)", download),
        ("delete", remove),
    ]:
        print(f"  {name:47s} {ms:8.0f} ms  {ms / read:6.1f}x the reference")
    print(
        f"  boot, empty working directory                   {boot_empty:8.0f} ms  (its files phase {files_empty:.0f} ms)"
    )
    print(
        f"  boot with the file (IndexedDB -> file system)   {boot_with_file:8.0f} ms  "
        f"{boot_with_file / boot_empty:6.2f}x the empty boot (its files phase {files_with_file:.0f} ms)"
    )


if __name__ == "__main__":
    main()
