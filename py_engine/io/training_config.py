"""model.json's trainingConfig (TF.js's loss, metrics and optimizer_config): a loaded model comes back compiled."""

from .errors import ModelLoadError


def compile_from_tfjs(model, config):
    """Compile `model` as TF.js's loadLayersModel does from a saved trainingConfig."""
    if not isinstance(config, dict) or "loss" not in config:
        raise ModelLoadError(f"model.json's trainingConfig must hold a 'loss', got {config!r}")
    optimizer = config.get("optimizer_config")
    try:
        model.compile(
            optimizer=optimizer if optimizer else "rmsprop", loss=config["loss"], metrics=config.get("metrics")
        )
    except (ValueError, TypeError, KeyError) as e:
        raise ModelLoadError(f"model.json's trainingConfig cannot be used to compile the model: {e}") from None
