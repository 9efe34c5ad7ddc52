"""Learning-rate schedules: step -> learning rate, with Keras's formulas.

A schedule is evaluated in Python at the optimizer's `iterations` before each update, so the learning rate
reaches the device as a plain number (no tensor, no readback).
"""

import math
import numbers


class LearningRateSchedule:
    """Base class: call it with a step (an int) for the learning rate (a float); get_config() saves it."""

    def __call__(self, step):
        raise NotImplementedError

    def get_config(self):
        raise NotImplementedError

    @classmethod
    def from_config(cls, config):
        try:
            return cls(**config)
        except TypeError as e:
            raise ValueError(f"{cls.__name__}.from_config: {e}; the config was {config!r}") from None

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


def _number(owner, name, value, positive=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise TypeError(f"{owner}: {name} must be a finite number, got {value!r}")
    if positive and value <= 0:
        raise ValueError(f"{owner}: {name} must be > 0, got {value}")
    return value


def _step(owner, step):
    if isinstance(step, bool) or not isinstance(step, numbers.Real):
        raise TypeError(f"{owner}: the step must be a number (the optimizer's iterations), got {step!r}")
    return step


class ExponentialDecay(LearningRateSchedule):
    """initial_learning_rate * decay_rate ** (step / decay_steps); with staircase the exponent is floored."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False):
        self.initial_learning_rate = _number("ExponentialDecay", "initial_learning_rate", initial_learning_rate)
        self.decay_steps = _number("ExponentialDecay", "decay_steps", decay_steps, positive=True)
        self.decay_rate = _number("ExponentialDecay", "decay_rate", decay_rate)
        self.staircase = bool(staircase)

    def __call__(self, step):
        p = _step("ExponentialDecay", step) / self.decay_steps
        if self.staircase:
            p = math.floor(p)
        return float(self.initial_learning_rate * self.decay_rate**p)

    def get_config(self):
        return {
            "initial_learning_rate": self.initial_learning_rate,
            "decay_steps": self.decay_steps,
            "decay_rate": self.decay_rate,
            "staircase": self.staircase,
        }


class CosineDecay(LearningRateSchedule):
    """Cosine decay from initial_learning_rate to alpha * initial_learning_rate over decay_steps, then flat."""

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0):
        self.initial_learning_rate = _number("CosineDecay", "initial_learning_rate", initial_learning_rate)
        self.decay_steps = _number("CosineDecay", "decay_steps", decay_steps, positive=True)
        self.alpha = _number("CosineDecay", "alpha", alpha)

    def __call__(self, step):
        fraction = min(_step("CosineDecay", step), self.decay_steps) / self.decay_steps
        cosine = 0.5 * (1.0 + math.cos(math.pi * fraction))
        return float(self.initial_learning_rate * ((1 - self.alpha) * cosine + self.alpha))

    def get_config(self):
        return {
            "initial_learning_rate": self.initial_learning_rate,
            "decay_steps": self.decay_steps,
            "alpha": self.alpha,
        }


SCHEDULES = {cls.__name__: cls for cls in (ExponentialDecay, CosineDecay)}


def serialize(schedule):
    """{"class_name": ..., "config": ...}, as Keras writes a schedule."""
    return {"class_name": type(schedule).__name__, "config": schedule.get_config()}


def deserialize(config):
    """The schedule that serialize() described."""
    if not isinstance(config, dict) or set(config) != {"class_name", "config"}:
        raise ValueError(f"a schedule is saved as {{'class_name': ..., 'config': {{...}}}}, got {config!r}")
    cls = SCHEDULES.get(config["class_name"])
    if cls is None:
        raise ValueError(f"unknown learning-rate schedule {config['class_name']!r}; known: {', '.join(SCHEDULES)}")
    return cls.from_config(config["config"])
