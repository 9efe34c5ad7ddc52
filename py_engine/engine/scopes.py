"""Scopes: tidy, `with scope()`, start_scope/end_scope. A tensor joins the innermost open scope of its context.

The scope stack is held in a ContextVar, so each asyncio task sees its own stack: two concurrent tasks, each in
its own `with scope():`, release only their own tensors, across any number of awaits.
"""

import inspect
from contextlib import contextmanager
from contextvars import ContextVar
from inspect import CO_COROUTINE
from types import FunctionType

from ..tensor import Tensor

SCOPES = ContextVar("py_engine_scopes", default=())

_ASYNC_TIDY = (
    "tidy() takes a synchronous function: tensors created after an `await` could not be tracked. "
    "Use `with pe.scope():` around async code instead (it stays correct across awaits)."
)


def iter_tensors(obj):
    """Every Tensor inside nested lists, tuples and dict values."""
    if isinstance(obj, Tensor):
        yield obj
    elif obj is None:
        return
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from iter_tensors(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from iter_tensors(x)


class Scope:
    __slots__ = ("exports", "name", "tracked")

    def __init__(self, name):
        self.tracked, self.exports, self.name = {}, {}, name

    def export(self, *results):
        """Mark tensors (or nested structures of them) to survive this scope; they move to the parent."""
        for t in iter_tensors(results):
            self.exports[t.id] = t
        return results[0] if len(results) == 1 else results


class Scopes:
    def start_scope(self, name=None):
        scope = Scope(name)
        SCOPES.set(SCOPES.get() + (scope,))
        return scope

    def end_scope(self, result=None):
        stack = SCOPES.get()
        if not stack:
            raise RuntimeError("end_scope() called with no open scope; pair it with start_scope()")
        SCOPES.set(stack[:-1])
        self._close(stack[-1], stack[-2] if len(stack) > 1 else None, result)
        return result

    def _close(self, scope, parent, result):
        survivors = scope.exports
        if result is not None:
            survivors = dict(survivors)
            for t in iter_tensors(result):
                survivors[t.id] = t
        tracked, scope.tracked = scope.tracked, {}
        for tid, t in tracked.items():
            if tid in survivors:
                t._scope = parent
                if parent is not None:
                    parent.tracked[tid] = t
            elif t.kept:
                t._scope = None
            else:
                t._scope = None
                self.dispose_tensor(t)
        # No GPU submit here: what the scope freed is reused once the work reading it is submitted (at a readback
        # or every batch of dispatches), so a tidy per op costs no submit of its own.

    @contextmanager
    def scope(self, name=None):
        scope = Scope(name)
        token = SCOPES.set(SCOPES.get() + (scope,))
        try:
            yield scope
        finally:
            SCOPES.reset(token)
            stack = SCOPES.get()
            self._close(scope, stack[-1] if stack else None, None)

    def tidy(self, fn, *args, **kwargs):
        # `with self.scope()` written out: a tidy per op is common, and the context manager costs as much as the op
        if type(fn) is FunctionType and not fn.__code__.co_flags & CO_COROUTINE:
            name = fn.__name__
        elif inspect.iscoroutinefunction(fn):
            raise TypeError(_ASYNC_TIDY)
        else:
            name = getattr(fn, "__name__", None)
        scope = Scope(name)
        stack = SCOPES.get()
        token = SCOPES.set((*stack, scope))
        result = None
        try:
            result = fn(*args, **kwargs)
            if not isinstance(result, Tensor) and inspect.isawaitable(result):
                if inspect.iscoroutine(result):
                    result.close()
                result = None
                raise TypeError(_ASYNC_TIDY)
        finally:
            SCOPES.reset(token)
            self._close(scope, stack[-1] if stack else None, result)
        return result

    def keep(self, obj):
        for t in iter_tensors(obj):
            t._live_buffer()
            t.kept = True
        return obj
