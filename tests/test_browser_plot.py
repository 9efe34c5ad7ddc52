"""pe.browser.plot's message (what the page's Charts panel draws): the accepted forms, gaps for NaN, and the errors."""

import numpy as np
import pytest

import py_engine as pe
from py_engine.errors import ShapeError


def test_one_series_gets_its_index_as_x():
    assert pe.browser.plot_message([1, 4, 9], title="squares") == {
        "title": "squares",
        "x_label": "x",
        "x": [0, 1, 2],
        "series": {"y": [1.0, 4.0, 9.0]},
    }


def test_x_and_named_series_from_numpy_and_a_tensor_with_gaps_for_nan(each_backend):
    t = pe.tensor([0.5, 0.25, 0.125])
    message = pe.browser.plot_message(
        np.array([1, 2, 3]), {"loss": np.array([1.0, np.nan, 0.5]), "lr": t}, x_label="epoch"
    )
    t.dispose()
    assert message["x"] == [1.0, 2.0, 3.0] and message["x_label"] == "epoch"
    assert message["series"] == {"loss": [1.0, None, 0.5], "lr": [0.5, 0.25, 0.125]}


def test_errors_name_the_series_and_what_to_do():
    with pytest.raises(ShapeError, match=r"one value per x \(2 x values\), got lengths \{'a': 3\}"):
        pe.browser.plot_message([0, 1], {"a": [1, 2, 3]})
    with pytest.raises(ShapeError, match=r"series 'y' must be 1-D, got shape \(2, 2\)"):
        pe.browser.plot_message([[1, 2], [3, 4]])
    with pytest.raises(TypeError, match="series 'b' must be numbers"):
        pe.browser.plot_message({"b": ["one", object()]})
    with pytest.raises(ValueError, match="no series"):
        pe.browser.plot_message({})


def test_plot_outside_the_page_says_where_it_works():
    with pytest.raises(RuntimeError, match="playground page only"):
        pe.browser.plot([1, 2])
