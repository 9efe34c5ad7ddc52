import asyncio

import numpy as np
import pytest

import py_engine as pe
from py_engine.engine import ENGINE


@pytest.fixture(autouse=True)
def fresh_engine():
    """Each test starts on numpy with no live tensors, debug off and no fallback reason left by an earlier test;
    at the end every buffer must be free."""
    ENGINE.backend = ENGINE._backends.get("numpy") or ENGINE.active()
    ENGINE.debug, ENGINE.fallback_reason = False, None
    yield
    ENGINE.debug = False
    pe.dispose(list(ENGINE.live.values()))
    assert ENGINE.num_data_buffers == 0 and ENGINE.num_bytes == 0, "buffers outlived every tensor"
    for backend in ENGINE._backends.values():
        if backend.is_gpu and not backend.lost:
            backend.flush()
            assert backend.pool.bytes_in_use == 0, "GPU buffers are not back at the pool baseline"
    ENGINE.backend = ENGINE._backends["numpy"]


@pytest.fixture(params=["numpy", "webgpu"])
def each_backend(request):
    """Run the test once per backend (webgpu through wgpu-py)."""
    assert asyncio.run(pe.set_backend(request.param)), ENGINE.fallback_reason
    return request.param


@pytest.fixture
def gpu():
    """A webgpu backend on a new device, so its counters, pipelines and kernel plans start from zero (a module may
    define its own `gpu`)."""
    ENGINE.forget_backend("webgpu")
    assert asyncio.run(pe.set_backend("webgpu")), ENGINE.fallback_reason
    return ENGINE.backend


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def efficientnet_lite0(tmp_path_factory):
    """The converted EfficientNet-Lite0 folder (model.json, shards, metadata, labels), converted once per session."""
    from app.__main__ import main

    models = tmp_path_factory.mktemp("models")
    assert main(["convert", "efficientnet-lite0", "--models", str(models)]) == 0
    return models / "efficientnet-lite0"


@pytest.fixture(scope="session")
def graph_models(tmp_path_factory):
    """The folder of the eleven TF.js graph models of @vladmandic/human (<name>/model.json, shards, LICENSE,
    metadata.json), written once per session from the verified tarball cached in .assets/npm/ (fetched from npm the
    first time: app/graph_models.py)."""
    from app.__main__ import main

    models = tmp_path_factory.mktemp("graph-models")
    assert main(["fetch-models", "--models", str(models)]) == 0
    return models


@pytest.fixture(scope="session")
def graph_model_reference(graph_models, tmp_path_factory):
    """TF.js's outputs of every graph model on the photo (tests/graph_model_cases.py), computed once per session."""
    from app.graph_models import MODELS
    from tests.graph_model_cases import tfjs_reference

    return tfjs_reference(graph_models, sorted(MODELS), tmp_path_factory.mktemp("graph-model-reference"))
