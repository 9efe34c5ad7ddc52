"""model.summary(): a table of layers, output shapes and parameter counts, as Keras prints it."""

from ..train import constraints, regularizers


def _shape(shape):
    return "(" + ", ".join(str(d) for d in shape) + ")"


def summary_text(model):
    in_model = {id(node) for node in model.nodes}
    connected = model.class_name != "Sequential"  # a stack needs no "Connected to" column
    header = ["Layer (type)", "Output Shape", "Param #"] + (["Connected to"] if connected else [])
    rows = []
    for layer in model.layers:
        calls = [node for node in layer._nodes if id(node) in in_model]
        shapes = ", ".join(_shape(node.outputs[0].shape) for node in calls)
        row = [f"{layer.name} ({layer.class_name})", shapes, f"{layer.count_params():,}"]
        if connected:
            row.append(", ".join(s.layer.name for node in calls for s in node.inputs))
        rows.append(row)
    widths = [max(len(r[k]) for r in [header, *rows]) + 2 for k in range(len(header))]
    rule = "_" * sum(widths)

    def line(cells):
        return "".join(cell.ljust(width) for cell, width in zip(cells, widths)).rstrip()

    total = model.count_params()
    trainable = sum(v.size for v in model.trainable_weights)
    lines = [f'Model: "{model.name}"', rule, line(header), "=" * sum(widths)]
    for k, row in enumerate(rows):
        lines += [line(row), "=" * sum(widths) if k == len(rows) - 1 else rule]
    lines += [
        f"Total params: {total:,}",
        f"Trainable params: {trainable:,}",
        f"Non-trainable params: {total - trainable:,}",
        rule,
    ]
    training = _regularizers_and_constraints(model)
    if training:
        lines += ["Regularizers and constraints:", *training, rule]
    return "\n".join(lines)


def _regularizers_and_constraints(model):
    """One line per layer (or layer inside one) with a regularizer or constraint: "  dense (Dense): kernel_regularizer
    L1L2(l1=0, l2=0.01), kernel_constraint MaxNorm(max_value=2.0, axis=0)"."""
    lines = []
    for top in model.layers:
        for layer in (top, *(part for part in regularizers.sublayers(top) if part._weights)):  # not a template
            items = [
                f"{key} {(regularizers if key.endswith('_regularizer') else constraints).describe(value)}"
                for key, value in getattr(layer, "_extra", {}).items()
                if value is not None and key.endswith(("_regularizer", "_constraint"))
            ]
            if items:
                lines.append(f"  {layer.name} ({layer.class_name}): {', '.join(items)}")
    return lines
