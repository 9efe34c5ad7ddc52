"""Every op TF.js 4.22 runs in a graph model is either run here or listed in graph_ops.NOT_HERE with the reason.
TF.js's op lists are read from the installed tfjs-converter (tests/tfjs_graph_coverage.py): an op a newer TF.js
adds fails this test until it runs here or is listed."""

from py_engine.models.graph_ops import NOT_HERE, OPS, missing_engine_ops
from tests.tfjs_graph_coverage import converter_version, runs_here, table, tfjs_ops


def test_every_tfjs_graph_op_runs_here_or_says_why_not():
    ops = tfjs_ops()
    unexplained = [f"{c}/{op}" for c, names in ops.items() for op in names if not runs_here(op) and op not in NOT_HERE]
    assert not unexplained, f"TF.js ops neither run here nor in graph_ops.NOT_HERE: {unexplained}"


def test_not_here_lists_only_tfjs_ops_that_do_not_run_here():
    every = {op for names in tfjs_ops().values() for op in names}
    for op, reason in NOT_HERE.items():
        assert op in every, f"TF.js has no op {op!r}: drop it from NOT_HERE"
        assert not runs_here(op), f"{op!r} runs here now: drop it from NOT_HERE"
        assert reason.strip()


def test_each_op_of_the_table_has_the_engine_ops_it_calls():
    assert {op: missing_engine_ops(op) for op in OPS if missing_engine_ops(op)} == {}


def test_the_lists_are_read_from_the_installed_converter():
    ops = tfjs_ops()
    assert converter_version() == "4.22.0"
    assert len(ops) >= 19 and sum(map(len, ops.values())) > 240, {c: len(n) for c, n in ops.items()}
    assert "NonMaxSuppressionV5" in ops["dynamic"] and "_FusedConv2D" in ops["convolution"]


def test_the_docs_show_the_table_and_the_readme_its_totals():
    from pathlib import Path

    repo = Path(__file__).parent.parent
    ops = tfjs_ops()
    assert table(ops) in (repo / "docs" / "graph_models.md").read_text(), (
        "docs/graph_models.md's graph-op table is stale: scripts/tfjs_coverage.py --graph prints it"
    )
    names = [op for found in ops.values() for op in found]
    totals = f"Of the {len(names)} ops TF.js 4.22's\nconverter runs, {sum(map(runs_here, names))} run here"
    assert totals in (repo / "README.md").read_text(), f"README.md's graph-op totals are stale: {totals!r}"
