"""Models from model.json's modelTopology (Keras config), and the layer classes a topology needs."""

from ..layers import CLASSES
from .functional import Model
from .sequential import Sequential

MODEL_CLASSES = {"Sequential": Sequential, "Model": Model, "Functional": Model}


def _unwrap(topology):
    """Older Keras converters wrap the config: {"model_config": {...}, "training_config": ...}."""
    if not isinstance(topology, dict):
        raise ValueError(f"modelTopology must be a JSON object, got {type(topology).__name__}")
    return topology.get("model_config", topology)


def model_from_config(topology):
    """A Sequential or functional Model from {"class_name": ..., "config": ...}."""
    topology = _unwrap(topology)
    cls = MODEL_CLASSES.get(topology.get("class_name"))
    if cls is None:
        raise ValueError(
            f"unknown model class {topology.get('class_name')!r} in modelTopology; expected one of {', '.join(MODEL_CLASSES)}"
        )
    return cls.from_config(topology.get("config") or {})


def unknown_layer_classes(topology):
    """{class name: [layer names]} for the layers of a topology that no layer class here can load."""
    config = _unwrap(topology).get("config") or {}
    entries = config if isinstance(config, list) else config.get("layers", [])
    unknown = {}
    for entry in entries:
        class_name = entry.get("class_name")
        if class_name not in CLASSES:
            name = entry.get("name") or (entry.get("config") or {}).get("name") or "?"
            unknown.setdefault(class_name, []).append(name)
    return unknown
