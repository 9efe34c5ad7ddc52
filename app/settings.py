"""Where the server finds its files, and the optional Pyodide CDN: one object, filled from the CLI or the environment."""

import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parent.parent


def _env_path(name: str, default: Path) -> Path:
    value = os.environ.get(name)
    return Path(value).expanduser().resolve() if value else default


def check_cdn(url: str) -> str:
    """A Pyodide index URL on another origin, e.g. https://cdn.jsdelivr.net/pyodide/v0.27.7/full/."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.netloc or parts.query or parts.fragment:
        raise ValueError(f"pyodide CDN must be an http(s) URL with no query or fragment, got {url!r}")
    return url if url.endswith("/") else url + "/"


def cdn_origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


@dataclass(frozen=True)
class Settings:
    static_dir: Path = field(default_factory=lambda: _env_path("PLAYGROUND_STATIC", REPO / "static"))
    assets_dir: Path = field(default_factory=lambda: _env_path("PLAYGROUND_ASSETS", REPO / ".assets"))
    models_dir: Path = field(default_factory=lambda: _env_path("PLAYGROUND_MODELS", REPO / "models"))
    # The checkout the engine wheel is built from (pyproject.toml + py_engine/).
    engine_source: Path = REPO
    # None: serve the verified local copy at /pyodide/; else the page loads Pyodide from this URL.
    pyodide_cdn: str | None = field(default_factory=lambda: os.environ.get("PLAYGROUND_PYODIDE_CDN") or None)

    def __post_init__(self):
        if self.pyodide_cdn is not None:
            object.__setattr__(self, "pyodide_cdn", check_cdn(self.pyodide_cdn))

    @property
    def pyodide_index_url(self) -> str:
        return self.pyodide_cdn or "/pyodide/"
