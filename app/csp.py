"""The Content-Security-Policy of the page (and of its worker scripts, which get their own policy
from their own response): what Pyodide needs and nothing else. Each source, and why it is there:

- default-src 'none': start from nothing; every kind of load below is opened on purpose.
- script-src 'self': the page's external scripts, the worker script, and pyodide.js / pyodide.asm.js,
  which the worker loads from /pyodide/. No 'unsafe-inline': the page has no inline scripts.
  'wasm-unsafe-eval': WebAssembly.compile/instantiate of pyodide.asm.wasm, of the compiled
  extension modules in package wheels (numpy's .so files) and of the wasm backend's SIMD kernels
  (py_engine/backends/wasm/kernels.wasm, from the engine wheel); it allows wasm only, not JS eval.
  Pyodide 0.27.7 needs no 'unsafe-eval' (checked in headless Chromium: boot, loadPackage numpy,
  the engine wheel unpacked, import py_engine, a memory snapshot restored, with no violation reported).
  With a CDN configured, its origin too, for pyodide.js and pyodide.asm.js.
- worker-src 'self': the dedicated worker Pyodide runs in is a same-origin file (no blob: workers).
- connect-src 'self': fetch() of /config.json, the Pyodide files (wasm, stdlib zip, lock, wheels),
  the engine wheel and /models; with a CDN, its origin, which then serves the Pyodide files.
  https://pypi.org and https://files.pythonhosted.org: micropip.install("name") in the page's code
  reads the package's metadata from PyPI's JSON API and downloads its wheel from PyPI's file host
  (both answer with CORS headers); nothing else of the web is reachable from the page.
- style-src 'self', img-src 'self' data: blob:: the page's stylesheet; images the playground makes
  itself (canvas snapshots as data: or blob: URLs) and sample images.
- object-src, base-uri, form-action 'none' and frame-ancestors 'none': no plugins, no <base>
  hijacking, no form posts, and no framing of the page (clickjacking).
"""

PYPI = "https://pypi.org https://files.pythonhosted.org"  # micropip's index and file host


def content_security_policy(cdn_origin: str | None = None) -> str:
    cdn = f" {cdn_origin}" if cdn_origin else ""
    directives = {
        "default-src": "'none'",
        "script-src": f"'self' 'wasm-unsafe-eval'{cdn}",
        "worker-src": "'self'",
        "connect-src": f"'self'{cdn} {PYPI}",
        "style-src": "'self'",
        "img-src": "'self' data: blob:",
        "object-src": "'none'",
        "base-uri": "'none'",
        "form-action": "'none'",
        "frame-ancestors": "'none'",
    }
    return "; ".join(f"{name} {value}" for name, value in directives.items())
