"""Activation functions by name, as Dense, Conv2D, Activation and the other layers that take `activation=` use them.

The set is TensorFlow.js 4.22's (tfjs-layers activations.ts) under the names a layer config in model.json gives
them: TF.js writes the snake_case of its class name ("hard_sigmoid", "log_softmax"), as Keras does. TF.js's own
spellings ("hardSigmoid", "logSoftmax") and Keras's "silu" (swish) are accepted and written back in that form.
Each is TF.js's formula, op for op where the ops exist here, and differentiable:

- linear: x; relu: max(x, 0); relu6: min(max(x, 0), 6); elu: x if x > 0 else exp(x) - 1
- sigmoid: 1 / (1 + exp(-x)); tanh; softplus: log(1 + exp(x)); softsign: x / (1 + |x|)
- selu: scale * x if x > 0 else scale * alpha * (exp(x) - 1), scale = 1.0507..., alpha * scale = 1.7581...
- hard_sigmoid: clip(0.2 x + 0.5, 0, 1) (TF.js's and Keras 2's slope; Keras 3 uses x / 6 + 0.5)
- swish: x * sigmoid(x); mish: x * tanh(softplus(x))
- gelu: x * 0.5 * (1 + erf(x / sqrt(2))) (exact; erf is a kernel of its own, ops.erf)
- gelu_new: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) (the tanh approximation). TF.js 4.22 writes it as
  "gelu_new" but reads that name back as "geluNew", which it does not know: a TF.js model using it loads here, and
  one saved here loads in TF.js only if its activation is renamed.
- softmax, log_softmax: over the last axis.
"""

import math

from .. import ops
from ..ops.fused import ACTIVATIONS as FUSABLE  # noqa: F401 - the ones a fused convolution applies itself

SELU_SCALE = 1.0507009873554804934193349852946  # TF.js's selu_util constants
SELU_SCALE_ALPHA = 1.7580993408473768599402175208123
_SQRT_HALF = math.sqrt(0.5)
_SQRT_TWO_OVER_PI = math.sqrt(2 / math.pi)


def softsign(x):
    """x / (1 + |x|)."""
    return ops.div(x, ops.add(ops.abs(x), 1.0))


def selu(x):
    """scale * x where x > 0, else scale * alpha * (exp(x) - 1) (TF.js's tf.selu; elu's exp(x) - 1 has no overflow
    on the branch that is not taken, so the gradient stays finite)."""
    return ops.where(ops.greater(x, 0.0), ops.mul(x, SELU_SCALE), ops.mul(ops.elu(x), SELU_SCALE_ALPHA))


def hard_sigmoid(x):
    """clip(0.2 x + 0.5, 0, 1), as TF.js's K.hardSigmoid."""
    return ops.clip_by_value(ops.add(ops.mul(x, 0.2), 0.5), 0.0, 1.0)


def swish(x):
    """x * sigmoid(x) (Keras's silu)."""
    return ops.mul(ops.sigmoid(x), x)


def mish(x):
    """x * tanh(softplus(x))."""
    return ops.mul(x, ops.tanh(ops.softplus(x)))


def gelu(x):
    """x * Phi(x), Phi the standard normal CDF: x * 0.5 * (1 + erf(x / sqrt(2)))."""
    return ops.mul(x, ops.mul(ops.add(ops.erf(ops.mul(x, _SQRT_HALF)), 1.0), 0.5))


def gelu_new(x):
    """GELU's tanh approximation: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))."""
    inner = ops.mul(ops.add(x, ops.mul(ops.mul(ops.mul(x, x), x), 0.044715)), _SQRT_TWO_OVER_PI)
    return ops.mul(ops.mul(x, ops.add(ops.tanh(inner), 1.0)), 0.5)


FUNCTIONS = {
    "linear": lambda x: x,
    "relu": ops.relu,
    "relu6": ops.relu6,
    "elu": ops.elu,
    "selu": selu,
    "sigmoid": ops.sigmoid,
    "hard_sigmoid": hard_sigmoid,
    "tanh": ops.tanh,
    "softplus": ops.softplus,
    "softsign": softsign,
    "swish": swish,
    "mish": mish,
    "gelu": gelu,
    "gelu_new": gelu_new,
    "softmax": lambda x: ops.softmax(x, -1),
    "log_softmax": lambda x: ops.log_softmax(x, -1),
}
# Other spellings: TF.js's class names (camelCase) and Keras's synonyms.
ALIASES = {"hardSigmoid": "hard_sigmoid", "logSoftmax": "log_softmax", "geluNew": "gelu_new", "silu": "swish"}
# TF.js's name for each (its class name, what tf.layers.dense({activation}) takes)
TFJS_NAMES = {name: name for name in FUNCTIONS} | {"hard_sigmoid": "hardSigmoid", "log_softmax": "logSoftmax"}


def normalize(activation, layer):
    """The activation's name ("linear" for None); a name that is not known here is refused, naming the layer."""
    name = "linear" if activation is None else activation
    if isinstance(name, dict):  # Keras 3: {"class_name": "function", "config": "relu", ...}; else {"class_name": ...}
        config = name.get("config")
        name = config if isinstance(config, str) else name.get("class_name")
    if isinstance(name, str):
        name = ALIASES.get(name, name)
    if name not in FUNCTIONS:
        raise ValueError(f"{layer}: unknown activation {activation!r}; supported: {', '.join(FUNCTIONS)}")
    return name


def get(activation):
    """The function f(x) an activation name (or None, "linear") stands for."""
    return FUNCTIONS[normalize(activation, "activations.get")]


def apply(name, x):
    return FUNCTIONS[name](x)
