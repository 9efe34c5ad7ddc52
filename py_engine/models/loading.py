"""load_layers_model: a TF.js layers model (model.json + weight shards) from a folder, file:// or http(s)://.

py_engine.io reads the files and checks the shards; this builds the model from them, so it sits with the models.
"""

import json

from ..engine import ENGINE
from ..io import weights_manifest
from ..io.errors import ModelLoadError
from ..io.fetch import Location
from ..io.training_config import compile_from_tfjs
from ..layers import CLASSES, WeightSource
from ..train import constraints
from .serialization import model_from_config, unknown_layer_classes


async def load_layers_model(url_or_path, on_progress=None, weights=True):
    """The model saved at url_or_path (model.json, or the folder or URL prefix holding it).

    Shards are fetched concurrently; on_progress(bytes_loaded, bytes_total), sync or async, is called at
    the start and after each shard. Each shard's size and sha256 are checked when the manifest records
    them. Any failure raises ModelLoadError naming the file or weight at fault, and leaves nothing allocated.

    weights=False reads model.json alone: every weight is zeros, so the model has the saved one's layers and
    shapes but not its values. Its use: summary(), shapes, and pe.warmup compiling a GPU's pipelines (made under
    pe.on_backend("numpy"), the zeros never leave the host) while the real weights download.
    """
    location = Location(url_or_path)
    try:
        with location.files_ahead(weights):
            return await _load(location, on_progress, weights)
    except ModelLoadError as e:
        raise ModelLoadError(f"load_layers_model({location.target}): {e}") from e.__cause__


async def _load(location, on_progress, with_weights):
    raw = await location.read(location.target, "model.json")
    try:
        artifacts = json.loads(raw)
    except ValueError as e:
        raise ModelLoadError(f"model.json is not valid JSON ({e})") from None
    if not isinstance(artifacts, dict) or "modelTopology" not in artifacts:
        raise ModelLoadError("model.json has no 'modelTopology': it is not a TF.js layers model")
    if artifacts.get("format", "layers-model") != "layers-model":
        raise ModelLoadError(f"model.json's format is {artifacts['format']!r}; this loader reads 'layers-model'")
    topology = artifacts["modelTopology"]
    try:
        unknown = unknown_layer_classes(topology)
    except (ValueError, AttributeError) as e:
        raise ModelLoadError(f"model.json's modelTopology cannot be read: {e}") from None
    if unknown:
        listed = "; ".join(f"{name!r} (layers {', '.join(map(repr, layers))})" for name, layers in unknown.items())
        raise ModelLoadError(f"unknown layer classes: {listed}. Supported: {', '.join(sorted(CLASSES))}")

    groups = artifacts.get("weightsManifest") or []
    if with_weights:
        arrays = await weights_manifest.fetch(location, groups, on_progress)
    else:
        for k, group in enumerate(groups):
            weights_manifest.check_group(group, k + 1)
        arrays = _zeros(groups)

    source = WeightSource(arrays, "the weights manifest")
    try:
        with source:
            model = model_from_config(topology)
        unused = source.unused()
        if unused:
            raise ModelLoadError(
                f"the weights manifest has {len(unused)} weight(s) the model's topology does not use: "
                f"{', '.join(map(repr, unused[:10]))}{' ...' if len(unused) > 10 else ''}"
            )
        if with_weights:  # as TF.js's loader: it sets each weight through LayerVariable.write, which applies it
            constraints.apply(constraints.constrained(model, strict=False))
        if artifacts.get("trainingConfig"):
            compile_from_tfjs(model, artifacts["trainingConfig"])
        return model
    except (ValueError, TypeError) as e:
        ENGINE.dispose(source.created)
        raise e if isinstance(e, ModelLoadError) else ModelLoadError(str(e)) from e
    except BaseException:
        ENGINE.dispose(source.created)
        raise


def _zeros(groups):
    arrays = {}
    for group in groups:
        _add(arrays, weights_manifest.zeros(group))
    return arrays


def _add(arrays, group_arrays):
    for name, array in group_arrays.items():
        if name in arrays:
            raise ModelLoadError(weights_manifest.twice(name))
        arrays[name] = array
