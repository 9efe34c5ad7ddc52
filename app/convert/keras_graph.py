"""A Keras functional-model config (the `modelTopology` of a TensorFlow.js layers model.json), built layer by layer,
with each layer's weights converted from PyTorch layouts as it is added.

The configs are what TensorFlow.js 4.22 itself writes (`model.toJSON()`: snake_case keys, "Model" class), so the
result loads in real TF.js and in py_engine alike. Weight names are `<layer>/<weight>` as in TF.js.
"""

import numpy as np

from py_engine.window_output_size import conv_output_length

KERAS_VERSION = "tfjs-layers 4.22.0"
_GLOROT = {
    "class_name": "VarianceScaling",
    "config": {"scale": 1, "mode": "fan_avg", "distribution": "normal", "seed": None},
}
_ZEROS = {"class_name": "Zeros", "config": {}}
_ONES = {"class_name": "Ones", "config": {}}


def conv_kernel(oihw: np.ndarray) -> np.ndarray:
    """torch Conv2d weight [out, in, h, w] -> Keras Conv2D kernel [h, w, in, out]."""
    return np.ascontiguousarray(oihw.transpose(2, 3, 1, 0))


def depthwise_kernel(c1hw: np.ndarray) -> np.ndarray:
    """torch depthwise Conv2d weight [channels, 1, h, w] (groups=channels) -> Keras [h, w, channels, 1]."""
    if c1hw.ndim != 4 or c1hw.shape[1] != 1:
        raise ValueError(f"depthwise weight must be [channels, 1, h, w], got {list(c1hw.shape)}")
    return np.ascontiguousarray(c1hw.transpose(2, 3, 0, 1))


def dense_kernel(out_in: np.ndarray) -> np.ndarray:
    """torch Linear weight [out, in] -> Keras Dense kernel [in, out]."""
    return np.ascontiguousarray(out_in.T)


class Graph:
    """Layers in topological order; each `add` returns the new layer's name, to be used as the next input."""

    def __init__(self, name: str):
        self.name = name
        self.layers: list[dict] = []
        self.weights: list[tuple[str, np.ndarray]] = []
        self.shapes: dict[str, tuple] = {}  # output shape of each layer, batch dimension left out
        self.inputs: list[str] = []
        self.outputs: list[str] = []

    def add(self, class_name: str, name: str, inputs: list[str], shape: tuple, weights=(), **config) -> str:
        if name in self.shapes:
            raise ValueError(f"layer name {name!r} is used twice")
        config = {**config, "name": name, "trainable": True}
        nodes = [[[source, 0, 0, {}] for source in inputs]] if inputs else []
        self.layers.append({"name": name, "class_name": class_name, "config": config, "inbound_nodes": nodes})
        self.weights += [(f"{name}/{weight}", np.asarray(value, np.float32)) for weight, value in weights]
        self.shapes[name] = tuple(shape)
        return name

    def input(self, name: str, shape: tuple) -> str:
        self.add("InputLayer", name, [], shape, batch_input_shape=[None, *shape], dtype="float32", sparse=False)
        del self.layers[-1]["config"]["trainable"]  # TF.js writes none for InputLayer
        self.inputs.append(name)
        return name

    def zero_padding(self, x: str, name: str, pads: tuple[tuple[int, int], tuple[int, int]]) -> str:
        h, w, c = self.shapes[x]
        shape = (h + sum(pads[0]), w + sum(pads[1]), c)
        return self.add("ZeroPadding2D", name, [x], shape, padding=[list(p) for p in pads], data_format="channels_last")

    def _window(self, x, kernel, stride, padding):
        h, w, _ = self.shapes[x]
        return conv_output_length(h, kernel, padding, stride), conv_output_length(w, kernel, padding, stride)

    def conv2d(self, x: str, name: str, kernel: np.ndarray, stride=1, padding="valid", bias=None) -> str:
        """kernel in Keras layout [h, w, in, out]."""
        kh, kw, cin, cout = kernel.shape
        if kh != kw or cin != self.shapes[x][-1]:
            raise ValueError(f"{name}: kernel {list(kernel.shape)} does not fit input {self.shapes[x]}")
        weights = [("kernel", kernel)] + ([("bias", bias)] if bias is not None else [])
        config = {"filters": cout, "kernel_initializer": _GLOROT, "kernel_regularizer": None, "kernel_constraint": None}
        config.update(_conv_config(kh, stride, padding, bias is not None))
        return self.add("Conv2D", name, [x], (*self._window(x, kh, stride, padding), cout), weights, **config)

    def depthwise_conv2d(self, x: str, name: str, kernel: np.ndarray, stride=1, padding="valid") -> str:
        """kernel in Keras layout [h, w, channels, 1]."""
        kh, kw, c, multiplier = kernel.shape
        if kh != kw or c != self.shapes[x][-1] or multiplier != 1:
            raise ValueError(f"{name}: depthwise kernel {list(kernel.shape)} does not fit input {self.shapes[x]}")
        config = _conv_config(kh, stride, padding, False)
        config.update(
            depth_multiplier=1, depthwise_initializer=_GLOROT, depthwise_regularizer=None, depthwise_constraint=None
        )
        shape = (*self._window(x, kh, stride, padding), c)
        return self.add("DepthwiseConv2D", name, [x], shape, [("depthwise_kernel", kernel)], **config)

    def batch_norm(self, x: str, name: str, gamma, beta, mean, variance, epsilon=1e-3) -> str:
        c = self.shapes[x][-1]
        if any(np.shape(v) != (c,) for v in (gamma, beta, mean, variance)):
            raise ValueError(f"{name}: batch-norm parameters must have shape ({c},)")
        weights = [("gamma", gamma), ("beta", beta), ("moving_mean", mean), ("moving_variance", variance)]
        config = {"axis": -1, "momentum": 0.99, "epsilon": epsilon, "center": True, "scale": True}
        config.update(beta_initializer=_ZEROS, gamma_initializer=_ONES, moving_mean_initializer=_ZEROS)
        config.update(moving_variance_initializer=_ONES, beta_regularizer=None, gamma_regularizer=None)
        config.update(beta_constraint=None, gamma_constraint=None)
        return self.add("BatchNormalization", name, [x], self.shapes[x], weights, **config)

    def relu(self, x: str, name: str, max_value=None) -> str:
        return self.add("ReLU", name, [x], self.shapes[x], max_value=max_value)

    def add_layers(self, xs: list[str], name: str) -> str:
        if len({self.shapes[x] for x in xs}) != 1:
            raise ValueError(f"{name}: cannot add shapes {[self.shapes[x] for x in xs]}")
        return self.add("Add", name, xs, self.shapes[xs[0]])

    def global_avg_pool(self, x: str, name: str) -> str:
        return self.add("GlobalAveragePooling2D", name, [x], self.shapes[x][-1:], data_format="channels_last")

    def dropout(self, x: str, name: str, rate: float) -> str:
        return self.add("Dropout", name, [x], self.shapes[x], rate=rate, noise_shape=None, seed=None)

    def dense(self, x: str, name: str, kernel: np.ndarray, bias: np.ndarray) -> str:
        """kernel in Keras layout [in, out]."""
        if kernel.shape[0] != self.shapes[x][-1] or bias.shape != kernel.shape[1:]:
            raise ValueError(f"{name}: kernel {list(kernel.shape)}, bias {list(bias.shape)} vs input {self.shapes[x]}")
        config = {"units": kernel.shape[1], "activation": "linear", "use_bias": True, "kernel_initializer": _GLOROT}
        config.update(bias_initializer=_ZEROS, kernel_regularizer=None, bias_regularizer=None)
        config.update(activity_regularizer=None, kernel_constraint=None, bias_constraint=None)
        return self.add("Dense", name, [x], (kernel.shape[1],), [("kernel", kernel), ("bias", bias)], **config)

    def topology(self) -> dict:
        if not self.inputs or not self.outputs:
            raise ValueError(f"model {self.name!r} needs inputs and outputs")
        config = {
            "name": self.name,
            "layers": self.layers,
            "input_layers": [[x, 0, 0] for x in self.inputs],
            "output_layers": [[x, 0, 0] for x in self.outputs],
        }
        return {"class_name": "Model", "config": config, "keras_version": KERAS_VERSION, "backend": "tensor_flow.js"}


def _conv_config(kernel, stride, padding, use_bias):
    return {
        "kernel_size": [kernel, kernel],
        "strides": [stride, stride],
        "padding": padding,
        "data_format": "channels_last",
        "dilation_rate": [1, 1],
        "activation": "linear",
        "use_bias": use_bias,
        "bias_initializer": _ZEROS,
        "bias_regularizer": None,
        "activity_regularizer": None,
        "bias_constraint": None,
    }
