"""Training: optimizers, losses, metrics and callbacks for Model.compile / fit / evaluate."""
