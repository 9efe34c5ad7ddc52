"""compile / fit / evaluate / train_on_batch / test_on_batch: Keras's API with TensorFlow.js's training semantics.

Nothing in the loop can leak: each batch runs in its own scope; its values (loss, metrics) go into their row of one
fixed-size epoch table on the device, read back once per epoch together with the validation table. The sums,
weighted by batch size, and the NaN check are done on the host from that table, so a batch adds two kernels
(pad, add) and no upload to what its step costs. Callbacks only ever see Python floats. A callback that
overrides on_batch_end asks for per-batch logs, which costs one readback per batch.
"""

import weakref

import numpy as np

from .. import ops
from ..autograd import stop_recording, variable_grads
from ..engine import ENGINE
from ..errors import ShapeError, TrainingError
from ..ops.creation import random_generator
from ..tensor import Tensor
from ..train import callbacks as callbacks_module
from ..train import constraints as constraints_module
from ..train import losses as losses_module
from ..train import metrics as metrics_module
from ..train import optimizers as optimizers_module
from ..train.regularizers import activity_penalty, activity_regularized, penalties
from .execution import execute, layer_steps


class TrainingConfig:
    """What compile() chose: the optimizer, one loss per output, metrics per output, and the names in logs."""

    def __init__(self, model, optimizer, loss, metrics):
        outputs = model.outputs
        self.optimizer = optimizer
        self.losses = [losses_module.get(entry) for entry in _per_output(loss, model, "loss")]
        prefixes = [""] if len(outputs) == 1 else [f"{s.layer.name}_" for s in outputs]
        self.metrics = []  # (output index, log name, per-example fn)
        for k, entries in enumerate(_per_output(metrics or [], model, "metrics", listed=True)):
            for entry in entries:
                name, fn = metrics_module.get(entry, loss=self.losses[k], output_shape=outputs[k].shape)
                self.metrics.append((k, prefixes[k] + name, fn))
        self.loss_names = ["loss"] + ([f"{prefix}loss" for prefix in prefixes] if len(outputs) > 1 else [])
        self.log_names = self.loss_names + [name for _, name, _ in self.metrics]
        self.metric_identifiers = metrics
        self.penalties = penalties(model)
        self.activity = activity_regularized(model)  # [(symbolic output, regularizer)]
        self.constraints = constraints_module.constrained(model)  # [(variable, constraint)]

    def to_tfjs(self):
        """model.json's trainingConfig, as TF.js writes it (snake_case loss names; TF.js compiles the model it loads),
        or None when a loss or metric is a Python object no loader could rebuild from a name (a custom function, a
        CRF layer's loss): the model is then saved uncompiled. Metrics are written under the names TF.js's compile
        knows ("mean_absolute_percentage_error" as "mape"); one TF.js has no name for ("recall", "r2_score", ...)
        is left out, since TF.js refuses to load a model whose trainingConfig names it."""
        if any(obj.tfjs_name is None for obj in self.losses) or not _named(self.metric_identifiers):
            return None
        loss = [obj.name for obj in self.losses]
        return {
            "loss": loss[0] if len(loss) == 1 else loss,
            "metrics": _tfjs_metrics(self.metric_identifiers),
            "optimizer_config": self.optimizer.to_json_config(),
        }


def _tfjs_metrics(metrics):
    """The metric names as TF.js's compile takes them, without those it does not know (a dict stays per output)."""
    if metrics is None:
        return None

    def names(entries):
        items = entries if isinstance(entries, (list, tuple)) else [entries]
        return [name for name in map(metrics_module.tfjs_name, items) if name is not None]

    if isinstance(metrics, dict):
        return {key: names(value) for key, value in metrics.items()}
    return names(metrics)


def _named(metrics):
    """True when every metric is given by name (a list, or a dict of names or lists of names per output)."""
    values = list(metrics.values()) if isinstance(metrics, dict) else [metrics]
    flat = [m for v in values for m in (v if isinstance(v, (list, tuple)) else [v]) if m is not None]
    return all(isinstance(m, str) for m in flat)


def _per_output(value, model, what, listed=False):
    """One entry per model output: from a dict by output layer name, a list in output order (losses), or one
    value for all. For metrics (listed) each entry is a list, and a plain list applies to every output (Keras)."""
    names = [s.layer.name for s in model.outputs]

    def entry(v):
        return (list(v) if isinstance(v, (list, tuple)) else [v]) if listed else v

    if isinstance(value, dict):
        unknown = [k for k in value if k not in names]
        missing = [n for n in names if n not in value and not listed]
        if unknown or missing:
            raise ValueError(f"{model.name}.compile: {what} must be keyed by output names {names}, got {list(value)}")
        return [entry(value.get(n, [])) for n in names]
    if listed or not isinstance(value, (list, tuple)):
        return [entry(value)] * len(names)
    if len(value) != len(names):
        raise ValueError(f"{model.name}.compile: {what} has {len(value)} entries for {len(names)} outputs ({names})")
    return list(value)


class Trainable:
    """The training half of Model."""

    optimizer = None
    stop_training = False
    _compile_args = None
    _training_config = None
    _fit_steps = None  # fit's captured steps, kept between fit calls (_KeptSteps)

    def compile(self, optimizer="rmsprop", loss=None, metrics=None):
        """Choose the optimizer (object or name), the loss (name, Loss or fn; one per output) and metrics.

        A Sequential model without an input shape yet finishes compiling when it first sees data.
        """
        self._check_unfolded_kept("compile")
        if loss is None:
            raise ValueError(f"{self.name}.compile: give a loss, e.g. loss='categorical_crossentropy'")
        self.optimizer = optimizers_module.get(optimizer)
        self._compile_args, self._training_config = (loss, metrics), None
        self._release_fit_steps()
        if self.outputs:
            self._training_config = TrainingConfig(self, self.optimizer, loss, metrics)

    @property
    def training_config(self):
        return self._training_config

    def _compiled(self, method, x=None):
        """The TrainingConfig, once the graph exists (built from x's shape for a Sequential without one)."""
        if self._compile_args is None:
            raise RuntimeError(
                f"{self.name}.{method}: the model is not compiled; call model.compile(optimizer=..., loss=...) first"
            )
        self._check_unfolded_kept(method)
        if self._training_config is None:
            first = x[0] if isinstance(x, (list, tuple)) and len(x) and not np.isscalar(x[0]) else x
            self._ensure_graph(
                None if first is None else tuple(np.shape(first) if not isinstance(first, Tensor) else first.shape)
            )
            self._training_config = TrainingConfig(self, self.optimizer, *self._compile_args)
        return self._training_config

    # ---- data ----------------------------------------------------------------------------------

    def _dataset(self, x, y, method):
        """(xs, ys, n): a tensor for every input and output in the current scope, after every check on the host."""
        config = self._compiled(method, x)
        xs = _arrays(x, len(self.inputs), "x", self.name, method)
        ys = _arrays(y, len(self.outputs), "y", self.name, method)
        self._check_inputs([tuple(a.shape) for a in xs], method)
        counts = {a.shape[0] for a in xs + ys}
        if len(counts) != 1:
            raise ShapeError(
                f"{self.name}.{method}: x and y must have the same number of examples; got "
                f"x {[tuple(a.shape) for a in xs]} and y {[tuple(a.shape) for a in ys]}"
            )
        n = counts.pop()
        if n == 0:
            raise ValueError(f"{self.name}.{method}: x and y hold no examples")
        for loss, s, a in zip(config.losses, self.outputs, ys):
            loss.check(tuple(a.shape), a.dtype if isinstance(a, Tensor) else _engine_dtype(a), s.shape)
            if hasattr(loss, "check_labels") and s.shape[-1] is not None:
                loss.check_labels(a.numpy() if isinstance(a, Tensor) else a, s.shape[-1])
        tensors = [a if isinstance(a, Tensor) else ops.tensor(a, _engine_dtype(a)) for a in xs + ys]
        return tensors[: len(xs)], tensors[len(xs) :], n

    # ---- one batch -----------------------------------------------------------------------------

    def _forward(self, xb, training, extra_symbols):
        """(outputs, values of extra_symbols): the model's outputs, and those of other layers in its graph (what an
        activity regularizer reads) from the same pass."""
        if not extra_symbols:
            outputs = self(xb if len(xb) > 1 else xb[0], training=training)
            return (outputs if isinstance(outputs, list) else [outputs]), []
        symbols = [*self.outputs, *extra_symbols]
        values = ENGINE.tidy(lambda: execute(layer_steps(self.nodes, training), self.inputs, list(xb), symbols))
        return values[: len(self.outputs)], values[len(self.outputs) :]

    def _batch_values(self, xb, yb, training):
        """(total loss, [per-output losses when several, metrics...]): scalars; the metrics are not recorded. The
        total adds the regularizers' penalties (weights, then activities) to the losses."""
        config = self._training_config
        outputs, activities = self._forward(xb, training, [s for s, _ in config.activity])
        losses = [loss(t, out) for loss, t, out in zip(config.losses, yb, outputs)]
        total = losses[0]
        weight_penalties = [penalty() for penalty in config.penalties]
        activity_penalties = [activity_penalty(r, a) for (_, r), a in zip(config.activity, activities)]
        for term in losses[1:] + weight_penalties + activity_penalties:
            total = total + term
        with stop_recording():
            values = (losses if len(losses) > 1 else []) + [
                ops.mean(fn(yb[k], outputs[k])) for k, _, fn in config.metrics
            ]
        return total, values

    def _train_step(self, xb, yb):
        """One optimizer step; returns this batch's [loss, ...] as one tensor."""
        trainable = self.trainable_weights
        if not trainable:
            raise RuntimeError(f"{self.name}: nothing to train, the model has no trainable weights")
        values = []

        def loss_fn():
            total, extra = self._batch_values(xb, yb, training=True)
            values.extend(ENGINE.keep(extra))  # they must outlive the gradient scope
            return total

        try:
            loss, grads = variable_grads(loss_fn, trainable)
            self.optimizer.apply_gradients(grads)
            if self._training_config.constraints:  # after every update, as Keras (TF.js's fit never applies them)
                ids = {v.id for v in trainable}
                constraints_module.apply([(v, c) for v, c in self._training_config.constraints if v.id in ids])
            return ops.stack([loss, *values])
        finally:
            ENGINE.dispose(values)

    def _test_step(self, xb, yb):
        total, values = self._batch_values(xb, yb, training=False)
        return ops.stack([total, *values])

    # ---- loops ---------------------------------------------------------------------------------

    def _run_epoch(self, step, xs, ys, n, batch_size, order=None, cbs=None):
        """step(*inputs, *targets) on every batch, each in its own scope. Returns (table, sizes): a device tensor [batches, values]
        with each batch's values in its row (rows after an early stop stay 0), and the host list of the sizes of
        the batches that ran. With cbs, the batch hooks run after each batch's scope closed, with the batch's values
        read back when a callback wants them; a callback that sets model.stop_training ends the epoch there."""
        batches = -(-n // batch_size)
        table, sizes = None, []
        for index, start in enumerate(range(0, n, batch_size)):
            stop = min(start + batch_size, n)
            if cbs is not None:
                cbs.on_batch_begin(index, {"batch": index, "size": stop - start})
            with ENGINE.scope("batch") as scope:
                if order is None:
                    batch = [t if stop - start == n else t[start:stop] for t in xs + ys]
                else:
                    rows = ops.tensor(order[start:stop], "int32")
                    batch = [ops.gather(t, rows) for t in xs + ys]
                row = step(*batch)
                values = row.numpy().astype(np.float64) if cbs is not None and cbs.wants_batch_logs else None
                placed = ops.pad(ops.expand_dims(row, 0), [[index, batches - 1 - index], [0, 0]])
                new = placed if table is None else table + placed
                if table is not None:
                    ENGINE.dispose(table)
                table = scope.export(new)
            sizes.append(stop - start)
            if cbs is None:
                continue
            logs = {"batch": index, "size": stop - start}
            if values is not None:
                if not np.isfinite(values[0]) and not cbs.handles_nan:
                    raise TrainingError(_nan_message(self.name, cbs.epoch, index))
                logs.update(zip(self._training_config.log_names, values.tolist()))
            cbs.on_batch_end(index, logs)
            if self.stop_training:
                break
        return table, sizes

    def fit(
        self,
        x,
        y,
        batch_size=32,
        epochs=1,
        verbose=1,
        callbacks=None,
        validation_split=0.0,
        validation_data=None,
        shuffle=True,
        seed=None,
        initial_epoch=0,
        capture=True,
    ):
        """Train for `epochs` epochs; returns the History callback (history.history: {"loss": [...], ...}).

        Keras's semantics: validation_split holds out the last fraction of the examples before shuffling;
        shuffle reorders the examples every epoch (seeded by `seed`, else by pe.set_seed's generator). A NaN or infinite loss raises TrainingError
        naming the epoch and batch, unless a TerminateOnNaN callback stops training at that batch.

        capture: on webgpu and wasm, the training (and validation) step is recorded once per batch shape with
        pe.capture and replayed for the other batches (one device call per step on webgpu, the recorded kernel
        calls on wasm) instead of Python per op, with the same results (the learning rate, Adam's bias corrections and dropout's draws are made per step).
        The model keeps the programs for its next fit with the same batch shapes (model.dispose() or compile frees
        them; pe.memory().num_bytes_in_programs counts them on wasm).
        capture=False runs every op from Python, as evaluate and train_on_batch do.
        """
        _check_int(batch_size, "batch_size", self.name, 1)
        _check_int(epochs, "epochs", self.name, 0)
        _check_int(initial_epoch, "initial_epoch", self.name, 0)
        if not 0 <= validation_split < 1:
            raise ValueError(f"{self.name}.fit: validation_split must be in [0, 1), got {validation_split}")
        if validation_split and validation_data is not None:
            raise ValueError(f"{self.name}.fit: give validation_data or validation_split, not both")
        if validation_data is not None and (
            not isinstance(validation_data, (list, tuple)) or len(validation_data) != 2
        ):
            raise ValueError(f"{self.name}.fit: validation_data must be a pair (x_val, y_val)")
        config = self._compiled("fit", x)
        history = callbacks_module.History()
        cbs = callbacks_module.CallbackList([*(callbacks or []), history], self, verbose=verbose, epochs=epochs)
        with ENGINE.scope("fit"):
            if validation_split:
                x, y, validation_data = _split(x, y, validation_split, len(self.inputs), len(self.outputs), self.name)
            xs, ys, n = self._dataset(x, y, "fit")
            val = None if validation_data is None else self._dataset(*validation_data, "fit (validation_data)")
            rng = random_generator(seed)
            if capture:
                steps = self._kept_fit_steps(config, xs, ys, n, batch_size, val)
            else:
                steps = [_batch_step(step, len(xs)) for step in (self._train_step, self._test_step)]
            self.stop_training = False
            cbs.on_train_begin()
            try:
                for epoch in range(initial_epoch, epochs):
                    cbs.on_epoch_begin(epoch)
                    order = rng.permutation(n).astype(np.int32) if shuffle else None
                    logs = self._fit_epoch(config, epoch, steps, xs, ys, n, batch_size, order, val, cbs)
                    cbs.on_epoch_end(epoch, logs)
                    if self.stop_training:
                        break
            finally:
                cbs.on_train_end()
        return history

    def _kept_fit_steps(self, config, xs, ys, n, batch_size, val):
        """fit's training and test steps, captured, as the last fit left them where they are still valid: the same
        compile, trainable weights and batch shapes (the programs themselves are recorded again for another
        backend or pool of threads, or weights assigned from outside, by pe.capture). A new one frees the old."""
        batches = [(min(batch_size, count), count % batch_size) for count in [n] + ([val[2]] if val else [])]
        signature = [(t.shape[1:], t.dtype) for t in xs + ys + (val[0] + val[1] if val else [])]
        key = (config, self.optimizer, [id(v) for v in self.trainable_weights], batches, signature)
        if self._fit_steps is None or self._fit_steps.key != key:
            self._release_fit_steps()
            self._fit_steps = _KeptSteps(self, key, len(xs))
        return self._fit_steps.steps

    def _release_fit_steps(self):
        """Free fit's kept programs (compile, dispose, a fit whose steps differ)."""
        if self._fit_steps is not None:
            self._fit_steps.release()
            self._fit_steps = None

    def _fit_epoch(self, config, epoch, steps, xs, ys, n, batch_size, order, val, cbs):
        """One epoch and its validation; the logs as floats, from one readback (plus one per batch if wanted)."""
        names = config.log_names
        train_step, test_step = steps
        with ENGINE.scope("epoch"):
            train, sizes = self._run_epoch(train_step, xs, ys, n, batch_size, order, cbs)
            tables = [(train, sizes)]
            if val is not None:
                tables.append(self._run_epoch(test_step, *val, batch_size))
            read = ops.concat([ops.flatten(table) for table, _ in tables]).numpy()
            parts = np.split(read, np.cumsum([table.size for table, _ in tables])[:-1])
            rows = [part.reshape(table.shape) for part, (table, _) in zip(parts, tables)]
        bad = ~np.isfinite(rows[0][: len(sizes), 0])  # a NaN or infinite loss
        if bad.any() and not (cbs.handles_nan and self.stop_training):
            raise TrainingError(_nan_message(self.name, epoch, int(np.argmax(bad))))
        logs = dict(zip(names, _means(rows[0], sizes)))
        if val is not None:
            logs.update(zip([f"val_{name}" for name in names], _means(rows[1], tables[1][1])))
        return logs

    # ---- evaluation ------------------------------------------------------------------------

    def evaluate(self, x, y, batch_size=32, verbose=0, return_dict=False):
        """The loss (and metrics) over x, y: a float, or [loss, metrics...], or a dict with return_dict."""
        _check_int(batch_size, "batch_size", self.name, 1)
        config = self._compiled("evaluate", x)
        with ENGINE.scope("evaluate"):
            xs, ys, n = self._dataset(x, y, "evaluate")
            table, sizes = self._run_epoch(_batch_step(self._test_step, len(xs)), xs, ys, n, batch_size)
            values = _means(table.numpy(), sizes)
        if verbose:
            print(" - ".join(f"{k}: {v:.4g}" for k, v in zip(config.log_names, values)))
        return _results(config, values, return_dict)

    def train_on_batch(self, x, y, return_dict=False):
        """One optimizer step on (x, y) as one batch; returns its loss (and metrics) as floats (one readback)."""
        config = self._compiled("train_on_batch", x)
        with ENGINE.scope("train_on_batch"):
            xs, ys, _ = self._dataset(x, y, "train_on_batch")
            values = self._train_step(xs, ys).numpy().astype(np.float64).tolist()
        return _results(config, values, return_dict)

    def test_on_batch(self, x, y, return_dict=False):
        """The loss (and metrics) on (x, y) as one batch, without training; floats (one readback)."""
        config = self._compiled("test_on_batch", x)
        with ENGINE.scope("test_on_batch"):
            xs, ys, _ = self._dataset(x, y, "test_on_batch")
            values = self._test_step(xs, ys).numpy().astype(np.float64).tolist()
        return _results(config, values, return_dict)


def _batch_step(step, n_inputs):
    """step(inputs, targets) as a function of the batch's tensors; `step` a method of the model, or a weak reference
    to one (a kept step must not keep its model alive)."""
    method = step if isinstance(step, weakref.WeakMethod) else lambda: step

    def batch_step(*batch):
        return method()(list(batch[:n_inputs]), list(batch[n_inputs:]))

    batch_step.__qualname__ = method().__qualname__
    return batch_step


class _KeptSteps:
    """A model's training and test steps recorded by pe.capture (a full batch and the last, shorter one: two
    programs each), kept between fit calls under `key` (what they were made for): recording a step costs about as
    much as a few replays of it, and a fit of a few batches would record again at every call. Freed by release(),
    or when the model goes."""

    def __init__(self, model, key, n_inputs):
        self.key = key
        self.steps = [
            ENGINE.capture(_batch_step(weakref.WeakMethod(step), n_inputs), max_programs=2)
            for step in (model._train_step, model._test_step)
        ]
        self.release = weakref.finalize(model, _dispose_steps, self.steps)  # once: by the model's end or a call
        self.release.atexit = False  # the interpreter's end frees everything


def _dispose_steps(steps):
    for step in steps:
        step.dispose()


def _means(rows, sizes):
    """The batch-size-weighted means of the values in rows [batches, values], as floats. The sums are float32,
    accumulated batch after batch as a device would (what TF.js's fit does), then divided in float64."""
    weighted = rows[: len(sizes)] * np.asarray(sizes, np.float32)[:, None]
    sums = np.add.accumulate(weighted, axis=0, dtype=np.float32)[-1]
    return (sums.astype(np.float64) / sum(sizes)).tolist()


def _results(config, values, return_dict):
    if return_dict:
        return dict(zip(config.log_names, values))
    return values[0] if len(values) == 1 else values


def _nan_message(name, epoch, batch):
    return (
        f"{name}.fit: the loss became NaN or infinite at epoch {epoch + 1}, batch {batch + 1}; the weights are no longer "
        "usable. Lower the learning rate, check the data for NaN/inf, or clip gradients (clipnorm=...); "
        "pe.callbacks.TerminateOnNaN() stops training at that batch instead of raising"
    )


def _check_int(value, what, name, least):
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise ValueError(f"{name}: {what} must be an int >= {least}, got {value!r}")


def _engine_dtype(a):
    return "int32" if a.dtype.kind in "iub" else "float32"


def _arrays(value, count, what, name, method):
    """One array (numpy or Tensor) per model input or output."""
    items = list(value) if isinstance(value, (list, tuple)) and count > 1 else [value]
    if len(items) != count:
        raise ValueError(
            f"{name}.{method}: the model has {count} {'inputs' if what == 'x' else 'outputs'}; {what} has {len(items)} arrays"
        )
    out = []
    for item in items:
        if isinstance(item, Tensor):
            item._live_buffer()
            out.append(item)
            continue
        a = np.asarray(item)
        if a.dtype.kind not in "fiub":
            raise TypeError(f"{name}.{method}: {what} must hold numbers, got {a.dtype}")
        if a.ndim == 0:
            raise ShapeError(f"{name}.{method}: {what} must have a batch axis, got a scalar")
        out.append(a if a.dtype.kind in "iub" else a.astype(np.float32, copy=False))
    return out


def _split(x, y, fraction, n_in, n_out, name):
    """(x_train, y_train, (x_val, y_val)): the last `fraction` of the examples held out, as Keras and TF.js do."""
    xs, ys = _arrays(x, n_in, "x", name, "fit"), _arrays(y, n_out, "y", name, "fit")
    n = xs[0].shape[0]
    cut = int(n * (1 - fraction))
    if cut <= 0 or cut >= n:
        raise ValueError(
            f"{name}.fit: validation_split={fraction} of {n} examples leaves an empty training or validation set"
        )

    def part(items, lo, hi):
        pieces = [a[lo:hi] for a in items]
        return pieces if len(pieces) > 1 else pieces[0]

    return part(xs, 0, cut), part(ys, 0, cut), (part(xs, cut, n), part(ys, cut, n))
