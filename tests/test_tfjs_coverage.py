"""Everything TF.js's layers API has is here. The lists come from the real TF.js at test time
(tests/tfjs/api_names.mjs through tests/tfjs_coverage.py), so a name TF.js has and py_engine lacks fails this test
until it is implemented here, or listed in tfjs_coverage.EXCEPTIONS with the reason."""

import json

import pytest

from tests.tfjs_coverage import CATEGORIES, EXCEPTIONS, TFJS_PACKAGE, checks, missing, shown, table, tfjs_names


@pytest.fixture(scope="module")
def names():
    return tfjs_names()


def test_every_name_of_tfjs_layers_api_has_a_counterpart_here(names):
    absent = missing(names)
    unexplained = {
        category: {name: why for name, why in found.items() if name not in EXCEPTIONS.get(category, {})}
        for category, found in absent.items()
    }
    report = "\n".join(
        f"{category} ({len(found)}):\n" + "\n".join(f"  {shown(category, n, names)}: {why}" for n, why in found.items())
        for category, found in unexplained.items()
        if found
    )
    print(f"TF.js {names['version']} names without a counterpart here:\n{report or '  none'}")
    assert not report, f"TF.js {names['version']} names without a counterpart here:\n{report}"


def test_every_exception_is_a_tfjs_name_still_without_a_counterpart(names):
    named, absent = checks(names), missing(names)
    for category, exceptions in EXCEPTIONS.items():
        for name, reason in exceptions.items():
            assert name in named[category], f"{category}: TF.js has no {name!r} any more; drop it from EXCEPTIONS"
            assert name in absent.get(category, {}), f"{category}: {name!r} is here now; drop it from EXCEPTIONS"
            assert reason.strip(), f"{category}: {name!r} needs its reason in EXCEPTIONS"


def test_the_lists_are_read_from_the_installed_tfjs(names):
    """Each list is TF.js's own and not empty (a read that finds nothing must not pass as full coverage)."""
    assert names["version"] == json.loads(TFJS_PACKAGE.read_text())["version"]
    named = checks(names)
    assert all(named[category] for category in CATEGORIES), {c: len(named[c]) for c in CATEGORIES}
    folded = {layer["name"]: layer["class_name"] for layer in names["layers"]}
    assert folded["avgPool2d"] == folded["averagePooling2d"] == "AveragePooling2D"  # aliases fold into the class
    assert len(named["layers"]) < len(names["layers"])


def test_the_readme_table_counts_each_category(names):
    absent = missing(names)
    rows = table(names, absent).splitlines()
    assert len(rows) == 2 + len(CATEGORIES)
    for category, row in zip(CATEGORIES, rows[2:]):
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        total = len(checks(names)[category])
        assert cells[1:3] == [str(total), str(total - len(absent.get(category, {})))], row
