"""Callbacks for Model.fit (Keras names): Callback, History, EarlyStopping, LambdaCallback, TerminateOnNaN, LeakMonitor.

Callbacks see logs as Python floats, never tensors, so reading or keeping logs cannot leak GPU memory. Epoch logs
are always complete; batch logs carry values only when some callback wants them (it overrides on_batch_end, or
sets wants_batch_logs = True), which costs one readback per batch: otherwise fit reads back once per epoch.
"""

import math
import time
import warnings

from ..engine import ENGINE
from ..errors import LeakError


class Callback:
    """Override any of the hooks; `self.model` is the model being trained, `self.params` fit's settings."""

    model = None
    params = None
    wants_batch_logs = None  # None: True when on_batch_end is overridden

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def on_train_begin(self, logs=None):
        pass

    def on_train_end(self, logs=None):
        pass

    def on_epoch_begin(self, epoch, logs=None):
        pass

    def on_epoch_end(self, epoch, logs=None):
        pass

    def on_batch_begin(self, batch, logs=None):
        pass

    def on_batch_end(self, batch, logs=None):
        pass

    def _wants_batch_logs(self):
        if self.wants_batch_logs is not None:
            return bool(self.wants_batch_logs)
        return type(self).on_batch_end is not Callback.on_batch_end


class History(Callback):
    """What fit returns: history.history = {"loss": [per epoch], "val_loss": [...], ...}; history.epoch."""

    def on_train_begin(self, logs=None):
        self.epoch, self.history = [], {}

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)


class LambdaCallback(Callback):
    """A callback from plain functions: LambdaCallback(on_epoch_end=lambda epoch, logs: print(logs["loss"]))."""

    _HOOKS = ("on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end", "on_batch_begin", "on_batch_end")

    def __init__(self, **hooks):
        unknown = sorted(set(hooks) - set(self._HOOKS))
        if unknown:
            raise TypeError(f"LambdaCallback: unknown hook(s) {unknown}; use {', '.join(self._HOOKS)}")
        self.hooks = {name: fn for name, fn in hooks.items() if fn is not None}
        self.wants_batch_logs = "on_batch_end" in self.hooks

    def _call(self, name, *args):
        fn = self.hooks.get(name)
        if fn is not None:
            fn(*args)

    def on_train_begin(self, logs=None):
        self._call("on_train_begin", logs)

    def on_train_end(self, logs=None):
        self._call("on_train_end", logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._call("on_epoch_begin", epoch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._call("on_epoch_end", epoch, logs)

    def on_batch_begin(self, batch, logs=None):
        self._call("on_batch_begin", batch, logs)

    def on_batch_end(self, batch, logs=None):
        self._call("on_batch_end", batch, logs)


class TerminateOnNaN(Callback):
    """Stop training at the batch whose loss is NaN or infinite (fit then returns instead of raising)."""

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(loss):
            print(f"TerminateOnNaN: batch {batch + 1} has loss {loss}; training stops")
            self.model.stop_training = True


class EarlyStopping(Callback):
    """Stop when `monitor` has not improved by min_delta for `patience` epochs (Keras's rules).

    restore_best_weights copies the weights to the host at each improvement (one readback of the model) and
    puts the best back when training ends.
    """

    def __init__(
        self,
        monitor="val_loss",
        min_delta=0.0,
        patience=0,
        verbose=0,
        mode="auto",
        baseline=None,
        restore_best_weights=False,
        start_from_epoch=0,
    ):
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"EarlyStopping: mode must be 'auto', 'min' or 'max', got {mode!r}")
        self.monitor, self.patience, self.verbose = monitor, int(patience), verbose
        self.baseline, self.restore_best_weights = baseline, bool(restore_best_weights)
        self.start_from_epoch = int(start_from_epoch)
        maximize = mode == "max" or (mode == "auto" and ("acc" in monitor or monitor.startswith("auc")))
        self.sign = 1.0 if maximize else -1.0  # improvement means sign * (value - best) > min_delta
        self.min_delta = abs(float(min_delta))

    def on_train_begin(self, logs=None):
        self.wait, self.stopped_epoch, self.best_weights, self.best_epoch = 0, 0, None, 0
        self.best = -math.inf if self.baseline is None else self.sign * self.baseline

    def on_epoch_end(self, epoch, logs=None):
        value = (logs or {}).get(self.monitor)
        if value is None:
            available = ", ".join(sorted(logs or {}))
            warnings.warn(
                f"EarlyStopping: {self.monitor!r} is not in the logs ({available}); nothing is monitored", stacklevel=2
            )
            return
        if epoch < self.start_from_epoch:
            return
        self.wait += 1
        if self.sign * value - self.best > self.min_delta:
            self.best, self.best_epoch, self.wait = self.sign * value, epoch, 0
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
        elif self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.verbose:
                print(f"EarlyStopping: epoch {epoch + 1}: {self.monitor} has not improved for {self.wait} epochs")

    def on_train_end(self, logs=None):
        if self.restore_best_weights and self.best_weights is not None:
            self.model.set_weights(self.best_weights)
            if self.verbose:
                print(f"EarlyStopping: restored the weights of epoch {self.best_epoch + 1}")


class ProgressReporter(Callback):
    """Calls send(message) after every epoch (and batch, with every="batch") with a JSON-like dict:
    {"kind": "epoch"|"batch", "epoch", "epochs", "batch", "logs": {...floats}, "memory": {num_tensors, num_bytes,
    num_bytes_in_gpu}}. pe.browser.training_progress() sends it to the page's main thread."""

    def __init__(self, send, every="epoch"):
        if every not in ("epoch", "batch"):
            raise ValueError(f"ProgressReporter: every must be 'epoch' or 'batch', got {every!r}")
        self.send, self.every = send, every
        self.wants_batch_logs = every == "batch"

    def _report(self, kind, epoch, batch, logs):
        m = ENGINE.memory()
        memory = {"num_tensors": m.num_tensors, "num_bytes": m.num_bytes, "num_bytes_in_gpu": m.num_bytes_in_gpu}
        self.send(
            {
                "kind": kind,
                "epoch": epoch,
                "epochs": self.params["epochs"],
                "batch": batch,
                "logs": dict(logs or {}),
                "memory": memory,
            }
        )

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_batch_end(self, batch, logs=None):
        if self.every == "batch":
            self._report("batch", self._epoch, batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._report("epoch", epoch, None, logs)


class LeakWarning(UserWarning):
    """LeakMonitor(action="warn") found tensors or bytes that outlived a training step."""


class LeakMonitor(Callback):
    """Raise pe.LeakError (or warn) when tensors or bytes grow between batches or epochs, naming where they were made.

    The first epoch is the baseline (optimizer slots are created there). From the second epoch on, the counts at
    every batch end must equal the previous batch end's, and every epoch end must equal the first epoch end's,
    within `tolerance` tensors. While it runs it records the file:line where each tensor is made (as
    pe.set_debug(True) does) and restores the previous setting afterwards.
    """

    wants_batch_logs = False  # counts need no readback

    def __init__(self, action="raise", tolerance=0):
        if action not in ("raise", "warn"):
            raise ValueError(f"LeakMonitor: action must be 'raise' or 'warn', got {action!r}")
        if not isinstance(tolerance, int) or tolerance < 0:
            raise ValueError(f"LeakMonitor: tolerance must be a non-negative int of tensors, got {tolerance!r}")
        self.action, self.tolerance = action, tolerance

    @staticmethod
    def _snapshot():
        return len(ENGINE.live), ENGINE.num_bytes, set(ENGINE.live)

    def on_train_begin(self, logs=None):
        self._debug, ENGINE.debug = ENGINE.debug, True
        self._epochs, self._epoch_ref, self._batch_ref = 0, None, None
        self.leaks = []  # every report, for action="warn"

    def on_train_end(self, logs=None):
        ENGINE.debug = self._debug

    def on_epoch_begin(self, epoch, logs=None):
        self._batch_ref, self._epoch_index = None, epoch

    def on_batch_end(self, batch, logs=None):
        now = self._snapshot()
        if self._epochs >= 1 and self._batch_ref is not None:
            self._check(self._batch_ref, now, f"batch {batch + 1} of epoch {self._epoch_index + 1}", "the batch before")
        self._batch_ref = now

    def on_epoch_end(self, epoch, logs=None):
        now = self._snapshot()
        if self._epoch_ref is None:
            self._epoch_ref = now
        else:
            self._check(self._epoch_ref, now, f"epoch {epoch + 1}", "the end of the first epoch")
        self._epochs += 1

    def _check(self, before, now, where, reference):
        grown, grown_bytes = now[0] - before[0], now[1] - before[1]
        if grown <= self.tolerance and (grown_bytes <= 0 or self.tolerance):
            return
        survivors = [ENGINE.live[i] for i in now[2] - before[2] if i in ENGINE.live]
        message = (
            f"LeakMonitor: {grown} more tensors and {grown_bytes} more bytes at the end of {where} than at "
            f"{reference}. They were made at:\n{_sites(survivors)}\n"
            "Dispose them (pe.dispose), create them inside pe.tidy / `with pe.scope():`, or do not keep them past "
            "the step (callbacks get floats in `logs`; no tensor needs keeping)."
        )
        if self.action == "raise":
            raise LeakError(message)
        self.leaks.append(message)
        warnings.warn(LeakWarning(message), stacklevel=2)


def _sites(tensors, limit=5):
    groups = {}
    for t in tensors:
        site = t._created_at or "a site made before LeakMonitor started"
        count, shapes = groups.get(site, (0, []))
        if len(shapes) < 3 and t.shape not in shapes:
            shapes.append(t.shape)
        groups[site] = (count + 1, shapes)
    ordered = sorted(groups.items(), key=lambda item: -item[1][0])
    lines = [f"  {site}: {count} tensor(s), shapes {shapes}" for site, (count, shapes) in ordered[:limit]]
    if len(ordered) > limit:
        lines.append(f"  ... and {len(ordered) - limit} more sites")
    return "\n".join(lines)


class CallbackList:
    """Calls every callback's hook in order; prints one line per epoch when verbose."""

    def __init__(self, callbacks, model, verbose, epochs):
        self.callbacks = list(callbacks)
        for cb in self.callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(f"fit: callbacks must be pe.callbacks.Callback instances, got {type(cb).__name__}")
            cb.set_model(model)
            cb.set_params({"epochs": epochs, "verbose": verbose})
        self.verbose, self.epochs, self.epoch = verbose, epochs, 0
        self.wants_batch_logs = any(cb._wants_batch_logs() for cb in self.callbacks)
        self.handles_nan = any(isinstance(cb, TerminateOnNaN) for cb in self.callbacks)

    def on_train_begin(self):
        for cb in self.callbacks:
            cb.on_train_begin({})

    def on_train_end(self):
        for cb in self.callbacks:
            cb.on_train_end({})

    def on_epoch_begin(self, epoch):
        self.epoch, self._epoch_start = epoch, time.perf_counter()
        for cb in self.callbacks:
            cb.on_epoch_begin(epoch, {})

    def on_epoch_end(self, epoch, logs):
        if self.verbose:
            values = " - ".join(f"{k}: {v:.4g}" for k, v in logs.items())
            elapsed = (time.perf_counter() - self._epoch_start) * 1e3
            print(f"Epoch {epoch + 1}/{self.epochs} - {elapsed:.0f} ms - {values}")
        for cb in self.callbacks:
            cb.on_epoch_end(epoch, dict(logs))

    def on_batch_begin(self, batch, logs):
        for cb in self.callbacks:
            cb.on_batch_begin(batch, dict(logs))

    def on_batch_end(self, batch, logs):
        for cb in self.callbacks:
            cb.on_batch_end(batch, dict(logs))
