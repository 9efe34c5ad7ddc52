"""InputLayer and Input(): where a functional model's graph starts."""

from .base import Layer, Node, SymbolicTensor, register, unique_name


@register
class InputLayer(Layer):
    def __init__(
        self,
        input_shape=None,
        batch_size=None,
        batch_input_shape=None,
        dtype="float32",
        sparse=False,
        name=None,
        batch_shape=None,
        **extra,
    ):
        if input_shape is None and batch_input_shape is None and batch_shape is None:
            raise ValueError("InputLayer needs a shape: input_shape (without the batch) or batch_input_shape")
        if sparse:
            raise ValueError("InputLayer: sparse inputs are not supported")
        super().__init__(
            name=name or unique_name("input"),
            dtype=dtype,
            input_shape=input_shape,
            batch_input_shape=batch_input_shape,
            batch_size=batch_size,
            batch_shape=batch_shape,
            **extra,
        )
        self.built = True
        node = Node(self, [], False)
        node.outputs = [SymbolicTensor(self.batch_input_shape, self.dtype, node)]
        self._nodes.append(node)

    @property
    def output(self):
        return self._nodes[0].outputs[0]

    def get_config(self):  # exactly the keys TF.js writes for an InputLayer
        config = {"batch_input_shape": list(self.batch_input_shape), "dtype": self.dtype, "sparse": False}
        return {**config, "name": self.name, **self._extra}

    def call(self, inputs, training=False):
        return inputs


def Input(shape=None, batch_size=None, name=None, dtype="float32", batch_shape=None):
    """The symbolic input of a functional model: Input(shape=(224, 224, 3)) stands for a batch [None, 224, 224, 3]."""
    shape = (shape,) if isinstance(shape, int) else shape
    return InputLayer(input_shape=shape, batch_size=batch_size, name=name, dtype=dtype, batch_shape=batch_shape).output
