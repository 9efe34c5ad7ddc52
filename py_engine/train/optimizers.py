"""Optimizers with Keras's names and arguments and TensorFlow.js 4.22's update rules.

Each update follows tfjs-core/src/optimizers/*.ts op for op, so a model trained here follows the trajectory
TF.js takes; its rule (_adam, ...) runs as one fused kernel per variable (ops.elementwise_rules). One `apply_gradients`
call runs in one engine scope, reads nothing back to the host (hyperparameters, Adam's bias corrections and schedules
are Python floats), and replaces each variable's value with `assign`. The numbers the rule uses (the learning rate,
betas, epsilon, bias corrections...) are uploaded once per call, as one vector every variable's update shares.
Slot variables ("<variable>/m", ...) are engine variables made on first use and counted by `pe.memory()`;
`dispose()` frees them and the next update makes them again.

get_config() is TF.js's getConfig (camelCase keys) and class_name TF.js's class name, so the pair is what TF.js
writes into model.json's trainingConfig.optimizer_config. What TF.js has no field for is added only when set
(clipping, a schedule, Adagrad's epsilon): TF.js ignores keys it does not know.
"""

import math
import numbers
from typing import ClassVar

import numpy as np

from .. import dtypes
from ..autograd import variable_grads
from ..engine import ENGINE
from ..errors import DisposedTensorError, DTypeError, ShapeError
from ..ops import add, clip_by_value, div, elementwise_rules, fill, maximum, mul, sqrt, square
from ..ops import sum as reduce_sum
from ..ops.elementwise_rules import fuse_elementwise
from ..tensor import Tensor, Variable
from . import schedules

DEFAULT_EPSILON = 1e-7  # TF.js's backend epsilon for float32, what its optimizers use when epsilon is null

# TF.js config keys every optimizer accepts here, for what TF.js has no field for.
_COMMON_CONFIG = {
    "clipnorm": "clipnorm",
    "clipvalue": "clipvalue",
    "globalClipnorm": "global_clipnorm",
    "learningRateSchedule": "learning_rate",
}


def _number(owner, name, value, low=None, high=None, high_open=False):
    """A finite real number within [low, high] (or [low, high)), as a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise TypeError(f"{owner}: {name} must be a finite number, got {value!r}")
    value = float(value)
    too_high = high is not None and (value >= high if high_open else value > high)
    if (low is not None and value < low) or too_high:
        bounds = f"in [{low}, {high}{')' if high_open else ']'}" if high is not None else f">= {low}"
        raise ValueError(f"{owner}: {name} must be {bounds}, got {value}")
    return value


# The update rules, op for op as TF.js writes them, each run as one kernel (ops.elementwise_rules: one dispatch per
# variable on webgpu, where the ops one at a time took 2-16). Arguments: the variable, its gradient, its slots, then the
# optimizer's _scalars in their order; they return the slots' new values, then the variable's.


def _sgd(value, g, minus_lr, momentum):
    return minus_lr * g + value


def _momentum(value, g, accumulation, minus_lr, momentum):
    new_accumulation = momentum * accumulation + g
    return new_accumulation, minus_lr * new_accumulation + value


def _nesterov(value, g, accumulation, minus_lr, momentum):
    new_accumulation = momentum * accumulation + g
    return new_accumulation, minus_lr * (g + new_accumulation * momentum) + value


def _adam(value, g, m, v, beta_1, one_minus_beta_1, beta_2, one_minus_beta_2, epsilon, bias_1, bias_2, minus_lr):
    new_m = m * beta_1 + g * one_minus_beta_1
    new_v = v * beta_2 + elementwise_rules.square(g) * one_minus_beta_2
    update = (new_m / bias_1) / (elementwise_rules.sqrt(new_v / bias_2) + epsilon)
    return new_m, new_v, update * minus_lr + value


def _adamw(value, g, m, v, decay, *adam):
    return _adam(value - value * decay, g, m, v, *adam)


def _rmsprop(value, g, mean_square, moments, rho, one_minus_rho, epsilon, momentum, lr):
    new_mean_square = mean_square * rho + elementwise_rules.square(g) * one_minus_rho
    new_moments = moments * momentum + (g * lr) / elementwise_rules.sqrt(new_mean_square + epsilon)
    return new_mean_square, new_moments, value - new_moments


def _rmsprop_centered_averages(g, mean_square, mean_grad, rho, one_minus_rho, epsilon, momentum, lr):
    return mean_square * rho + elementwise_rules.square(g) * one_minus_rho, mean_grad * rho + g * one_minus_rho


def _rmsprop_centered_step(value, g, moments, mean_square, mean_grad, rho, one_minus_rho, epsilon, momentum, lr):
    denominator = elementwise_rules.sqrt(mean_square - elementwise_rules.square(mean_grad) + epsilon)
    new_moments = moments * momentum + (g * lr) / denominator
    return new_moments, value - new_moments


def _adadelta(value, g, accumulated_grad, accumulated_update, rho, one_minus_rho, epsilon, minus_lr):
    new_accumulated_grad = accumulated_grad * rho + elementwise_rules.square(g) * one_minus_rho
    update = (
        elementwise_rules.sqrt(accumulated_update + epsilon)
        / elementwise_rules.sqrt(new_accumulated_grad + epsilon)
        * g
    )
    new_accumulated_update = accumulated_update * rho + elementwise_rules.square(update) * one_minus_rho
    return new_accumulated_grad, new_accumulated_update, update * minus_lr + value


def _adamax(value, g, m, u, beta_1, one_minus_beta_1, beta_2, epsilon, step_size):
    new_m = m * beta_1 + g * one_minus_beta_1
    new_u = elementwise_rules.maximum(u * beta_2, elementwise_rules.abs(g))
    return new_m, new_u, step_size * (new_m / (new_u + epsilon)) + value


def _adagrad(value, g, accumulator, epsilon, minus_lr):
    new_accumulator = accumulator + elementwise_rules.square(g)
    return new_accumulator, (g / elementwise_rules.sqrt(new_accumulator + epsilon)) * minus_lr + value


class Optimizer:
    """Base class: the common arguments, slot variables, clipping, apply_gradients, minimize and configs.

    A subclass sets `_SLOTS` (slot suffixes, in TF.js's getWeights order), `_FROM_CONFIG` (TF.js config key ->
    constructor argument), `_tfjs_config()`, `_scalars(step, lr)` and `_update(variable, gradient, scalars)`.
    """

    class_name = None
    _SLOTS = ()
    _FROM_CONFIG: ClassVar[dict] = {}

    def __init__(self, learning_rate, clipnorm=None, clipvalue=None, global_clipnorm=None, name=None):
        owner = type(self).__name__
        self.learning_rate = learning_rate
        clips = {"clipnorm": clipnorm, "clipvalue": clipvalue, "global_clipnorm": global_clipnorm}
        given = [k for k, v in clips.items() if v is not None]
        if len(given) > 1:
            raise ValueError(f"{owner}: only one of clipnorm, clipvalue and global_clipnorm can be set, got {given}")
        for key in given:
            if _number(owner, key, clips[key]) <= 0:
                raise ValueError(f"{owner}: {key} must be > 0, got {clips[key]}")
        self.clipnorm, self.clipvalue, self.global_clipnorm = (None if v is None else float(v) for v in clips.values())
        self.name = owner.lower() if name is None else str(name)
        self.iterations = 0  # updates applied so far; a schedule is evaluated at this step
        self._slots = {}  # variable id -> (variable, {slot suffix: slot variable})

    # ---- learning rate --------------------------------------------------------------------

    @property
    def learning_rate(self):
        """The learning rate of the next update, a float (a schedule is evaluated at `iterations`)."""
        if self._schedule is not None:
            return float(self._schedule(self.iterations))
        return self._learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        if isinstance(value, schedules.LearningRateSchedule):
            self._schedule, self._learning_rate = value, None
        elif isinstance(value, numbers.Real) and not isinstance(value, bool):
            self._schedule, self._learning_rate = None, _number(type(self).__name__, "learning_rate", value, 0)
        else:
            raise TypeError(
                f"{type(self).__name__}: learning_rate must be a number or a schedule from "
                f"py_engine.train.schedules, got {value!r}"
            )

    # ---- slot variables -------------------------------------------------------------------

    @property
    def variables(self):
        """The slot variables, in TF.js's getWeights order (each kind of slot, then each variable)."""
        return [
            slot
            for suffix in self._SLOTS
            for _, slots in self._slots.values()
            if (slot := slots.get(suffix)) is not None and not slot.is_disposed
        ]

    def _slot(self, variable, suffix, initial_value=0.0):
        """The slot `suffix` of `variable`, made on first use (again if it was disposed)."""
        slots = self._slots.setdefault(variable.id, (variable, {}))[1]
        slot = slots.get(suffix)
        if slot is None or slot.is_disposed:
            name = ENGINE.unused_variable_name(f"{variable.var_name}/{suffix}")
            slot = ENGINE.variable(fill(variable.shape, float(initial_value)), trainable=False, name=name)
            slots[suffix] = slot
        return slot

    def _drop_slots_of_disposed_variables(self):
        gone = [vid for vid, (variable, _) in self._slots.items() if variable.is_disposed]
        for vid in gone:
            ENGINE.dispose(list(self._slots.pop(vid)[1].values()))

    def dispose(self):
        """Free every slot variable. The optimizer stays usable (slots start again from their initial value);
        `iterations` is kept."""
        for _, slots in self._slots.values():
            ENGINE.dispose(list(slots.values()))
        self._slots = {}

    # ---- updates --------------------------------------------------------------------------

    def apply_gradients(self, grads_and_vars):
        """Apply one update: `grads_and_vars` is {variable name: gradient} (what pe.variable_grads returns) or
        (gradient, variable) pairs. A None gradient is skipped. The gradients stay the caller's."""
        pairs = self._checked_pairs(grads_and_vars)
        self._drop_slots_of_disposed_variables()
        iterations = self.iterations
        with ENGINE.scope("apply_gradients"):
            try:
                scalars = self._step_scalars()
                gradients = self._clipped([g for _, g in pairs])
                for (variable, _), gradient in zip(pairs, gradients):
                    self._update(variable, gradient, scalars)
            except BaseException:
                self.iterations = iterations  # no update happened
                raise

    def _step_scalars(self):
        """The numbers of this update's rule (_scalars) as one float32 vector, and iterations advanced. It is a
        fresh_tensors value: a captured training step (pe.capture) replays with each step's numbers (the
        schedule's learning rate, Adam's bias corrections), not the recorded step's."""

        def next_step():
            numbers = self._scalars(self.iterations + 1, self.learning_rate)
            self.iterations += 1
            return [np.array(list(numbers.values()), np.float32)]

        return ENGINE.fresh_tensors(next_step)[0]

    def _scalars(self, step, lr):
        """{name: number}: the scalar arguments of the update rule, in its order, for update `step` (1, 2, ...) at
        learning rate lr."""
        raise NotImplementedError

    def minimize(self, loss_fn, var_list=None, return_cost=False):
        """TF.js's minimize: the gradients of loss_fn() for var_list (default every trainable variable it uses),
        one update, the gradients disposed. Returns the loss tensor if return_cost (the caller owns it)."""
        loss, gradients = variable_grads(loss_fn, var_list)
        try:
            self.apply_gradients(gradients)
        except BaseException:
            ENGINE.dispose(loss)
            raise
        finally:
            ENGINE.dispose(gradients)
        if return_cost:
            return loss
        ENGINE.dispose(loss)
        return None

    def _checked_pairs(self, grads_and_vars):
        """[(variable, gradient)] without None gradients; every problem is raised before anything changes."""
        where = f"{type(self).__name__}.apply_gradients"
        if isinstance(grads_and_vars, dict):
            pairs = []
            for name, gradient in grads_and_vars.items():
                variable = ENGINE.variables.get(name)
                if variable is None:
                    raise ValueError(
                        f"{where}: {name!r} is not a live variable (never made, or disposed); the dict maps variable "
                        "names to gradients, as pe.variable_grads returns them"
                    )
                pairs.append((variable, gradient))
        else:
            try:
                items = list(grads_and_vars)
            except TypeError:
                raise TypeError(
                    f"{where}: expected {{variable name: gradient}} or (gradient, variable) pairs, "
                    f"got {type(grads_and_vars).__name__}"
                ) from None
            pairs = []
            for item in items:
                if not (isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[1], Variable)):
                    raise TypeError(f"{where}: each pair must be (gradient, variable), got {item!r}")
                pairs.append((item[1], item[0]))
        checked, seen = [], set()
        for variable, gradient in pairs:
            if gradient is None:
                continue  # as TF.js: a variable without a gradient is left as it is
            self._check_pair(where, variable, gradient)
            if variable.id in seen:
                raise ValueError(f"{where}: variable {variable.var_name!r} has two gradients; sum them first")
            seen.add(variable.id)
            checked.append((variable, gradient))
        return checked

    @staticmethod
    def _check_pair(where, variable, gradient):
        name = variable.var_name
        if variable.is_disposed:
            raise DisposedTensorError(f"{where}: variable {name!r} was disposed; it cannot be updated")
        if variable.dtype != dtypes.float32:
            raise DTypeError(f"{where}: variable {name!r} is {variable.dtype}; only float32 variables can be trained")
        if not isinstance(gradient, Tensor):
            raise TypeError(f"{where}: the gradient of {name!r} must be a tensor, got {type(gradient).__name__}")
        if gradient.is_disposed:
            raise DisposedTensorError(
                f"{where}: the gradient of {name!r} ({gradient.name}) was disposed; apply gradients before "
                "disposing them"
            )
        if gradient.dtype != dtypes.float32:
            raise DTypeError(f"{where}: the gradient of {name!r} is {gradient.dtype}; gradients must be float32")
        if gradient.shape != variable.shape:
            raise ShapeError(
                f"{where}: the gradient of {name!r} has shape {gradient.shape}, the variable has shape {variable.shape}"
            )

    def _clipped(self, gradients):
        """Keras's clipping, on the device: each gradient to L2 norm <= clipnorm, all of them together to
        global norm <= global_clipnorm, or each element into [-clipvalue, clipvalue]. The bounds are Python numbers:
        on webgpu an op reads one as a uniform, with no upload."""
        if self.clipnorm is not None:
            c = self.clipnorm
            return [div(mul(g, c), maximum(sqrt(reduce_sum(square(g))), c)) for g in gradients]
        if self.global_clipnorm is not None and gradients:
            c = self.global_clipnorm
            total = reduce_sum(square(gradients[0]))
            for g in gradients[1:]:
                total = add(total, reduce_sum(square(g)))
            scale = div(c, maximum(sqrt(total), c))
            return [mul(g, scale) for g in gradients]
        if self.clipvalue is not None:
            return [clip_by_value(g, -self.clipvalue, self.clipvalue) for g in gradients]
        return gradients

    def _update(self, variable, gradient, scalars):
        """Assign variable and its slots their new values; scalars: _step_scalars."""
        raise NotImplementedError

    # ---- configs --------------------------------------------------------------------------

    def _tfjs_config(self):
        raise NotImplementedError

    def get_config(self):
        """TF.js's getConfig (camelCase keys), plus clipping and a schedule when set."""
        config = self._tfjs_config()
        if self._schedule is not None:
            config["learningRateSchedule"] = schedules.serialize(self._schedule)
        for key, attr in (("clipnorm", "clipnorm"), ("clipvalue", "clipvalue"), ("globalClipnorm", "global_clipnorm")):
            if getattr(self, attr) is not None:
                config[key] = getattr(self, attr)
        return config

    def to_json_config(self):
        """{"class_name": ..., "config": ...}, as TF.js writes an optimizer into model.json."""
        return {"class_name": self.class_name, "config": self.get_config()}

    @classmethod
    def from_config(cls, config):
        """The optimizer a get_config() (ours or TF.js's) describes."""
        known = {**cls._FROM_CONFIG, **_COMMON_CONFIG}
        unknown = [k for k in config if k not in known]
        if unknown:
            raise ValueError(
                f"{cls.__name__}.from_config: unknown config keys {unknown}; the keys are {', '.join(known)}"
            )
        kwargs = {known[k]: v for k, v in config.items() if v is not None and k != "learningRateSchedule"}
        if config.get("learningRateSchedule") is not None:
            kwargs["learning_rate"] = schedules.deserialize(config["learningRateSchedule"])
        return cls(**kwargs)

    def __repr__(self):
        return f"{type(self).__name__}({self.get_config()}, iterations={self.iterations})"


class SGD(Optimizer):
    """Gradient descent. momentum 0 is TF.js's tf.train.sgd: value -= lr * g. momentum > 0 is TF.js's
    tf.train.momentum(lr, momentum, useNesterov): acc = momentum * acc + g; value -= lr * acc, or with
    nesterov value -= lr * (g + momentum * acc). Its class_name follows TF.js: "SGD" or "Momentum"."""

    _SLOTS = ("momentum",)
    _FROM_CONFIG: ClassVar[dict] = {"learningRate": "learning_rate", "momentum": "momentum", "useNesterov": "nesterov"}

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, **common):
        super().__init__(learning_rate, **common)
        self.momentum = _number("SGD", "momentum", momentum, 0, 1)
        self.nesterov = bool(nesterov)

    @property
    def class_name(self):
        return "Momentum" if self.momentum > 0 else "SGD"

    def _scalars(self, step, lr):
        return {"minus_lr": -lr, "momentum": self.momentum}

    def _update(self, variable, gradient, scalars):
        if self.momentum == 0:
            (new_value,) = fuse_elementwise(_sgd, [variable, gradient], scalars)
            variable.assign(new_value)
            return
        accumulation = self._slot(variable, "momentum")
        rule = _nesterov if self.nesterov else _momentum
        new_accumulation, new_value = fuse_elementwise(rule, [variable, gradient, accumulation], scalars)
        accumulation.assign(new_accumulation)
        variable.assign(new_value)

    def _tfjs_config(self):
        if self.momentum > 0:
            return {"learningRate": self.learning_rate, "momentum": self.momentum, "useNesterov": self.nesterov}
        return {"learningRate": self.learning_rate}


class Adam(Optimizer):
    """TF.js's AdamOptimizer: m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2; value -= lr * m_hat / (sqrt(v_hat) + eps)
    with m_hat = m / (1 - b1^t), v_hat = v / (1 - b2^t) at step t = iterations + 1 (computed in Python and
    uploaded per step: TF.js keeps accBeta1/accBeta2 as tensors, the values are the same)."""

    class_name = "Adam"
    _SLOTS = ("m", "v")
    _FROM_CONFIG: ClassVar[dict] = {
        "learningRate": "learning_rate",
        "beta1": "beta_1",
        "beta2": "beta_2",
        "epsilon": "epsilon",
    }

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=DEFAULT_EPSILON, **common):
        super().__init__(learning_rate, **common)
        owner = type(self).__name__
        self.beta_1 = _number(owner, "beta_1", beta_1, 0, 1, high_open=True)
        self.beta_2 = _number(owner, "beta_2", beta_2, 0, 1, high_open=True)
        self.epsilon = _number(owner, "epsilon", epsilon, 0)

    def _scalars(self, step, lr):
        b1, b2 = self.beta_1, self.beta_2
        return {
            "beta_1": b1,
            "one_minus_beta_1": 1 - b1,
            "beta_2": b2,
            "one_minus_beta_2": 1 - b2,
            "epsilon": self.epsilon,
            "bias_1": 1 - b1**step,
            "bias_2": 1 - b2**step,
            "minus_lr": -lr,
        }

    def _update(self, variable, gradient, scalars):
        first, second = self._slot(variable, "m"), self._slot(variable, "v")
        new_first, new_second, new_value = fuse_elementwise(self._rule, [variable, gradient, first, second], scalars)
        first.assign(new_first)
        second.assign(new_second)
        variable.assign(new_value)

    _rule = staticmethod(_adam)

    def _tfjs_config(self):
        return {"learningRate": self.learning_rate, "beta1": self.beta_1, "beta2": self.beta_2, "epsilon": self.epsilon}


class AdamW(Adam):
    """Adam with decoupled weight decay. TF.js has no AdamW: this is Keras's rule, value -= lr * weight_decay *
    value, followed by the TF.js Adam step above on the decayed value. class_name "AdamW" (ours)."""

    class_name = "AdamW"
    _FROM_CONFIG: ClassVar[dict] = {**Adam._FROM_CONFIG, "weightDecay": "weight_decay"}

    def __init__(
        self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999, epsilon=DEFAULT_EPSILON, **common
    ):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, **common)
        self.weight_decay = _number("AdamW", "weight_decay", weight_decay, 0)

    def _scalars(self, step, lr):
        return {"decay": lr * self.weight_decay, **super()._scalars(step, lr)}

    _rule = staticmethod(_adamw)

    def _tfjs_config(self):
        return {**super()._tfjs_config(), "weightDecay": self.weight_decay}


class RMSprop(Optimizer):
    """TF.js's RMSPropOptimizer: rms = rho*rms + (1-rho)*g^2; mom = momentum*mom + lr*g / sqrt(rms + eps);
    value -= mom. Unlike Keras, epsilon is INSIDE the square root, and the momentum slot exists even when
    momentum is 0 (as in TF.js). centered also keeps mg = rho*mg + (1-rho)*g and divides by
    sqrt(rms - mg^2 + eps). TF.js 4.22 writes sqrt(rms - (mg^2 + eps)) there, which is NaN wherever the gradient
    has been 0 (rms = mg = 0); we add epsilon, as TensorFlow's centered RMSProp does."""

    class_name = "RMSProp"
    _SLOTS = ("rms", "momentum", "mg")
    _FROM_CONFIG: ClassVar[dict] = {
        "learningRate": "learning_rate",
        "decay": "rho",
        "momentum": "momentum",
        "epsilon": "epsilon",
        "centered": "centered",
    }

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=DEFAULT_EPSILON, centered=False, **common):
        super().__init__(learning_rate, **common)
        self.rho = _number("RMSprop", "rho", rho, 0, 1)
        self.momentum = _number("RMSprop", "momentum", momentum, 0, 1)
        self.epsilon = _number("RMSprop", "epsilon", epsilon, 0)
        self.centered = bool(centered)

    def _scalars(self, step, lr):
        return {
            "rho": self.rho,
            "one_minus_rho": 1 - self.rho,
            "epsilon": self.epsilon,
            "momentum": self.momentum,
            "lr": lr,
        }

    def _update(self, variable, gradient, scalars):
        mean_square, moments = self._slot(variable, "rms"), self._slot(variable, "momentum")
        if self.centered:  # one kernel would bind 10 buffers: the averages first
            mean_grad = self._slot(variable, "mg")
            new_mean_square, new_mean_grad = fuse_elementwise(
                _rmsprop_centered_averages, [gradient, mean_square, mean_grad], scalars
            )
            new_moments, new_value = fuse_elementwise(
                _rmsprop_centered_step, [variable, gradient, moments, new_mean_square, new_mean_grad], scalars
            )
            mean_grad.assign(new_mean_grad)
        else:
            new_mean_square, new_moments, new_value = fuse_elementwise(
                _rmsprop, [variable, gradient, mean_square, moments], scalars
            )
        mean_square.assign(new_mean_square)
        moments.assign(new_moments)
        variable.assign(new_value)

    def _tfjs_config(self):
        return {
            "learningRate": self.learning_rate,
            "decay": self.rho,
            "momentum": self.momentum,
            "epsilon": self.epsilon,
            "centered": self.centered,
        }


class Adagrad(Optimizer):
    """TF.js's AdagradOptimizer: acc = acc + g^2 (acc starts at initial_accumulator_value);
    value -= lr * g / sqrt(acc + eps). TF.js takes eps from its backend (1e-7 for float32) and has no config
    field for it: get_config() adds "epsilon" only when it differs from 1e-7."""

    class_name = "Adagrad"
    _SLOTS = ("accumulator",)
    _FROM_CONFIG: ClassVar[dict] = {
        "learningRate": "learning_rate",
        "initialAccumulatorValue": "initial_accumulator_value",
        "epsilon": "epsilon",
    }

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=DEFAULT_EPSILON, **common):
        super().__init__(learning_rate, **common)
        self.initial_accumulator_value = _number("Adagrad", "initial_accumulator_value", initial_accumulator_value, 0)
        self.epsilon = _number("Adagrad", "epsilon", epsilon, 0)

    def _scalars(self, step, lr):
        return {"epsilon": self.epsilon, "minus_lr": -lr}

    def _update(self, variable, gradient, scalars):
        accumulator = self._slot(variable, "accumulator", self.initial_accumulator_value)
        new_accumulator, new_value = fuse_elementwise(_adagrad, [variable, gradient, accumulator], scalars)
        accumulator.assign(new_accumulator)
        variable.assign(new_value)

    def _tfjs_config(self):
        config = {"learningRate": self.learning_rate, "initialAccumulatorValue": self.initial_accumulator_value}
        if self.epsilon != DEFAULT_EPSILON:
            config["epsilon"] = self.epsilon
        return config


class Adadelta(Optimizer):
    """Keras's Adadelta: acc_g = rho * acc_g + (1 - rho) * g^2; update = sqrt(acc_u + eps) / sqrt(acc_g + eps) * g;
    acc_u = rho * acc_u + (1 - rho) * update^2; value -= lr * update. TF.js 4.22's AdadeltaOptimizer divides by the
    square root of the accumulator from before this step's gradient (acc_g's old value) instead: its first update is
    lr * sqrt(eps) / sqrt(eps) * g = lr * g whatever rho and epsilon are, and every later one lags a step. That is a
    bug; this is Keras's (and the paper's) rule, so a model trained here follows Keras, not TF.js. The class name,
    config ({learningRate, rho, epsilon}) and slots ("<variable>/accum_grad", "<variable>/accum_var") are TF.js's.
    Keras's defaults (learning_rate 0.001, rho 0.95, epsilon 1e-7); get("adadelta") gives TF.js's compile default,
    learning rate 1."""

    class_name = "Adadelta"
    _SLOTS = ("accum_grad", "accum_var")
    _FROM_CONFIG: ClassVar[dict] = {"learningRate": "learning_rate", "rho": "rho", "epsilon": "epsilon"}

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=DEFAULT_EPSILON, **common):
        super().__init__(learning_rate, **common)
        self.rho = _number("Adadelta", "rho", rho, 0, 1)
        self.epsilon = _number("Adadelta", "epsilon", epsilon, 0)

    def _scalars(self, step, lr):
        return {"rho": self.rho, "one_minus_rho": 1 - self.rho, "epsilon": self.epsilon, "minus_lr": -lr}

    def _update(self, variable, gradient, scalars):
        accumulated_grad, accumulated_update = self._slot(variable, "accum_grad"), self._slot(variable, "accum_var")
        new_grad, new_update, new_value = fuse_elementwise(
            _adadelta, [variable, gradient, accumulated_grad, accumulated_update], scalars
        )
        accumulated_grad.assign(new_grad)
        accumulated_update.assign(new_update)
        variable.assign(new_value)

    def _tfjs_config(self):
        return {"learningRate": self.learning_rate, "rho": self.rho, "epsilon": self.epsilon}


class Adamax(Optimizer):
    """TF.js's AdamaxOptimizer (Keras's rule, plus TF.js's decay): m = b1*m + (1-b1)*g; u = max(b2*u, |g|);
    value -= lr_t / (1 - b1^t) * m / (u + eps), with lr_t = lr / (1 + decay * (t - 1)) at step t = iterations + 1.
    Defaults are TF.js's (tf.train.adamax: learning rate 0.002, b1 0.9, b2 0.999, epsilon 1e-7, decay 0); slots
    "<variable>/m" and "<variable>/v"."""

    class_name = "Adamax"
    _SLOTS = ("m", "v")
    _FROM_CONFIG: ClassVar[dict] = {
        "learningRate": "learning_rate",
        "beta1": "beta_1",
        "beta2": "beta_2",
        "epsilon": "epsilon",
        "decay": "decay",
    }

    def __init__(self, learning_rate=0.002, beta_1=0.9, beta_2=0.999, epsilon=DEFAULT_EPSILON, decay=0.0, **common):
        super().__init__(learning_rate, **common)
        self.beta_1 = _number("Adamax", "beta_1", beta_1, 0, 1, high_open=True)
        self.beta_2 = _number("Adamax", "beta_2", beta_2, 0, 1)
        self.epsilon = _number("Adamax", "epsilon", epsilon, 0)
        self.decay = _number("Adamax", "decay", decay, 0)

    def _scalars(self, step, lr):
        lr_t = lr / (1 + self.decay * (step - 1))
        return {
            "beta_1": self.beta_1,
            "one_minus_beta_1": 1 - self.beta_1,
            "beta_2": self.beta_2,
            "epsilon": self.epsilon,
            "step_size": -lr_t / (1 - self.beta_1**step),
        }

    def _update(self, variable, gradient, scalars):
        first, norm = self._slot(variable, "m"), self._slot(variable, "v")
        new_first, new_norm, new_value = fuse_elementwise(_adamax, [variable, gradient, first, norm], scalars)
        first.assign(new_first)
        norm.assign(new_norm)
        variable.assign(new_value)

    def _tfjs_config(self):
        return {
            "learningRate": self.learning_rate,
            "beta1": self.beta_1,
            "beta2": self.beta_2,
            "epsilon": self.epsilon,
            "decay": self.decay,
        }


# Class names, any case: TF.js's ("SGD", "Momentum", "Adam", "RMSProp", "Adagrad", "Adadelta", "Adamax"), Keras's and
# ours ("AdamW").
_CLASSES = {
    "sgd": SGD,
    "momentum": SGD,
    "adam": Adam,
    "adamw": AdamW,
    "rmsprop": RMSprop,
    "adagrad": Adagrad,
    "adadelta": Adadelta,
    "adamax": Adamax,
}

# A name alone gives what TF.js's getOptimizer gives for it (Adagrad's learning rate is 0.01 there, Adadelta's 1,
# Adamax's 0.002).
_BY_NAME = {
    "sgd": lambda: SGD(learning_rate=0.01),
    "adam": Adam,
    "adamw": AdamW,
    "rmsprop": RMSprop,
    "adagrad": lambda: Adagrad(learning_rate=0.01),
    "adadelta": lambda: Adadelta(learning_rate=1.0),
    "adamax": Adamax,
}


def get(identifier):
    """An optimizer from an optimizer (returned as is), a name ("sgd", "adam", "adamw", "rmsprop", "adagrad",
    "adadelta", "adamax", any case) or a serialization {"class_name": ..., "config": {...}} as TF.js writes it."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str):
        make = _BY_NAME.get(identifier.lower())
        if make is None:
            raise ValueError(f"unknown optimizer {identifier!r}; known names: {', '.join(_BY_NAME)}")
        return make()
    if isinstance(identifier, dict) and "class_name" in identifier:
        class_name = identifier["class_name"]
        cls = _CLASSES.get(class_name.lower()) if isinstance(class_name, str) else None
        if cls is None:
            raise ValueError(f"unknown optimizer class {class_name!r}; known classes: {', '.join(_CLASSES)}")
        return cls.from_config(identifier.get("config") or {})
    raise TypeError(
        f"cannot make an optimizer from {identifier!r}: pass an optimizer, a name ({', '.join(_BY_NAME)}) "
        "or {'class_name': ..., 'config': {...}}"
    )
