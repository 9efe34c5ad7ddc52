"""The page: / (static/index.html with its panels filled in, app/page_panels.py, under the Content-Security-Policy),
/config.json, and static/ files.

Static files are revalidated on every use (no-cache + ETag), so an edit shows on the next reload.
Every static answer carries the CSP: a worker script gets its policy from its own response. It also carries
COOP/COEP, which make the page cross-origin isolated: only then has it SharedArrayBuffer, which the Stop button
needs (Pyodide's interrupt buffer); a dedicated worker must send COEP itself to be loaded by such a page.
"""

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from app.bytecode import FirstVisitBytecode, page_modules
from app.classifier_pipelines import ClassifierPipelines
from app.compression import GzipCopies, compressible
from app.downloads import current_wheel
from app.engine_wheel import EngineWheel
from app.errors import NOSNIFF, HTTPError, clip
from app.http_files import REVALIDATE, content_type, file_sha256, send
from app.page_panels import PanelError, filled_page
from app.paths import check_relative, safe_file
from app.settings import Settings

# never looked up in static/: served by their own routes, or (src) the npm sources and packages static/vendor/'s
# bundles are built from, which the page does not load
RESERVED = ("models", "pyodide", "engine", "bytecode", "pipelines", "src")
ISOLATED = {"Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp"}


def page_router(
    settings: Settings,
    engine: EngineWheel,
    bytecode: FirstVisitBytecode,
    pipelines: ClassifierPipelines,
    gzip_copies: GzipCopies,
    csp: str,
) -> APIRouter:
    router = APIRouter()

    def static_file(rel: str, request: Request):
        check_relative(rel)
        if rel.split("/")[0] in RESERVED:
            raise HTTPError(404, f"no such resource: {clip('/' + rel)}")
        if rel == "index.html":
            return page(request)
        file = safe_file(settings.static_dir, rel)
        if file is None:
            raise HTTPError(404, f"no file {clip(rel)} in the static folder")
        headers = {"Content-Security-Policy": csp, **ISOLATED}
        return send(
            request,
            path=file,
            etag=file_sha256(file),
            cache_control=REVALIDATE,
            media_type=content_type(rel),
            headers=headers,
            gzip_copies=gzip_copies if compressible(rel) else None,
        )

    def page(request: Request):
        try:
            filled = filled_page(settings.static_dir)
        except PanelError as e:
            raise HTTPError(500, f"the page cannot be made: {e}") from None
        if filled is None:
            raise HTTPError(404, "no file 'index.html' in the static folder")
        return send(
            request,
            data=filled.body,
            etag=filled.sha256,
            cache_control=REVALIDATE,
            media_type=content_type("index.html"),
            headers={"Content-Security-Policy": csp, **ISOLATED},
            gzipped=filled.gzipped,
        )

    @router.api_route("/config.json", methods=["GET", "HEAD"])
    def config() -> JSONResponse:
        wheel = current_wheel(engine)
        modules = page_modules(settings.static_dir)
        compiled = bytecode.current(wheel)  # None while it is built: the page compiles from source meanwhile
        body = {
            "pyodide_index_url": settings.pyodide_index_url,
            "engine_wheel_url": wheel.url,
            "packages": ["numpy"],
            # the page's Python modules, which the worker writes into /home/pyodide at boot (static/worker.js)
            "python_modules": [module.relative_to(settings.static_dir).as_posix() for module in modules],
            "bytecode": compiled.config() if compiled else None,
            "pipelines": planned.config() if (planned := pipelines.current(wheel)) else None,  # None: not made yet
            "classifier": pipelines.classifier_url(),  # its files download while Pyodide boots (static/worker/prefetch.js)
        }
        return JSONResponse(body, headers={"Cache-Control": "no-store", **NOSNIFF})

    @router.api_route("/", methods=["GET", "HEAD"])
    def index(request: Request):
        return static_file("index.html", request)

    @router.api_route("/{path:path}", methods=["GET", "HEAD"])
    def static(path: str, request: Request):
        return static_file(path + "index.html" if path.endswith("/") else path, request)

    return router
