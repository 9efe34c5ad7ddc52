"""image ops (to be written)."""

__all__ = []
