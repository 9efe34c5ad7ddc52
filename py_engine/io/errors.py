"""The error load_layers_model raises: it names the model, and the shard or weight at fault."""

from ..errors import EngineError


class ModelLoadError(EngineError, RuntimeError):
    """A TF.js layers model could not be loaded: missing or corrupt files, or weights that do not fit its topology."""
