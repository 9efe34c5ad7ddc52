"""Weight regularizers from layer configs (kernel_regularizer={"class_name": "L1L2", ...}): penalties added to the loss.

Layers keep Keras/TF.js regularizer configs as given; compile turns them into penalty functions, so a model loaded
from TF.js files trains with the same loss. Activity regularizers and weight constraints are refused rather than
silently ignored.
"""

from .. import ops

# A layer config key -> the weight it regularizes.
_WEIGHTS = {
    "kernel_regularizer": "kernel",
    "bias_regularizer": "bias",
    "depthwise_regularizer": "depthwise_kernel",
    "gamma_regularizer": "gamma",
    "beta_regularizer": "beta",
    "embeddings_regularizer": "embeddings",
    "recurrent_regularizer": "recurrent_kernel",
}


def l1_l2(config, where):
    """(l1, l2) from {"class_name": "L1L2" | "L1" | "L2", "config": {...}} (Keras and TF.js spellings)."""
    if isinstance(config, str):
        config = {"class_name": config, "config": {}}
    name = str(config.get("class_name", "")).lower().replace("_", "")
    values = config.get("config") or {}
    defaults = {"l1l2": (0.0, 0.0), "l1": (0.01, 0.0), "l2": (0.0, 0.01)}  # Keras's defaults
    if name not in defaults:
        raise NotImplementedError(
            f"{where}: regularizer {config.get('class_name')!r} is not supported; use L1, L2 or L1L2"
        )
    l1, l2 = defaults[name]
    return float(values.get("l1", l1)), float(values.get("l2", l2))


def penalties(model):
    """Callables returning each regularized weight's penalty, l1 * sum|w| + l2 * sum w^2 (as TF.js)."""
    out = []
    for layer in model.layers:
        extra = getattr(layer, "_extra", {})
        for key, value in extra.items():
            if value is None:
                continue
            where = f"{layer.name} ({layer.class_name}) {key}"
            if key.endswith("_constraint") or key == "activity_regularizer":
                raise NotImplementedError(f"{where}: {value!r} is not supported in training yet; remove it to train")
            if key not in _WEIGHTS:
                continue
            l1, l2 = l1_l2(value, where)
            weights = dict(zip((name.rsplit("/", 1)[-1] for name in layer.weight_names), layer.weights))
            w = weights.get(_WEIGHTS[key])
            if w is not None and (l1 or l2):
                out.append(lambda w=w, l1=l1, l2=l2: _penalty(w, l1, l2))
    return out


def _penalty(w, l1, l2):
    total = None
    if l1:
        total = ops.sum(ops.abs(w)) * l1
    if l2:
        term = ops.sum(ops.square(w)) * l2
        total = term if total is None else total + term
    return total
