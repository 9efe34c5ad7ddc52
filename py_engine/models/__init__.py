"""Sequential and functional models: predict, summary, weights, folding, config, save and load."""

from ..io.topology import model_topology
from .folding import InferencePlan
from .functional import Model
from .sequential import Sequential
from .serialization import model_from_config, unknown_layer_classes

__all__ = ["InferencePlan", "Model", "Sequential", "model_from_config", "model_topology", "unknown_layer_classes"]
