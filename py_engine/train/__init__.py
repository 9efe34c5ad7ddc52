"""Training: optimizers, losses, metrics, callbacks, regularizers and constraints for Model.compile / fit / evaluate.

They work on tensors and variables and import no layer: a layer's config holds regularizers and constraints, and a
layer may bring its own loss (CRF), so py_engine.layers imports this package, never the reverse.
"""
