"""The playground's server: `python -m app serve` (see app/__main__.py)."""

from app.factory import create_app
from app.settings import Settings

__all__ = ["Settings", "create_app"]
