"""The Layer base class, the symbolic tensors of the functional API, layer names, and layer weights.

A layer is called either on tensors (it computes, inside a tidy) or on SymbolicTensors (it records a Node
of the graph a functional Model is made from, and says what shape comes out). Its weights are engine
variables named "<layer name>/<weight name>" (e.g. "conv1/kernel"), the names TF.js and Keras save them
under; when that name is taken (a second copy of a model) the variable gets a suffix ("conv1/kernel_1")
and the layer still knows the weight by its original name.

Masks (Keras's, as TF.js runs them): a layer with `supports_masking` receives the mask of its input (a bool tensor
[batch, time], or a list for list inputs) as call(..., mask=...) when its call takes one, and compute_mask says what
mask its output carries (by default the input's). A layer without `supports_masking` never sees a mask, and its
output carries none. A layer whose compute_output_shape returns a list of shapes has several outputs.
"""

import functools
import inspect
import re
from contextvars import ContextVar

import numpy as np

from ..engine import ENGINE
from ..errors import ShapeError
from ..tensor import Tensor
from ..train import constraints, regularizers
from . import initializers

CLASSES = {}  # Keras class name (and aliases) -> Layer subclass
_NAME_COUNTS = {}
# Keys of Keras/TF.js configs that change nothing at inference; accepted and written back unchanged.
_INERT_KEYS = {"sparse", "ragged", "autocast"}
_SOURCE = ContextVar("py_engine_weight_source", default=None)


def register(cls):
    """Make a layer class loadable by its Keras class name (and its aliases)."""
    for name in (cls.__name__, *cls.aliases):
        CLASSES[name] = cls
    return cls


def snake_case(name):
    """Keras's default layer name prefix: Conv2D -> conv2d, BatchNormalization -> batch_normalization, ReLU -> re_lu."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def unique_name(prefix):
    """prefix, then prefix_1, prefix_2, ... as Keras names layers and models."""
    n = _NAME_COUNTS.get(prefix, 0)
    _NAME_COUNTS[prefix] = n + 1
    return prefix if n == 0 else f"{prefix}_{n}"


class WeightSource:
    """Weight values by name for the layers built inside `with source:` (a model being loaded), instead of
    initializers. Records the variables made, so a failed load can dispose them."""

    def __init__(self, arrays, what="the weights"):
        self.arrays, self.what, self.used, self.created = dict(arrays), what, set(), []

    def take(self, name, shape):
        if name not in self.arrays:
            raise ShapeError(f"weight {name!r} of shape {list(shape)} is missing from {self.what}")
        value = self.arrays[name]
        if tuple(value.shape) != tuple(shape):
            raise ShapeError(
                f"weight {name!r} has shape {list(value.shape)} in {self.what}, but the model's topology needs "
                f"{list(shape)}"
            )
        self.used.add(name)
        return value

    def unused(self):
        return [name for name in self.arrays if name not in self.used]

    def __enter__(self):
        self._token = _SOURCE.set(self)
        return self

    def __exit__(self, *exc):
        _SOURCE.reset(self._token)


class SymbolicTensor:
    """A value in a functional model's graph: its shape (None for the batch size) and the call that makes it."""

    __slots__ = ("dtype", "index", "node", "shape")

    def __init__(self, shape, dtype, node, index=0):
        self.shape, self.dtype, self.node, self.index = tuple(shape), dtype, node, index

    @property
    def layer(self):
        return self.node.layer

    def __repr__(self):
        return f"SymbolicTensor(shape={self.shape}, dtype={self.dtype}, from layer {self.node.layer.name!r})"


class Node:
    """One call of a layer in a graph: the symbolic tensors it took (a list for merge layers) and made."""

    __slots__ = ("inputs", "layer", "list_input", "outputs")

    def __init__(self, layer, inputs, list_input):
        self.layer, self.inputs, self.list_input, self.outputs = layer, list(inputs), list_input, []


def shape_tuple(shape, what):
    """A shape from a config (a list, maybe with null) as a tuple of ints and None."""
    try:
        return tuple(None if d is None or d == -1 else int(d) for d in shape)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a list of ints (or null), got {shape!r}") from None


def pair(value, what, layer):
    """An int or a pair of ints as a pair (kernel sizes, strides, pool sizes)."""
    values = (value, value) if isinstance(value, int) else tuple(value) if isinstance(value, (list, tuple)) else ()
    if len(values) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
        raise ValueError(f"{layer}: {what} must be a positive int or a pair of them, got {value!r}")
    return values


def channels_last(data_format, layer):
    if data_format not in (None, "channels_last", "channelsLast"):
        raise ValueError(f"{layer}: data_format {data_format!r} is not supported; layers work on NHWC (channels_last)")


class WeightAccess:
    """count_params/get_weights/set_weights for anything with `name`, `weights` and `weight_names`: layers, models."""

    def count_params(self):
        return sum(v.size for v in self.weights)

    def get_weights(self):
        """The weights' values as numpy arrays, in the order of `weights`."""
        return [v.numpy() for v in self.weights]

    def set_weights(self, values):
        """Assign every weight, in the order of `weights`; all shapes are checked before any is assigned."""
        values = list(values)
        variables, names = self.weights, self.weight_names
        if len(values) != len(variables):
            raise ValueError(
                f"{self.name}: set_weights got {len(values)} arrays; it has {len(variables)} weights ({names})"
            )
        arrays = [np.asarray(v.numpy() if isinstance(v, Tensor) else v, np.float32) for v in values]
        for v, name, a in zip(variables, names, arrays):
            if a.shape != v.shape:
                raise ShapeError(
                    f"{self.name}: set_weights got shape {a.shape} for {name!r}, which has shape {v.shape}"
                )
        for v, a in zip(variables, arrays):
            v.assign(a)


def _serialized_extra(extra):
    """The extra config keys, each regularizer and constraint (a name, config or object) as the config model.json
    holds (py_engine/train/regularizers.py, constraints.py: they apply in training)."""
    out = dict(extra)
    for key, value in extra.items():
        if key.endswith("_regularizer"):
            out[key] = regularizers.serialize(value)
        elif key.endswith("_constraint"):
            out[key] = constraints.serialize(value)
    return out


@functools.cache
def _call_takes_mask(cls):
    return "mask" in inspect.signature(cls.call).parameters


class Layer(WeightAccess):
    aliases = ()  # other class names that load as this class
    takes_list = False  # merge layers take a list of tensors
    supports_masking = False  # True: takes its input's mask, and its output carries compute_mask's

    def __init__(
        self,
        name=None,
        trainable=True,
        dtype="float32",
        input_shape=None,
        batch_input_shape=None,
        batch_size=None,
        batch_shape=None,
        **extra,
    ):
        unknown = [k for k in extra if k not in _INERT_KEYS and not k.endswith(("_regularizer", "_constraint"))]
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown argument(s) {', '.join(map(repr, unknown))}")
        self.name = name or unique_name(snake_case(type(self).__name__))
        self.trainable = bool(trainable)
        self.dtype = dtype.get("config", {}).get("name", "float32") if isinstance(dtype, dict) else dtype
        batch_input_shape = batch_shape if batch_input_shape is None else batch_input_shape
        if batch_input_shape is None and input_shape is not None:
            batch_input_shape = (batch_size, *input_shape)
        self.batch_input_shape = None if batch_input_shape is None else shape_tuple(batch_input_shape, "input shape")
        self.built = False
        self._extra = _serialized_extra(extra)
        self._weights = []  # (name in the layer, variable)
        self._nodes = []

    # ---- what subclasses define --------------------------------------------------------------

    def build(self, input_shape):
        """Create the weights for inputs of `input_shape` (batch size None; a list of shapes for merge layers)."""

    def call(self, inputs, training=False):
        raise NotImplementedError

    def compute_output_shape(self, input_shape):
        return input_shape

    def compute_mask(self, inputs, mask=None):
        """The mask of the output(s), from the inputs and their mask (only asked of layers that support masking)."""
        return mask

    def layer_config(self):
        """The layer's own config keys (Keras/TF.js names)."""
        return {}

    # ---- config ------------------------------------------------------------------------------

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable, "dtype": self.dtype}
        if self.batch_input_shape is not None:
            config["batch_input_shape"] = list(self.batch_input_shape)
        return {**config, **self.layer_config(), **self._extra}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    @property
    def class_name(self):
        return type(self).__name__

    # ---- calling -----------------------------------------------------------------------------

    def __call__(self, inputs, training=False, mask=None):
        """On tensors: the output (a list for several); `mask` is the input's mask, for layers that support
        masking. On symbolic tensors: records the call in the graph (masks then come from the graph)."""
        items = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        symbolic = [isinstance(t, SymbolicTensor) for t in items]
        if any(symbolic):
            if not all(symbolic):
                raise TypeError(f"{self.name}: cannot mix symbolic tensors (from Input) and tensors in one call")
            if mask is not None:
                raise TypeError(
                    f"{self.name}: pass no mask with symbolic tensors; a model's masks come from its layers"
                )
            return self._call_symbolic(inputs, items)
        if mask is not None and not self.supports_masking:
            raise TypeError(f"{self.name} ({self.class_name}) does not support masking, but was given a mask")
        for t in items:
            if not isinstance(t, Tensor):
                raise TypeError(f"{self.name}: expected a Tensor or a SymbolicTensor, got {type(t).__name__}")
        shapes = [(None, *t.shape[1:]) for t in items]
        self._check_inputs(inputs, items)
        shape = shapes if self.takes_list else shapes[0]
        self._ensure_built(shape)
        self.compute_output_shape(shape)  # refuses inputs the layer was not built for, naming the layer
        return ENGINE.tidy(lambda: self.call_masked(inputs, training, mask))

    def call_masked(self, inputs, training=False, mask=None):
        """call(), giving it the mask when its call takes one."""
        if _call_takes_mask(type(self)):
            return self.call(inputs, training=training, mask=mask)
        return self.call(inputs, training=training)

    def _check_inputs(self, inputs, items):
        if self.takes_list and (not isinstance(inputs, (list, tuple)) or len(items) < 2):
            raise TypeError(f"{self.name} ({self.class_name}) takes a list of at least 2 inputs")
        if not self.takes_list and isinstance(inputs, (list, tuple)):
            raise TypeError(f"{self.name} ({self.class_name}) takes one input, got a list of {len(items)}")

    def _ensure_built(self, input_shape):
        if not self.built:
            self.build(input_shape)
            self.built = True

    def _call_symbolic(self, inputs, items):
        self._check_inputs(inputs, items)
        shapes = [t.shape for t in items]
        shape = shapes if self.takes_list else shapes[0]
        self._ensure_built(shape)
        node = Node(self, items, self.takes_list)
        out_shape = self.compute_output_shape(shape)
        several = isinstance(out_shape, list)
        node.outputs = [
            SymbolicTensor(s, "float32", node, k) for k, s in enumerate(out_shape if several else [out_shape])
        ]
        self._nodes.append(node)
        return list(node.outputs) if several else node.outputs[0]

    # ---- weights -----------------------------------------------------------------------------

    def add_weight(self, name, shape, initializer, trainable=True):
        """A new variable "<layer>/<name>": from the model being loaded, else from the initializer."""
        full = f"{self.name}/{name}"
        source = _SOURCE.get()
        value = source.take(full, shape) if source is not None else initializers.initialize(initializer, shape)
        # The value is fresh (a shard's weight, an initializer's draw), so the variable takes it without the copy a
        # user's array gets: loading EfficientNet-Lite0 copied its 18.8 MB once more for nothing.
        initial = ENGINE.from_numpy(np.ascontiguousarray(value, np.float32), "float32")
        try:
            v = ENGINE.variable(initial, trainable=trainable, name=ENGINE.unused_variable_name(full))
        finally:
            ENGINE.dispose(initial)
        if source is not None:
            source.created.append(v)
        self._weights.append((name, v))
        return v

    @property
    def weights(self):
        return [v for _, v in self._weights]

    @property
    def weight_names(self):
        """The weights' names as saved: "<layer>/<weight>", whatever suffix their variables got."""
        return [f"{self.name}/{name}" for name, _ in self._weights]

    @property
    def trainable_weights(self):
        return [v for _, v in self._weights if v.trainable and self.trainable]

    @property
    def non_trainable_weights(self):
        return [v for _, v in self._weights if not (v.trainable and self.trainable)]

    def dispose(self):
        """Free the layer's variables; returns how many."""
        count = sum(not v.is_disposed for v in self.weights)
        ENGINE.dispose(self.weights)
        return count

    def __repr__(self):
        return f"<{self.class_name} name={self.name!r}>"
