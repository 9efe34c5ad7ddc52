"""What TF.js's layers API has and what of it py_engine has: the lists read from the real TF.js at run time
(tests/tfjs/api_names.mjs), each name checked against its counterpart here through the path a user or a TF.js
model takes to it (a model.json's layer class, an activation, initializer, regularizer or constraint as TF.js
names and serializes it, a loss, metric or optimizer as TF.js's compile names it).

tests/test_tfjs_coverage.py fails on any name without a counterpart; scripts/tfjs_coverage.py prints the table
for the README. Nothing here lists TF.js's names itself: a TF.js that adds one makes the test fail until it is here.
"""

import json
import tempfile
from pathlib import Path

import numpy as np

import py_engine as pe
from py_engine.layers import activations, initializers
from py_engine.train import constraints, regularizers
from tests.tfjs_node import TFJS, run_tfjs

TFJS_PACKAGE = TFJS / "node_modules" / "@tensorflow" / "tfjs" / "package.json"

# TF.js names with no counterpart here on purpose: {category: {name: why}}. Aim for none.
EXCEPTIONS = {}

CATEGORIES = ("layers", "activations", "initializers", "regularizers", "constraints", "losses", "metrics", "optimizers")


def tfjs_names():
    """The names of TF.js's layers API as api_names.mjs reads them from the installed TF.js."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "names.json"
        run_tfjs("api_names.mjs", out)
        return json.loads(out.read_text())


# ---- the checks: each returns None when the name has its counterpart, else what is wrong -------------------------


def _fails(check):
    try:
        check()
    except Exception as e:  # any failure is the finding: it is reported with its message
        return f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    return None


def _layer(class_name, registered):
    """A class TF.js registers for model.json must load here by that name and be pe.layers' class of that name; a
    class TF.js exports only to subclass (Layer, RNNCell) must be pe.layers' class of that name."""

    def check():
        public = getattr(pe.layers, class_name, None)
        if not isinstance(public, type):
            raise LookupError(f"pe.layers has no class {class_name}")
        if registered and pe.layers.CLASSES.get(class_name) is not public:
            raise LookupError(f"a model.json layer of class {class_name} does not load (not in pe.layers.CLASSES)")

    return check


def _initializer(identifier, shape=(3, 3)):
    def check():
        values = initializers.get(identifier)(shape)
        assert values.shape == shape and values.dtype == np.float32, (values.shape, values.dtype)

    return check


def factory_names(names):
    """{layer class: the tf.layers exports that make it} (avgPool2d, averagePooling2d... -> AveragePooling2D)."""
    folded = {}
    for layer in names["layers"]:
        folded.setdefault(layer["class_name"], []).append(layer["name"])
    return folded


def shown(category, name, names):
    """A name as reports show it: a layer class with the factory names that make it."""
    others = sorted(set(factory_names(names).get(name, ())) - {name}) if category == "layers" else []
    return f"{name} ({', '.join(others)})" if others else name


def checks(names):
    """{category: {TF.js name: check}}; a layer is its class (the factory names that make it fold into it)."""
    out = {category: {} for category in CATEGORIES}
    registered = {layer["class_name"]: layer["registered"] for layer in names["layers"]}
    for class_name in sorted(registered):
        out["layers"][class_name] = _layer(class_name, registered[class_name])
    for activation in names["activations"]:
        out["activations"][activation["name"]] = lambda a=activation: (
            activations.get(a["name"]),
            activations.get(a["serialized"]),
        )
    for factory in names["initializers"]["factories"]:
        name, serialized = factory["name"], factory["serialized"]
        out["initializers"][name] = lambda n=name, s=serialized: (_initializer(n)(), _initializer(s)())
    for class_name in names["initializers"]["classes"]:
        out["initializers"].setdefault(class_name, _initializer({"class_name": class_name, "config": {}}))
    for category, module in (("regularizers", regularizers), ("constraints", constraints)):
        for factory in names[category]["factories"]:
            name, serialized = factory["name"], factory["serialized"]
            out[category][name] = lambda n=name, s=serialized, m=module: (m.get(n), m.get(s))
        for class_name in names[category]["classes"]:
            out[category].setdefault(class_name, lambda c=class_name, m=module: m.get({"class_name": c, "config": {}}))
    for loss in names["losses"]:
        out["losses"][loss] = lambda n=loss: pe.losses.get(n)
    metrics = names["metrics"]
    for metric in sorted({*metrics["compile_names"], *metrics["functions"]}):
        out["metrics"][metric] = lambda n=metric: pe.metrics.get(n)
    for factory in names["optimizers"]["factories"]:
        serialized = {"class_name": factory["class_name"], "config": factory["config"]}
        out["optimizers"][factory["name"]] = lambda s=serialized: pe.optimizers.get(s)
    for name in names["optimizers"]["compile_names"]:
        out["optimizers"].setdefault(name, lambda n=name: pe.optimizers.get(n))
    return out


def missing(names):
    """{category: {name: what is wrong}} for every TF.js name without its counterpart here, exceptions included."""
    found = {}
    for category, named in checks(names).items():
        for name, check in named.items():
            failure = _fails(check)
            if failure:
                found.setdefault(category, {})[name] = failure
    return found


def table(names, absent):
    """The README's table: per category, how many names TF.js has, how many of them are here, and which are not."""
    named = checks(names)
    what = {
        "layers": f"layer classes (tf.layers' {len(names['layers'])} exports folded)",
        "activations": "activations",
        "initializers": "initializers (factory and class names)",
        "regularizers": "regularizers (factory and class names)",
        "constraints": "constraints (factory and class names)",
        "losses": "losses (names compile takes)",
        "metrics": "metrics (names compile takes, tf.metrics)",
        "optimizers": "optimizers (tf.train, names compile takes)",
    }
    rows = [f"| | TensorFlow.js {names['version']} | py_engine | not here |", "|---|---|---|---|"]
    for category in CATEGORIES:
        gone = absent.get(category, {})
        reasons = EXCEPTIONS.get(category, {})
        not_here = ", ".join(
            shown(category, name, names) + (f": {reasons[name]}" if name in reasons else "") for name in gone
        )
        total = len(named[category])
        rows.append(f"| {what[category]} | {total} | {total - len(gone)} | {not_here or '-'} |")
    return "\n".join(rows)
