"""Sequential: a stack of single-input layers; its graph is built once the input shape is known."""

from ..layers import deserialize
from ..layers.base import Layer, SymbolicTensor, unique_name
from ..layers.input_layer import InputLayer
from .functional import Model


class Sequential(Model):
    class_name = "Sequential"

    def __init__(self, layers=None, name=None):
        self.name = name or unique_name("sequential")
        self._stack, self._input, self._output, self._plan = [], None, None, None
        self.nodes, self._layers, self.inputs, self.outputs = [], [], [], []  # until the input shape is known
        self._single_output = True
        for layer in layers or []:
            self.add(layer)

    def add(self, layer):
        """Append a layer (or start with an Input / InputLayer, which fixes the input shape)."""
        if isinstance(layer, SymbolicTensor) and isinstance(layer.layer, InputLayer):
            layer = layer.layer
        if isinstance(layer, InputLayer):
            if self._stack or self._input is not None:
                raise ValueError(f"{self.name}: an input layer can only come first")
            self._input = self._output = layer.output
            return
        if isinstance(layer, Model):
            raise TypeError(f"{self.name}: nesting models is not supported; add their layers instead")
        if not isinstance(layer, Layer):
            raise TypeError(f"{self.name}: add() takes a layer, got {type(layer).__name__}")
        if layer.takes_list:
            raise TypeError(
                f"{self.name}: {layer.name} ({layer.class_name}) takes several inputs; use a functional Model"
            )
        if self._output is None and layer.batch_input_shape is not None:
            spec = InputLayer(batch_input_shape=layer.batch_input_shape, name=f"{layer.name}_input", dtype=layer.dtype)
            self._input = self._output = spec.output
        self._stack.append(layer)
        if self._output is not None:
            self._output = layer(self._output)
            self._init_graph(self._input, self._output)

    @property
    def layers(self):
        return list(self._stack)

    def _ensure_graph(self, input_shape=None):
        if self._output is not None:
            return
        if input_shape is None:
            raise ValueError(
                f"{self.name} has no input shape yet: give its first layer input_shape=..., start it with an Input, "
                "or call it on data first"
            )
        self._input = self._output = InputLayer(batch_input_shape=(None, *input_shape[1:])).output
        for layer in self._stack:
            self._output = layer(self._output)
        self._init_graph(self._input, self._output)

    def get_config(self):
        """{"name", "layers": [{"class_name", "config"}]}; the first layer's config carries batch_input_shape (as TF.js)."""
        layers = [{"class_name": layer.class_name, "config": layer.get_config()} for layer in self._stack]
        if layers and self._input is not None and "batch_input_shape" not in layers[0]["config"]:
            layers[0]["config"]["batch_input_shape"] = list(self._input.shape)
        return {"name": self.name, "layers": layers}

    @classmethod
    def from_config(cls, config):
        """From {"name", "layers": [...]} or a bare list of layer entries (older Keras); InputLayer entries allowed."""
        entries = config if isinstance(config, list) else config.get("layers", [])
        model = cls(name=None if isinstance(config, list) else config.get("name"))
        for entry in entries:
            model.add(deserialize(entry))
        return model
