"""Elementwise chains as one kernel: fuse_elementwise(rule, tensors, scalars).

`rule` is a function written with + - * / (and unary -) and this module's sqrt, square, maximum, minimum, abs, relu and
relu6.
It is called with the float32 `tensors` (all of one shape) and then each element of `scalars` (a float32 vector,
one binding however many numbers it holds), traced once into a `TracedRule`, the kernels its ops run in order, and run
as one "FusedElementwise" kernel: on webgpu one dispatch and no intermediate buffers where the ops one at a time
take a dispatch and a buffer each (an Adam update of one variable: 14 dispatches -> 1). Each step computes what its
op's own kernel computes (numpy: that kernel; WGSL: its expression), in the same order, so the results are those of
the ops one at a time, bit for bit. The optimizers' update rules (py_engine/train/optimizers.py) and a graph model's
elementwise chains (models/graph_fusion.py: hard-swish) are what it is for.

A rule sees only its arguments (a value it closes over is not traced): constants come in as scalars. On webgpu a
kernel binds its tensors, the scalars and its outputs, at most 8 storage buffers on WebGPU's default limits: a
rule with more is refused, to be split in two.
"""

import functools
from dataclasses import dataclass

from .. import dtypes
from ..engine import ENGINE
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from . import math

MAX_BINDINGS = 8  # storage buffers one shader may bind on every WebGPU device


@dataclass(frozen=True)
class TracedRule:
    """A traced rule: values 0 .. tensors-1 are the tensors, the next `scalars` the scalars' elements; step k computes
    the next value by running kernel `name` on earlier values; `outputs` are the values the rule returns."""

    tensors: int
    scalars: int
    steps: tuple  # ((kernel name, (value, ...)), ...)
    outputs: tuple  # (value, ...)

    def describe(self):
        """The traced rule as text, e.g. "2+1 in; Mul(1,2) Add(3,0) -> 4": what shader keys are made from."""
        steps = " ".join(f"{name}({','.join(map(str, args))})" for name, args in self.steps)
        return f"{self.tensors}+{self.scalars} in; {steps} -> {','.join(map(str, self.outputs))}"


class _Traced:
    """A value inside a rule being traced: its ops append steps to the trace."""

    __slots__ = ("_trace", "index")

    def __init__(self, trace, index):
        self._trace, self.index = trace, index

    def __add__(self, other):
        return self._trace.step("Add", self, other)

    def __sub__(self, other):
        return self._trace.step("Sub", self, other)

    def __mul__(self, other):
        return self._trace.step("Mul", self, other)

    def __truediv__(self, other):
        return self._trace.step("RealDiv", self, other)

    def __neg__(self):
        return self._trace.step("Neg", self)

    def __bool__(self):
        raise TypeError("fuse_elementwise: a rule cannot branch on a traced value; pass separate rules instead")


class _Trace:
    def __init__(self, rule, arguments):
        self.rule, self.arguments, self.steps = rule, arguments, []

    def step(self, name, *operands):
        for x in operands:
            if not isinstance(x, _Traced) or x._trace is not self:
                raise TypeError(
                    f"fuse_elementwise: {self.rule.__name__} applies {name} to {x!r}; a rule's ops take its arguments "
                    "and what it computed from them only: pass a constant as one of the scalars"
                )
        self.steps.append((name, tuple(x.index for x in operands)))
        return _Traced(self, self.arguments + len(self.steps) - 1)


@functools.lru_cache(maxsize=256)
def trace(rule, tensors, scalars):
    """The TracedRule of `rule` called with `tensors` tensors and `scalars` scalars (cached per rule)."""
    t = _Trace(rule, tensors + scalars)
    out = rule(*(_Traced(t, k) for k in range(tensors + scalars)))
    outs = out if isinstance(out, tuple) else (out,)
    computed = range(t.arguments, t.arguments + len(t.steps))
    if not outs or any(not isinstance(o, _Traced) or o._trace is not t or o.index not in computed for o in outs):
        raise TypeError(
            f"fuse_elementwise: {rule.__name__} must return values it computed (one, or a tuple), got {out!r}"
        )
    return TracedRule(tensors, scalars, tuple(t.steps), tuple(o.index for o in outs))


def _apply(name, *operands):
    """A rule's function: a step while tracing, else the op itself on tensors."""
    if isinstance(operands[0], _Traced):
        return operands[0]._trace.step(name, *operands)
    return _EAGER[name](*operands)


_EAGER = {
    "Sqrt": math.sqrt,
    "Square": math.square,
    "Abs": math.abs,
    "Maximum": math.maximum,
    "Minimum": math.minimum,
    "Relu": math.relu,
    "Relu6": math.relu6,
}


def sqrt(x):
    return _apply("Sqrt", x)


def square(x):
    return _apply("Square", x)


def abs(x):
    return _apply("Abs", x)


def relu(x):
    return _apply("Relu", x)


def relu6(x):
    return _apply("Relu6", x)


def maximum(a, b):
    return _apply("Maximum", a, b)


def minimum(a, b):
    return _apply("Minimum", a, b)


def _checked(rule, what, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"fuse_elementwise: {what} of {rule.__name__} must be a tensor, got {x!r}")
    if x.dtype != dtypes.float32:
        raise DTypeError(f"fuse_elementwise: {what} of {rule.__name__} is {x.dtype}; the rules are float32")


def fuse_elementwise(rule, tensors, scalars=None):
    """rule(*tensors, *scalars' elements) run as one kernel; returns a tuple of new tensors of the tensors' shape
    (one per value the rule returns)."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError(f"fuse_elementwise: {rule.__name__} needs at least one tensor (its outputs take their shape)")
    for k, x in enumerate(tensors):
        _checked(rule, f"tensor {k}", x)
        if x.shape != tensors[0].shape:
            raise ShapeError(
                f"fuse_elementwise: {rule.__name__}'s tensors have shapes {tensors[0].shape} and {x.shape}; they must "
                "be of one shape (numbers that every element uses go in `scalars`)"
            )
    n, count = len(tensors), 0
    if scalars is not None:
        _checked(rule, "scalars", scalars)
        if len(scalars.shape) != 1:
            raise ShapeError(f"fuse_elementwise: scalars must be a vector, got shape {scalars.shape}")
        count = scalars.shape[0]
        tensors += [scalars] if count else []
    program = trace(rule, n, count)
    bindings = len(tensors) + len(program.outputs)
    if bindings > MAX_BINDINGS:
        raise ValueError(
            f"fuse_elementwise: {rule.__name__} binds {bindings} buffers ({n} tensors, {'the scalars, ' if count else ''}"
            f"{len(program.outputs)} outputs); a kernel binds at most {MAX_BINDINGS} (WebGPU's default "
            "maxStorageBuffersPerShaderStage): split the rule in two"
        )
    return ENGINE.run_kernel("FusedElementwise", tensors, {"program": program})


__all__ = ["fuse_elementwise"]
