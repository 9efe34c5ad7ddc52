"""Layers made of layers (Bidirectional, TransformerEncoder, TokenAndPositionEmbedding): their parts' weights.

A part is named "<parent>/<part>", so its weights are saved as "<parent>/<part>/<weight>" (TF.js's name scopes);
the parent lists them as its own weights, so weights, saving, loading and dispose() see one layer.
"""


def part_name(parent, part):
    return f"{parent.name}/{part}"


def build_part(parent, layer, part, input_shape):
    """Build `layer` (named part_name(parent, part)) for input_shape and adopt its weights as the parent's."""
    layer._ensure_built(input_shape)
    parent._weights += [(f"{part}/{name}", v) for name, v in layer._weights]
    return layer
