import numpy as np
import pytest

import py_engine as pe
from py_engine.engine import ENGINE


@pytest.fixture(autouse=True)
def fresh_engine():
    """Each test starts and ends with no live tensors, no variables, debug off, numpy backend."""
    ENGINE.backend = ENGINE._backends.get("numpy") or ENGINE.active()
    ENGINE.debug = False
    yield
    ENGINE.debug = False
    pe.dispose(list(ENGINE.live.values()))
    assert ENGINE.num_data_buffers == 0 and ENGINE.num_bytes == 0, "buffers outlived every tensor"


@pytest.fixture
def rng():
    return np.random.default_rng(0)
