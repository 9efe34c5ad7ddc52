"""The command line: python -m app serve | fetch-assets | fetch-models | build-wheel | convert | export
(see --help)."""

import argparse
import os
import sys
import time
from pathlib import Path

from app.assets import AssetError, ensure_pyodide, read_manifest
from app.convert import add_convert_parser, convert_model
from app.engine_wheel import EngineWheel, WheelError
from app.export import ExportError, export_site
from app.graph_models import fetch_models
from app.settings import Settings


def settings_from(args: argparse.Namespace) -> Settings:
    given = {
        "static_dir": getattr(args, "static", None),
        "assets_dir": args.assets,
        "models_dir": getattr(args, "models", None),
        "pyodide_cdn": getattr(args, "pyodide_cdn", None),
    }
    return Settings(**{k: v.expanduser().resolve() if isinstance(v, Path) else v for k, v in given.items() if v})


def fetch_assets(settings: Settings, force: bool = False) -> None:
    start = time.perf_counter()
    folder = ensure_pyodide(settings.assets_dir, force=force)
    files = read_manifest(folder)
    print(f"Pyodide: {len(files)} verified files in {folder} ({time.perf_counter() - start:.1f} s)")


def build_wheel(settings: Settings) -> EngineWheel:
    engine = EngineWheel(settings.engine_source, settings.assets_dir / "engine")
    wheel = engine.current()
    print(f"engine wheel: {wheel.path} (sha256 {wheel.sha256}), served at {wheel.url}")
    return engine


def settings_environment(settings: Settings) -> dict[str, str]:
    """The PLAYGROUND_* variables from which Settings() in another process reads these settings."""
    env = {
        "PLAYGROUND_STATIC": str(settings.static_dir),
        "PLAYGROUND_ASSETS": str(settings.assets_dir),
        "PLAYGROUND_MODELS": str(settings.models_dir),
    }
    return env | ({"PLAYGROUND_PYODIDE_CDN": settings.pyodide_cdn} if settings.pyodide_cdn else {})


def gzip_first_visit(settings: Settings, copies, built) -> None:
    """Make the gzip copies of the local Pyodide runtime's files and of `built` (the bytecode, the pipeline list) now
    (about 1 s the first time, kept in the assets folder), so that a first visit gets them; a page's own files get
    theirs at first request."""
    from app.assets import pyodide_dir, read_manifest
    from app.compression import compressible

    folder = pyodide_dir(settings.assets_dir)
    files = {} if settings.pyodide_cdn else (read_manifest(folder) or {})
    wanted = [(folder / name, info["sha256"]) for name, info in files.items() if compressible(name)]
    wanted += [(b.path, b.sha256) for b in built]
    try:
        made = [copy for path, sha256 in wanted if (copy := copies.make(path, sha256))]
    except OSError as e:
        print(f"gzip copies: not made ({e}); files are sent as they are")
        return
    print(f"gzip copies: {len(made)} files, {sum(p.stat().st_size for p in made) / 1e6:.1f} MB")


def serve(settings: Settings, host: str, port: int, workers: int = 1, header_timeout: float | None = None) -> None:
    """uvicorn with the timeouts and limits of app/connection_limits.py; with workers > 1, that many processes share the
    port, each building the app from the PLAYGROUND_* environment (the wheel is built once, here, first)."""
    import uvicorn

    from app.connection_limits import HEADER_TIMEOUT, uvicorn_options
    from app.factory import create_app

    if settings.pyodide_cdn:
        print(f"Pyodide: from {settings.pyodide_cdn}")
    else:
        fetch_assets(settings)
    app = create_app(settings)
    wheel = app.state.engine.current()  # build now, so a broken engine shows at start, not on first page load
    print(f"engine wheel: {wheel.url}", flush=True)
    compiled = app.state.bytecode.current(wheel, wait=True)  # so that the first page's visit has it
    print(f"first-visit bytecode: {compiled.url if compiled else 'none (pages compile from source)'}")
    planned = app.state.pipelines.current(wheel, wait=True)  # so that the first page compiles them while it boots
    print(f"classifier pipelines: {planned.url if planned else 'none (compiled at the first classification)'}")
    gzip_first_visit(settings, app.state.gzip_copies, [c for c in (compiled, planned) if c])
    print(f"models: {settings.models_dir}\nplayground: http://{host}:{port}/", flush=True)
    options = uvicorn_options(header_timeout or HEADER_TIMEOUT)
    if workers == 1:
        uvicorn.run(app, host=host, port=port, **options)
        return
    os.environ.update(settings_environment(settings))
    uvicorn.run("app.factory:create_app", factory=True, workers=workers, host=host, port=port, **options)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m app", description="The py_engine playground server.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="serve the playground (fetches the Pyodide assets first if missing)")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument(
        "--workers", type=int, default=1, help="server processes sharing the port (default 1; see docs/deploy.md)"
    )
    s.add_argument(
        "--header-timeout",
        type=float,
        metavar="SECONDS",
        help="close a connection that has not sent a complete request line and headers in this time (default 10)",
    )
    s.add_argument(
        "--models", type=Path, help="folder of TensorFlow.js models (default: models/, or $PLAYGROUND_MODELS)"
    )
    s.add_argument("--static", type=Path, help="folder of the page (default: static/, or $PLAYGROUND_STATIC)")
    s.add_argument(
        "--pyodide-cdn",
        metavar="URL",
        help="load Pyodide from this index URL instead of the local copy, e.g. "
        "https://cdn.jsdelivr.net/pyodide/v0.27.7/full/ (or $PLAYGROUND_PYODIDE_CDN)",
    )
    f = sub.add_parser("fetch-assets", help="fetch and verify the offline Pyodide (instant when already done)")
    f.add_argument("--force", action="store_true", help="fetch and verify again even if a verified copy is there")
    m = sub.add_parser(
        "fetch-models",
        help="fetch and verify the graph models of @vladmandic/human into the models folder (see docs/models.md)",
    )
    m.add_argument(
        "--models", type=Path, help="folder of TensorFlow.js models (default: models/, or $PLAYGROUND_MODELS)"
    )
    m.add_argument("--force", action="store_true", help="write every model again even if a complete one is there")
    sub.add_parser("build-wheel", help="build the engine wheel and print its path and URL")
    add_convert_parser(sub)
    e = sub.add_parser(
        "export", help="write the whole playground into DIR as static files, with a _headers file (see app/export.py)"
    )
    e.add_argument("dir", type=Path, metavar="DIR", help="a new or empty folder")
    e.add_argument("--models", type=Path, help="folder of TensorFlow.js models (default: models/)")
    e.add_argument("--static", type=Path, help="folder of the page (default: static/)")
    e.add_argument("--pyodide-cdn", metavar="URL", help="the page loads Pyodide from this URL; no copy is exported")
    for command in sub.choices.values():
        command.add_argument(
            "--assets", type=Path, help="folder for generated assets (default: .assets/, or $PLAYGROUND_ASSETS)"
        )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        settings = settings_from(args)
        if args.command == "fetch-assets":
            fetch_assets(settings, force=args.force)
        elif args.command == "fetch-models":
            fetch_models(settings.models_dir, settings.assets_dir, force=args.force)
        elif args.command == "build-wheel":
            build_wheel(settings)
        elif args.command == "convert":
            convert_model(args.model, settings.models_dir)
        elif args.command == "export":
            if not settings.pyodide_cdn:
                fetch_assets(settings)
            export_site(settings, args.dir.expanduser().resolve())
        else:
            if args.workers < 1:
                raise ValueError(f"--workers must be at least 1, got {args.workers}")
            if args.header_timeout is not None and args.header_timeout <= 0:
                raise ValueError(f"--header-timeout must be a positive number of seconds, got {args.header_timeout}")
            serve(settings, args.host, args.port, args.workers, args.header_timeout)
    except (AssetError, WheelError, ExportError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
