import numpy as np
import pytest

import py_engine as pe
from tests.gradcheck import check_gradients


def test_gradcheck_catches_a_wrong_gradient():
    @pe.custom_grad
    def wrong_square(x):
        return x * x, lambda dy: dy * x * 3.0  # should be 2x

    check_gradients(lambda x: x * x, np.array([1.0, -2.0, 0.5]))
    # the gradient mismatch, on every element of input 0, by the factor 3/2 (not a leak or another failure)
    mismatch = (
        r"Not equal to tolerance .*\ninput 0\nMismatched elements: 3 / 3 .*\n.*\nMax relative difference .*: 0\.500"
    )
    with pytest.raises(AssertionError, match=mismatch):
        check_gradients(wrong_square, np.array([1.0, -2.0, 0.5]))
