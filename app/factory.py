"""The FastAPI app: page and config, offline Pyodide, engine wheel, first-visit bytecode, the classifier's pipeline
list, model weight endpoint; gzip copies of what a first visit downloads."""

from fastapi import FastAPI

from app.assets import pyodide_dir
from app.bytecode import FirstVisitBytecode
from app.classifier_pipelines import ClassifierPipelines
from app.compression import GzipCopies
from app.cors import ModelsCORS
from app.csp import content_security_policy
from app.downloads import downloads_router
from app.engine_wheel import EngineWheel
from app.errors import install_error_handlers
from app.head_limit import HeadLimit
from app.models_router import models_router
from app.page import page_router
from app.settings import Settings, cdn_origin


def create_app(settings: Settings | None = None) -> FastAPI:
    """Nothing is fetched or built here: the engine wheel, the first-visit bytecode, the pipeline list and the gzip
    copies are built on first use (or by the CLI at start)."""
    settings = settings or Settings()
    app = FastAPI(title="py_engine playground", docs_url=None, redoc_url=None, openapi_url=None)
    install_error_handlers(app)
    engine = EngineWheel(settings.engine_source, settings.assets_dir / "engine")
    csp = content_security_policy(cdn_origin(settings.pyodide_cdn) if settings.pyodide_cdn else None)
    bytecode = FirstVisitBytecode(
        pyodide_dir(settings.assets_dir), settings.static_dir, settings.assets_dir / "bytecode"
    )
    pipelines = ClassifierPipelines(settings.models_dir, settings.assets_dir / "pipelines")
    gzip_copies = GzipCopies(settings.assets_dir / "gzip")
    app.state.settings, app.state.engine, app.state.bytecode = settings, engine, bytecode
    app.state.pipelines, app.state.gzip_copies = pipelines, gzip_copies
    app.include_router(models_router(settings.models_dir))
    app.include_router(downloads_router(settings.assets_dir, engine, bytecode, pipelines, gzip_copies))
    # last: its catch-all serves static/
    app.include_router(page_router(settings, engine, bytecode, pipelines, gzip_copies, csp))
    app.add_middleware(HeadLimit)
    app.add_middleware(ModelsCORS)  # added last, so outside HeadLimit: its 431 carries CORS on /models too
    return app
