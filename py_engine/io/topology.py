"""model.json's modelTopology: a model's Keras config with its class name, keras_version and backend."""

KERAS_VERSION = "py_engine 0.1.0"  # what model.json's modelTopology says generated the config


def model_topology(model):
    """model.json's modelTopology: the Keras config with its class name, keras_version and backend."""
    return {
        "class_name": model.class_name,
        "config": model.get_config(),
        "keras_version": KERAS_VERSION,
        "backend": "tensor_flow.js",
    }
