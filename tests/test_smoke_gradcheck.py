import numpy as np

import py_engine as pe
from tests.gradcheck import check_gradients


def test_gradcheck_catches_a_wrong_gradient():
    @pe.custom_grad
    def wrong_square(x):
        return x * x, lambda dy: dy * x * 3.0  # should be 2x

    check_gradients(lambda x: x * x, np.array([1.0, -2.0, 0.5]))
    try:
        check_gradients(wrong_square, np.array([1.0, -2.0, 0.5]))
    except AssertionError:
        return
    raise AssertionError("check_gradients accepted a wrong gradient")
