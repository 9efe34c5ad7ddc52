"""pe.set_backend and pe.warmup are coroutines: called without `await` they do nothing. Python's own "coroutine ...
was never awaited" RuntimeWarning comes late, names an engine method and not the fix; this one names the call, the
user's line and how to run it (asyncio.run in a CPython script, await in async code and in the page, where
asyncio.run cannot run a loop inside Pyodide's)."""

import functools
import sys

from ..errors import call_site, user_frame, warn_at_user_line

IN_PYODIDE = sys.platform == "emscripten"


def _short(value):
    if isinstance(value, (str, int, float, bool)) or value is None:
        return repr(value)
    return getattr(value, "__qualname__", None) or type(value).__name__


def how_to_run(call):
    """The ways to run the coroutine `call` ("pe.set_backend('webgpu')") where this Python runs."""
    if IN_PYODIDE:
        return f"`await {call}` (the playground's code may await at top level)"
    return f"`asyncio.run({call})` in a script, or `await {call}` inside async code"


class MustAwait:
    """The coroutine a must-await function returns; dropped without being awaited, it warns at the caller's line
    (and closes the coroutine, so Python adds no warning of its own). It is a Coroutine to asyncio: asyncio.run,
    ensure_future, gather and await take it as they take the coroutine it wraps."""

    __slots__ = ("_call", "_coroutine", "_site", "_started")

    def __init__(self, coroutine, call, frame):
        self._coroutine, self._call, self._started = coroutine, call, False
        self._site = None if frame is None else call_site(frame)  # not the frame: it would keep its locals alive

    def __await__(self):
        self._started = True
        return self._coroutine.__await__()

    def send(self, value):
        self._started = True
        return self._coroutine.send(value)

    def throw(self, *exc):
        self._started = True
        return self._coroutine.throw(*exc)

    def close(self):
        self._started = True
        self._coroutine.close()

    def __del__(self):
        if self._started:
            return
        self._coroutine.close()
        message = f"{self._call} was never awaited, so it did nothing: run it with {how_to_run(self._call)}"
        warn_at_user_line(message, RuntimeWarning, self._site)


def must_await(name):
    """Decorate an async method of the engine that pe exports as `pe.<name>`: its calls return MustAwait."""

    def decorate(method):
        @functools.wraps(method)
        def call(self, *args, **kwargs):
            shown = ", ".join([*map(_short, args), *(f"{k}={_short(v)}" for k, v in kwargs.items())])
            return MustAwait(method(self, *args, **kwargs), f"pe.{name}({shown})", user_frame())

        return call

    return decorate
