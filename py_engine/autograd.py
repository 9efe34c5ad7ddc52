"""Reverse-mode autodiff: a tape that exists only while gradients are requested.

Outside `grad`/`grads`/`variable_grads` the engine sees no tape (one ContextVar read per op). While
recording, only kernels that touch a watched tensor are kept, each with shared (not copied)
references to its inputs and outputs; those references are released when the backward pass ends.
Gradients are functions of ops, keyed by kernel name, so one gradient serves every backend.
"""

import functools
from contextlib import contextmanager

from . import dtypes
from .engine import ENGINE, TAPE
from .errors import GradientError, ShapeError
from .kernel_registry import get_gradient, register_gradient  # noqa: F401 - register_gradient: pe and layers take it from here
from .ops.creation import ones_like, zeros_like
from .ops.math import add
from .tensor import Tensor, Variable


class _Node:
    __slots__ = ("attrs", "backward", "input_ids", "inputs", "kernel", "needs", "output_ids", "outputs")


class Tape:
    def __init__(self, watched):
        self.reached = {t.id for t in watched}
        self.nodes = []

    def record(self, kernel, attrs, inputs, outputs, backward=None):
        reached = self.reached
        needs = tuple(t.id in reached for t in inputs)
        if not any(needs):
            return
        node = _Node()
        node.kernel, node.attrs, node.needs, node.backward = kernel, attrs, needs, backward
        node.input_ids = tuple(t.id for t in inputs)
        node.output_ids = tuple(t.id for t in outputs)
        node.inputs = tuple(ENGINE.share(t) for t in inputs)
        node.outputs = tuple(ENGINE.share(t) for t in outputs)
        self.nodes.append(node)
        reached.update(t.id for t in outputs if t.dtype == dtypes.float32)

    def backward(self, y, dy):
        """Gradients of y with respect to every reached tensor, by tensor id."""
        grads = {y.id: dy}
        for node in reversed(self.nodes):
            dys = [grads.get(i) for i in node.output_ids]
            if all(g is None for g in dys):
                continue
            dys = [zeros_like(o) if g is None else g for g, o in zip(dys, node.outputs)]
            fn = node.backward or get_gradient(node.kernel)
            if fn is None:
                raise GradientError(
                    f"no gradient is registered for kernel {node.kernel!r}; "
                    f"register one with pe.register_gradient({node.kernel!r}, fn)"
                )
            din = fn(dys[0] if len(dys) == 1 else tuple(dys), node.inputs, node.outputs, node.attrs)
            din = tuple(din) if isinstance(din, (tuple, list)) else (din,)
            if len(din) != len(node.inputs):
                raise GradientError(f"gradient of {node.kernel!r} gave {len(din)} values for {len(node.inputs)} inputs")
            for i, g, x, need in zip(node.input_ids, din, node.inputs, node.needs):
                if g is None or not need or x.dtype != dtypes.float32:
                    continue
                if callable(g):  # computed only now that it is needed
                    g = g()
                if g.shape != x.shape:
                    raise ShapeError(f"gradient of {node.kernel!r} has shape {g.shape}, its input has shape {x.shape}")
                grads[i] = g if i not in grads else add(grads[i], g)
        return grads

    def dispose(self):
        for node in self.nodes:
            ENGINE.dispose((node.inputs, node.outputs))
        self.nodes = []


def _value_and_grads(f, args, watched, dy, require_all=True):
    with ENGINE.scope("gradients") as scope:
        tape = Tape(watched)
        token = TAPE.set(tape)
        try:
            y = f(*args)
        finally:
            TAPE.reset(token)
        try:
            if not isinstance(y, Tensor):
                raise GradientError(f"the function must return one tensor, got {type(y).__name__}")
            if y.dtype != dtypes.float32:
                raise GradientError(f"cannot differentiate a {y.dtype} result; gradients need float32")
            if dy is None:
                dy = ones_like(y)
            elif not isinstance(dy, Tensor) or dy.shape != y.shape:
                raise GradientError(f"dy must be a tensor of the result's shape {y.shape}")
            by_id = tape.backward(y, dy)
        finally:
            tape.dispose()
        grads = [by_id.get(x.id) for x in watched]
        for i, x in enumerate(watched):
            if x.id not in by_id and require_all:
                raise GradientError(
                    f"cannot compute the gradient with respect to {x.name} (argument {i}): the result does not "
                    "depend on it through float operations; make sure f computes y from it"
                )
        grads = _unaliased(grads, [dy, *args])
        if any(y is a for a in args):
            y = ENGINE.view(y, y.shape)
        scope.export(y, grads)
    return y, grads


def _unaliased(grads, taken):
    """Views where a gradient is also another gradient, dy or an argument: disposing one must not dispose another."""
    seen = {id(t) for t in taken if t is not None}
    out = []
    for g in grads:
        if g is not None and id(g) in seen:
            g = ENGINE.view(g, g.shape)
        if g is not None:
            seen.add(id(g))
        out.append(g)
    return out


def _check_args(args, fname):
    for i, x in enumerate(args):
        if not isinstance(x, Tensor):
            raise TypeError(f"{fname}: argument {i} must be a Tensor, got {type(x).__name__}")
        x._live_buffer()


def value_and_grads(f):
    """g(*xs, dy=None) -> (f(*xs), [df/dx for x in xs])."""

    def g(*xs, dy=None):
        _check_args(xs, "value_and_grads")
        return _value_and_grads(f, xs, list(xs), dy)

    return g


def grads(f):
    """g(*xs, dy=None) -> [df/dx for x in xs]."""

    def g(*xs, dy=None):
        value, gs = value_and_grads(f)(*xs, dy=dy)
        ENGINE.dispose_tensor(value)
        return gs

    return g


def value_and_grad(f):
    """g(x, dy=None) -> (f(x), df/dx)."""

    def g(x, dy=None):
        _check_args((x,), "value_and_grad")
        value, (gx,) = _value_and_grads(f, (x,), [x], dy)
        return value, gx

    return g


def grad(f):
    """g(x, dy=None) -> df/dx."""

    def g(x, dy=None):
        value, gx = value_and_grad(f)(x, dy)
        ENGINE.dispose_tensor(value)
        return gx

    return g


def variable_grads(f, var_list=None):
    """(f(), {variable name: gradient}) for var_list, default every trainable variable that f uses."""
    if var_list is None:
        candidates = [v for v in ENGINE.variables.values() if v.trainable]
    else:
        candidates = list(var_list)
        for v in candidates:
            if not isinstance(v, Variable):
                raise TypeError(f"variable_grads: var_list must hold variables, got {type(v).__name__}")
    value, gs = _value_and_grads(f, (), candidates, None, require_all=False)
    found = {v.var_name: g for v, g in zip(candidates, gs) if g is not None}
    if not found:
        ENGINE.dispose(value)
        raise GradientError("variable_grads: the result does not depend on any of the variables")
    return value, found


@contextmanager
def stop_recording():
    """Nothing computed inside is recorded for gradients (metrics computed next to a loss, custom_grad's body)."""
    token = TAPE.set(None)
    try:
        yield
    finally:
        TAPE.reset(token)


def custom_grad(f):
    """Decorate f(*inputs) -> (value, grad_fn) where grad_fn(dy) returns one gradient per input.

    Inside f nothing is recorded; the tape sees f as one step whose backward pass is grad_fn.
    """

    @functools.wraps(f)
    def wrapper(*inputs):
        _check_args(inputs, f"custom_grad({getattr(f, '__name__', 'f')})")
        tape = TAPE.get()
        with stop_recording():
            result = f(*inputs)
        if not (isinstance(result, tuple) and len(result) == 2 and callable(result[1])):
            raise TypeError("custom_grad: f must return (value, grad_fn) where grad_fn(dy) returns the input gradients")
        value, grad_fn = result
        if not isinstance(value, Tensor):
            raise TypeError(f"custom_grad: the value must be a tensor, got {type(value).__name__}")
        if tape is not None:
            tape.record("CustomGradient", None, inputs, (value,), lambda dy, ins, outs, attrs: grad_fn(dy))
        return value

    return wrapper
