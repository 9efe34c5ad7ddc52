"""The conformance suite on every backend this machine has: each op against the numpy backend."""

import asyncio

import pytest

from py_engine.testing.conformance import all_cases, check_case

BACKENDS = ["webgpu"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", all_cases(), ids=lambda c: c.id)
def test_conformance(case, backend):
    message = asyncio.run(check_case(case, backend))
    assert message is None, message
