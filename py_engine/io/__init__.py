"""The TensorFlow.js layers format: model.json (modelTopology + weightsManifest) and weight shards."""

from .errors import ModelLoadError
from .load import load_layers_model
from .save import save_layers_model
from .weights import DEFAULT_SHARD_BYTES

__all__ = ["DEFAULT_SHARD_BYTES", "ModelLoadError", "load_layers_model", "save_layers_model"]
