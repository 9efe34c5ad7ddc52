"""The conformance suite on every backend the engine has registered: each op against the numpy backend."""

import asyncio

import pytest

from py_engine.engine import ENGINE
from py_engine.testing.conformance import all_cases, check_case

# numpy is the reference; every other registered backend (the GPU backends) must match it
# (wasm starts only in Pyodide: tests/test_wasm_backend.py runs the suite on it in Node)
BACKENDS = sorted(name for name in ENGINE._factories if name not in ("numpy", "wasm"))


def test_there_is_a_backend_to_check():
    assert BACKENDS, "no backend but numpy is registered: the conformance suite would check nothing"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", all_cases(), ids=lambda c: c.id)
def test_conformance(case, backend):
    message = asyncio.run(check_case(case, backend))
    assert message is None, message
