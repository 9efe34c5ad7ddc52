"""The functional Model: a graph of layer calls from Input()s to outputs; predict, weights, config, save.

inputs = pe.layers.Input(shape=(32, 32, 3))
x = pe.layers.Conv2D(8, 3, activation="relu")(inputs)
outputs = pe.layers.Dense(10, activation="softmax")(pe.layers.GlobalAveragePooling2D()(x))
model = pe.Model(inputs, outputs)
probabilities = model.predict(images, batch_size=32)
"""

import json

import numpy as np

from .. import ops
from ..engine import ENGINE
from ..errors import ShapeError
from ..io.save import save_layers_model
from ..io.topology import model_topology
from ..layers import deserialize
from ..layers.base import SymbolicTensor, WeightAccess, unique_name
from ..layers.input_layer import InputLayer
from ..tensor import Tensor
from .execution import execute, layer_steps
from .folding import InferencePlan
from .summary import summary_text
from .training import Trainable


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _shape_text(shape):
    return "(" + ", ".join(str(d) for d in shape) + ")"


class Model(WeightAccess, Trainable):
    class_name = "Model"
    _released = ()  # the unfolded weights that fold_batch_norms(release_unfolded=True) freed

    def __init__(self, inputs, outputs, name=None):
        self.name = name or unique_name("model")
        self._plan = None
        self._init_graph(inputs, outputs)

    # ---- the graph ---------------------------------------------------------------------------

    def _init_graph(self, inputs, outputs):
        self._single_output = not isinstance(outputs, (list, tuple))
        self.inputs, self.outputs = _as_list(inputs), _as_list(outputs)
        for what, symbols in (("inputs", self.inputs), ("outputs", self.outputs)):
            for s in symbols:
                if not isinstance(s, SymbolicTensor):
                    raise TypeError(
                        f"{self.name}: {what} must be symbolic tensors (from Input and layer calls), got {s!r}"
                    )
        for s in self.inputs:
            if not isinstance(s.layer, InputLayer):
                raise ValueError(f"{self.name}: an input must come from Input(), not from layer {s.layer.name!r}")
        self.nodes = self._sorted_nodes()
        layers = [s.layer for s in self.inputs]
        for node in self.nodes:
            if node.layer not in layers:
                layers.append(node.layer)
        names = [layer.name for layer in layers]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"{self.name}: layer names must be unique in a model; repeated: {', '.join(duplicates)}")
        self._layers = layers
        self._dispose_plan()

    def _sorted_nodes(self):
        """The layer calls the outputs depend on, each after the calls it takes inputs from (depth-first)."""
        order, seen = [], set()
        stack = [(s.node, False) for s in reversed(self.outputs)]
        while stack:
            node, finished = stack.pop()
            if finished:
                order.append(node)
            elif id(node) not in seen:
                seen.add(id(node))
                stack.append((node, True))
                stack += [(s.node, False) for s in reversed(node.inputs)]
        inputs = {id(s) for s in self.inputs}
        for node in order:
            if not node.inputs and id(node.outputs[0]) not in inputs:
                raise ValueError(
                    f"{self.name}: graph disconnected: the outputs need input {node.layer.name!r}, which is not among "
                    f"the model's inputs ({', '.join(s.layer.name for s in self.inputs)})"
                )
        return order

    def _ensure_graph(self, input_shape=None):
        """Sequential builds its graph once it knows the input shape; a functional model always has it."""

    @property
    def layers(self):
        return list(self._layers)

    def get_layer(self, name):
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError(
            f"{self.name} has no layer named {name!r}; its layers: {', '.join(layer.name for layer in self.layers)}"
        )

    # ---- running -----------------------------------------------------------------------------

    def __call__(self, inputs, training=False):
        """The outputs for input tensors (intermediates released); Dropout and BatchNormalization follow `training`."""
        items = _as_list(inputs)
        if any(isinstance(t, SymbolicTensor) for t in items):
            raise TypeError(f"{self.name}: using a model as a layer of another model is not supported")
        if not all(isinstance(t, Tensor) for t in items):
            raise TypeError(f"{self.name}: call a model on tensors (use predict() for numpy arrays)")
        self._ensure_graph(items[0].shape)
        self._check_inputs([t.shape for t in items], "__call__")
        self._check_unfolded_kept("__call__")
        return ENGINE.tidy(
            lambda: self._pack(execute(layer_steps(self.nodes, training), self.inputs, items, self.outputs))
        )

    def _pack(self, outputs):
        return outputs[0] if self._single_output else outputs

    def _check_inputs(self, shapes, method):
        if len(shapes) != len(self.inputs):
            raise ValueError(f"{self.name}.{method}: the model has {len(self.inputs)} inputs, got {len(shapes)}")
        for s, shape in zip(self.inputs, shapes):
            if len(shape) != len(s.shape) or any(d is not None and d != n for d, n in zip(s.shape, shape)):
                raise ShapeError(
                    f"{self.name}.{method}: input {s.layer.name!r} expects shape {_shape_text(s.shape)} "
                    f"(None: any size), got {tuple(shape)}"
                )

    def predict(self, x, batch_size=32, outputs=None):
        """The outputs for x (a tensor, numpy array or nested list; a list of them for several inputs).

        Runs the inference plan (BatchNormalization folded, activations fused) on batches of `batch_size`
        examples, each in its own scope; returns a new tensor (a list for several outputs). `outputs` names layers
        whose outputs to return instead of the model's (features for transfer learning: only the steps they need
        run); a name, or a list of names for a list of tensors.
        """
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"{self.name}.predict: batch_size must be a positive int, got {batch_size!r}")
        one_per_input = len(self.inputs) > 1 or (isinstance(x, (list, tuple)) and len(x) == 1 and _is_array(x[0]))
        items = [
            t if isinstance(t, Tensor) else np.asarray(t, np.float32) for t in (_as_list(x) if one_per_input else [x])
        ]
        self._ensure_graph(items[0].shape)
        self._check_inputs([t.shape for t in items], "predict")
        rows = {t.shape[0] for t in items}
        if len(rows) > 1:
            raise ShapeError(f"{self.name}.predict: the inputs have different numbers of examples: {sorted(rows)}")
        n = rows.pop()
        plan = self.inference_plan()
        steps, symbols, single = plan.steps, self.outputs, self._single_output
        if outputs is not None:
            single = isinstance(outputs, str)
            steps, symbols = self._steps_for(plan, [outputs] if single else list(outputs))
        pieces = []
        try:
            for start in range(0, max(n, 1), batch_size):
                with ENGINE.scope("predict") as scope:
                    batch = [_rows(t, start, start + batch_size, n) for t in items]
                    pieces.append(scope.export(execute(steps, self.inputs, batch, symbols)))
        except BaseException:
            ENGINE.dispose(pieces)
            raise
        if len(pieces) == 1:
            return pieces[0][0] if single else pieces[0]
        try:
            joined = ENGINE.tidy(lambda: [ops.concat([p[k] for p in pieces], 0) for k in range(len(symbols))])
            return joined[0] if single else joined
        finally:
            ENGINE.dispose(pieces)

    def _steps_for(self, plan, names):
        """(the plan's steps that the named layers' outputs need, those outputs' symbols)."""
        symbols = []
        for name in names:
            layer = self.get_layer(name)
            calls = [node for node in self.nodes if node.layer is layer]
            if len(calls) != 1:
                raise ValueError(f"{self.name}.predict: layer {name!r} is called {len(calls)} times in the model")
            symbols.append(calls[0].outputs[0])
        needed, steps = {id(s) for s in symbols}, []
        for step in reversed(plan.steps):
            if any(id(s) in needed for s in step.outputs):
                steps.append(step)
                needed.update(id(s) for s in step.inputs)
        made = {id(s) for step in steps for s in step.outputs} | {id(s) for s in self.inputs}
        for name, s in zip(names, symbols):
            if id(s) not in made:
                raise ValueError(
                    f"{self.name}.predict: layer {name!r}'s output is folded into the step after it in the inference "
                    "plan (a convolution's batch norm or activation); ask for that layer's output instead"
                )
        return steps[::-1], symbols

    # ---- inference plan ----------------------------------------------------------------------

    def inference_plan(self):
        """The plan predict() runs: built (folding BatchNormalization) on first use, rebuilt if weights changed."""
        self._ensure_graph()
        if self._plan is None or self._plan.stale:
            self._dispose_plan()
            self._plan = InferencePlan(self)
        return self._plan

    def fold_batch_norms(self, release_unfolded=False):
        """Fold every BatchNormalization that follows a convolution into it now; returns how many were folded.

        The layers keep their own weights, so folding costs memory: up to the model's size again. For
        inference only, release_unfolded=True frees the weights the folded ones replaced (those convolutions'
        and batch norms'); predict() keeps working, while calling the model, get_weights, set_weights and
        saving then raise, since the model no longer has those weights.
        """
        plan = self.inference_plan()
        if release_unfolded and not self._released:
            if len({id(node.layer) for node in self.nodes}) != len(self.nodes):
                raise ValueError(f"{self.name}: release_unfolded is not supported for a model that shares layers")
            self._released = plan.release_sources()
        return plan.folded

    @property
    def is_disposed(self):
        """True once a weight predict() needs is gone (model.dispose(), pe.dispose_variables(), ...)."""
        released = {id(v) for v in self._released}
        kept = [v for v in self.weights if id(v) not in released]
        return any(v.is_disposed for v in kept + (self._plan.variables if self._plan is not None else []))

    def _check_unfolded_kept(self, method):
        if self._released:
            raise RuntimeError(
                f"{self.name}.{method}: this model freed its unfolded weights "
                "(fold_batch_norms(release_unfolded=True)); only predict() works. Load it again to do more."
            )

    def _dispose_plan(self):
        if getattr(self, "_plan", None) is not None:
            self._plan.dispose()
        self._plan = None

    # ---- weights -----------------------------------------------------------------------------

    def _named_weights(self):
        """(saved name, variable): every trainable weight, then the others, layer by layer (as Keras and TF.js)."""
        trainable, frozen = [], []
        for layer in self.layers:
            for name, v in zip(layer.weight_names, layer.weights):
                (trainable if v.trainable and layer.trainable else frozen).append((name, v))
        return trainable + frozen

    @property
    def weights(self):
        return [v for _, v in self._named_weights()]

    @property
    def weight_names(self):
        return [name for name, _ in self._named_weights()]

    @property
    def trainable_weights(self):
        return [v for layer in self.layers for v in layer.trainable_weights]

    @property
    def non_trainable_weights(self):
        return [v for layer in self.layers for v in layer.non_trainable_weights]

    def get_weights(self):
        self._check_unfolded_kept("get_weights")
        return super().get_weights()

    def set_weights(self, values):
        self._check_unfolded_kept("set_weights")
        super().set_weights(values)

    def dispose(self):
        """Free the model's variables (its layers' weights and any folded ones) and fit's kept programs; returns how
        many variables were freed."""
        self._release_fit_steps()
        count = sum(layer.dispose() for layer in self.layers)
        if self._plan is not None:
            count += len(self._plan.variables)
        self._dispose_plan()
        return count

    # ---- description, config, saving ---------------------------------------------------------

    def summary(self, print_fn=print):
        """A table of the layers, output shapes and parameter counts; printed with print_fn (None: not printed)."""
        self._ensure_graph()
        text = summary_text(self)
        if print_fn is not None:
            print_fn(text)
        return text

    def get_config(self):
        """The Keras functional config: layers with their inbound nodes, input_layers, output_layers."""
        in_model = {id(node) for node in self.nodes}
        index = {}  # a node's position among its layer's calls in this model
        for layer in self.layers:
            calls = [node for node in layer._nodes if id(node) in in_model]
            index.update((id(node), k) for k, node in enumerate(calls))

        def ref(s):
            return [s.layer.name, index[id(s.node)], s.index]

        layers = []
        for layer in self.layers:
            calls = [node for node in layer._nodes if id(node) in in_model and node.inputs]
            inbound = [[[*ref(s), {}] for s in node.inputs] for node in calls]
            entry = {"name": layer.name, "class_name": layer.class_name, "config": layer.get_config()}
            layers.append({**entry, "inbound_nodes": inbound})
        inputs, outputs = [ref(s) for s in self.inputs], [ref(s) for s in self.outputs]
        return {"name": self.name, "layers": layers, "input_layers": inputs, "output_layers": outputs}

    @classmethod
    def from_config(cls, config):
        """A functional model from its Keras config (layers are called in an order their inputs allow)."""
        layers, made, pending = {}, {}, []
        for entry in config.get("layers", []):
            layer = deserialize(entry)
            if layer.name in layers:
                raise ValueError(f"model config: two layers are named {layer.name!r}")
            layers[layer.name] = layer
            made[layer.name] = [layer.output] if isinstance(layer, InputLayer) else []
            if not isinstance(layer, InputLayer):
                pending += [(layer, _node_refs(node, layer.name)) for node in entry.get("inbound_nodes", [])]
        while pending:
            waiting, blocked = [], set()
            for layer, refs in pending:
                missing = [name for name, _, _ in refs if name not in layers]
                if missing:
                    raise ValueError(
                        f"model config: layer {layer.name!r} takes input from {missing[0]!r}, which is not a layer"
                    )
                if layer.name in blocked or any(len(made[name]) <= k for name, k, _ in refs):
                    blocked.add(layer.name)  # a layer's calls happen in order
                    waiting.append((layer, refs))
                    continue
                inputs = [_output(made[name][k], t, name) for name, k, t in refs]
                made[layer.name].append(layer(inputs if layer.takes_list else _one(inputs, layer)))
            if len(waiting) == len(pending):
                names = ", ".join(sorted({layer.name for layer, _ in waiting}))
                raise ValueError(f"model config: the inputs of layers {names} never become available")
            pending = waiting

        def symbols(refs, what):
            refs = [refs] if refs and isinstance(refs[0], str) else refs
            try:
                return [_output(made[name][k], int(ref[0]) if ref else 0, name) for name, k, *ref in refs]
            except (KeyError, IndexError):
                raise ValueError(f"model config: {what} {refs!r} name layer calls that do not exist") from None

        inputs, outputs = (
            symbols(config.get("input_layers", []), "input_layers"),
            symbols(config.get("output_layers", []), "output_layers"),
        )
        return cls(
            inputs[0] if len(inputs) == 1 else inputs,
            outputs[0] if len(outputs) == 1 else outputs,
            name=config.get("name"),
        )

    def to_json(self):
        """model.json's modelTopology, as a JSON string."""
        return json.dumps(model_topology(self))

    def save(self, path, max_shard_bytes=None, converted_by=None):
        """Write the TF.js layers format into folder `path`: model.json and weight shards (4 MiB each by default)."""
        return save_layers_model(self, path, max_shard_bytes=max_shard_bytes, converted_by=converted_by)

    def __repr__(self):
        return f"<{self.class_name} name={self.name!r}, {len(self.layers)} layers>"


def _is_array(x):
    return isinstance(x, (Tensor, np.ndarray))


def _rows(t, start, stop, n):
    """Examples start:stop of t, as a tensor (the whole of t when it fits in one batch)."""
    if isinstance(t, Tensor):
        return t if start == 0 and stop >= n else t[start:stop]
    return ops.tensor(t[start:stop], "float32")


def _output(call, index, layer_name):
    """Output `index` of one call of a layer (a call of a layer with several outputs returned a list)."""
    if isinstance(call, list):
        return call[index]
    if index != 0:
        raise ValueError(f"model config: layer {layer_name!r} has one output, not output {index}")
    return call


def _one(inputs, layer):
    if len(inputs) != 1:
        raise ValueError(f"model config: layer {layer.name!r} ({layer.class_name}) takes one input, got {len(inputs)}")
    return inputs[0]


def _node_refs(node, layer_name):
    """[(layer name, node index, tensor index)] from an inbound node [[name, node, tensor, kwargs], ...]."""
    try:
        return [(str(ref[0]), int(ref[1]), int(ref[2])) for ref in node]
    except (TypeError, ValueError, IndexError):
        raise ValueError(
            f"model config: layer {layer_name!r} has an inbound node this loader cannot read: {node!r}"
        ) from None
