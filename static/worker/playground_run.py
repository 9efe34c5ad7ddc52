"""Running the page's code in the worker: one namespace, Stop (KeyboardInterrupt at a safe point), short tracebacks.

Each run compiles its code as the file "<run N>" with top-level await, in USER_GLOBALS, and answers {"ok": True,
"value": ...} or {"ok": False, "error": {"type", "message", "traceback", "line"}}: the traceback starts at the
user's code, shows its lines (the sources of the last runs are kept in linecache) and leaves out Pyodide's and
asyncio's frames; `line` is the line of this run's code where it failed (None when it failed elsewhere).

Stop: the page writes SIGINT into Pyodide's interrupt buffer, which Python checks as it executes. The handler
installed here raises KeyboardInterrupt only where the engine's bookkeeping cannot be cut in half: when walking
out from the interrupted frame it meets the user's code before any frame of the engine's core (tensors, buffers,
scopes, kernels, the tape, the backends) or of this worker's modules. Otherwise a profile function raises it at
the next call or return that leaves the core (into the user's code or the engine's plain Python, such as fit's
loop), once the core's call has finished. So `with pe.scope():`
and tidy() release what they hold, and memory counts stay exact. Code waiting at an `await` executes nothing, so
the worker calls stop_awaiting(), which cancels the run's task there; the run reports KeyboardInterrupt all the
same. time.sleep, input() and sys.stdin's readline() wait on the shared memory the page writes into (Atomics.wait), so
Stop ends them at once too: Pyodide's own sleep spins until it is over, and its input() has no terminal to read
(OSError). Where the page is not cross-origin isolated there is no shared memory: sleep spins as before, and a read
of a line says why it cannot.
"""

import asyncio
import builtins
import inspect
import io
import itertools
import linecache
import math
import numbers
import os
import signal
import sys
import time
import traceback

import js
import numpy as np
import playground_display
from playground_display import describe, to_jsonable
from playground_packages import load_imported
from pyodide.code import eval_code_async

import py_engine as pe

USER_PREFIX = "<run "
STOPPED = "stopped by the Stop button"
# Modules whose frames must run to completion once started: an interrupt there waits for the user's code.
CORE = ("py_engine.engine", "py_engine.tensor", "py_engine.kernel_registry", "py_engine.autograd", "py_engine.backends")
WORKER = ("playground", "playground_run", "playground_display", "playground_packages", "playground_figures")
# contextlib runs the engine's scope() generator: cut between its steps, a scope would stay pushed
PROTECTED = (*WORKER, "contextlib")
HIDDEN_FILES = ("/_pyodide/", "/pyodide/", "/asyncio/")  # frames a traceback leaves out
PAUSES = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR  # a "return" that may resume
KEPT_SOURCES = 500  # the sources of the last runs kept for tracebacks


# pyplot's backend (read when pyplot is first imported): figures go into the Output (playground_figures.py)
os.environ["MPLBACKEND"] = "module://playground_figures"


def fresh_globals():
    return {"__name__": "__main__", "pe": pe, "py_engine": pe, "np": np}


# The namespace of the page's code: one per worker, kept between runs.
USER_GLOBALS = fresh_globals()
_numbers = itertools.count(1)


class _Run:
    def __init__(self):
        self.task = asyncio.current_task()
        self.stopped = False
        self.cancelled_while = None  # where stop_awaiting() cancelled the run's task


_active = None  # the run in progress
_starting = False  # the worker announced a run that has not begun yet
_seen = False  # Python has seen this run's Stop (and the page was told): it stops at the next safe point
_interrupt_buffer = None  # Pyodide's interrupt buffer (an Int32Array on a SharedArrayBuffer), when the page has one


def starting():
    """The worker is about to start a run: a Stop that Python sees before run() begins is kept for it."""
    global _starting, _seen
    _starting, _seen = True, False


def set_interrupt_buffer(buffer):
    global _interrupt_buffer
    _interrupt_buffer = buffer


def _is_user(frame):
    return frame.f_code.co_filename.startswith(USER_PREFIX)


def _is_protected(frame):
    module = frame.f_globals.get("__name__", "")
    return module in PROTECTED or any(module == m or module.startswith(m + ".") for m in CORE)


def _safe(frame):
    """Whether a KeyboardInterrupt may be raised in `frame`: walking out from it, the user's code comes before any
    frame of the engine's core or of this worker (the frames in between are the engine's plain Python: ops, layers,
    models, training, which release their scopes with `with` and `finally`)."""
    while frame is not None:
        if _is_user(frame):
            return True
        if _is_protected(frame):
            return False
        frame = frame.f_back
    return False


def _stop_here():
    sys.setprofile(None)
    _active.stopped = True
    js.peRunner.stopping()  # the page waits no longer for the run to answer Stop (it unwinds now)
    raise KeyboardInterrupt(STOPPED)


def _on_interrupt(signum, frame):
    if _active is None:
        if _starting and _interrupt_buffer is not None:  # the run has not begun: ask again at Pyodide's next look
            _tell_seen()
            js.Atomics.store(_interrupt_buffer, 0, signal.SIGINT)
        return  # else a Stop that arrived after its run ended
    if _safe(frame):
        _stop_here()
    _tell_seen()  # Python is executing (the run's own start, or the engine's core): no restart is needed
    sys.setprofile(_stop_at_a_safe_point)  # inside the engine's core: stop as soon as it is left
    # ... and ask again at Pyodide's next look at the buffer: a profile set while a synchronous readback (JSPI)
    # has Python's stack switched out does not always survive the switch back
    if _interrupt_buffer is not None:
        js.Atomics.store(_interrupt_buffer, 0, signal.SIGINT)


def _tell_seen():
    """Tell the page, once per run, that Python has seen its Stop, so the page does not restart the worker while the
    run reaches a safe point (its imports' packages still loading, or a step inside the engine's core)."""
    global _seen
    if not _seen:
        _seen = True
        js.peRunner.stopping()


def _stop_at_a_safe_point(frame, event, arg):
    """A profile function, called at every call and return while a Stop waits: entering a safe frame, or returning
    into one from a function that finished (not a coroutine or generator pausing), is where it stops."""
    if _active is None:
        sys.setprofile(None)
        return
    entering = event == "call" and _safe(frame)
    returning = event == "return" and not frame.f_code.co_flags & PAUSES and _safe(frame.f_back)
    if entering or returning:
        _stop_here()


def _stop_soon(caller):
    """A Stop ended a wait early (time.sleep, input()): KeyboardInterrupt now if `caller` is safe, else the interrupt
    goes back into the buffer, for the handler to raise at the next safe point."""
    js.Atomics.store(_interrupt_buffer, 0, 0)
    if _active is not None and _safe(caller):
        _stop_here()
    js.Atomics.store(_interrupt_buffer, 0, signal.SIGINT)


def _show_output():
    """What the code printed reaches the page before a wait that blocks the worker (its timers cannot fire)."""
    sys.stdout.flush()
    sys.stderr.flush()
    js.peRunner.flush()


_spinning_sleep = time.sleep


def _sleep(seconds):
    """time.sleep: a wait on the interrupt buffer, which Stop ends at once."""
    if not isinstance(seconds, numbers.Real):
        raise TypeError(f"sleep: the number of seconds must be a number, got {type(seconds).__name__}")
    if math.isnan(seconds) or seconds < 0:
        raise ValueError(f"sleep length must be a non-negative number, got {seconds}")
    if _interrupt_buffer is None:
        return _spinning_sleep(seconds)
    _show_output()
    if js.Atomics.wait(_interrupt_buffer, 0, 0, seconds * 1000) != "timed-out":
        _stop_soon(sys._getframe(1))


def _read_line(prompt, caller):
    """The line typed in the Output's text box after `prompt` (without its newline); Stop ends the wait with
    KeyboardInterrupt, raised at `caller` when safe."""
    if _interrupt_buffer is None:
        raise RuntimeError(
            "input() needs the page to be cross-origin isolated (it waits on memory shared with the page), and this "
            "one is not: put the values in the code instead, or open the page from a host that sends its headers "
            "(python -m app serve)"
        )
    _show_output()
    line = js.peRunner.readLine(str(prompt))
    if line is None:
        _stop_soon(caller)
        return ""  # the KeyboardInterrupt comes at the next safe point
    return line


def _input(prompt=""):
    """input(): the page shows `prompt` with a text box in its Output and the worker waits for the line typed there;
    Stop ends the wait with KeyboardInterrupt."""
    return _read_line(prompt, sys._getframe(1))


class _TypedLines(io.TextIOBase):
    """sys.stdin: the lines typed in the Output, each read when the program asks for one (as input() reads them).
    There is no end of input to type, so read() of everything is refused with what to do instead."""

    def __init__(self):
        self._left = ""  # what a read of a few characters left of the last line

    def readable(self):
        return True

    @property
    def encoding(self):
        return "utf-8"

    def _need(self, caller):
        if not self._left:
            self._left = _read_line("", caller) + "\n"

    def readline(self, size=-1):
        self._need(sys._getframe(1))
        end = self._left.index("\n") + 1
        if size is not None and 0 <= size < end:
            end = size
        line, self._left = self._left[:end], self._left[end:]
        return line

    def read(self, size=-1):
        if size is None or size < 0:
            raise io.UnsupportedOperation(
                "sys.stdin.read() reads to the end of the input, which the Output has no way to type: read a line "
                "at a time with sys.stdin.readline() or input()"
            )
        self._need(sys._getframe(1))
        text, self._left = self._left[:size], self._left[size:]
        return text


def stop_awaiting():
    """Called by the worker when Stop arrives while Python is not executing. "cancelled": the run waited at an await
    in the user's code, or for the packages its code imports (they go on loading: the next import finds them), and is
    cancelled there; "running": it is suspended inside the engine or a synchronous
    readback, or announced but not begun, where the interrupt must wait until it executes; "idle": no run is in
    progress. A run announced but not begun has seen its Stop (the page is told): this thread is free, so its task
    begins next and meets the interrupt at once; the page need not wait for it, however long the tasks queued
    before it take."""
    run = _active
    if run is None and _starting:
        if _interrupt_buffer is not None:
            _tell_seen()
        return "running"  # the interrupt waits for the task to execute
    if run is None or run.task is None or run.task.done():
        return "idle"
    coroutine = run.task.get_coro()
    if coroutine.cr_running:
        return "running"  # suspended in the middle of a step (JSPI run_sync): it resumes before it can be cancelled
    awaitable = coroutine.cr_await  # the run's own coroutine is protected; what it awaits may not be
    run.cancelled_while = "while the code was waiting at an await"
    while awaitable is not None and hasattr(awaitable, "cr_frame"):
        frame = awaitable.cr_frame
        if frame is not None and frame.f_globals.get("__name__") == "playground_packages":
            run.cancelled_while = "while the packages it imports were loading (they finish loading in the background)"
            break
        if frame is not None and _is_protected(frame):
            return "running"
        awaitable = awaitable.cr_await
    run.stopped = True
    run.task.cancel(STOPPED)
    return "cancelled"


def _remember_source(filename, code):
    """Keep the run's source for tracebacks, also of functions it defined that fail in a later run. Pyodide's own
    entry is lazy, which linecache of Python 3.12 never reads for a "<...>" name; one with the lines is read."""
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    linecache.cache.pop(f"{USER_PREFIX}{int(filename[len(USER_PREFIX) : -1]) - KEPT_SOURCES}>", None)


def _trimmed(te):
    """te with its stack from the first user frame on, without Pyodide's and asyncio's frames; the same for the
    exceptions it was raised from or during."""
    frames = list(te.stack)
    first = next((k for k, f in enumerate(frames) if f.filename.startswith(USER_PREFIX)), 0)
    kept = [
        f
        for f in frames[first:]
        if not any(part in f.filename for part in HIDDEN_FILES) and not f.filename.endswith("/playground_run.py")
    ]
    te.stack = traceback.StackSummary.from_list(kept)
    for chained in (te.__cause__, te.__context__):
        if chained is not None:
            _trimmed(chained)
    return te


def describe_error(error, filename):
    """The page's view of an exception raised by the run compiled as `filename` (see the module docstring)."""
    te = _trimmed(traceback.TracebackException.from_exception(error))
    line = None
    if isinstance(error, SyntaxError) and error.filename == filename:
        line = error.lineno
    else:
        for frame in reversed(te.stack):
            if frame.filename == filename:
                line = frame.lineno
                break
    message = "".join(te.format_exception_only()).strip()
    return {"type": type(error).__name__, "message": message, "traceback": "".join(te.format()), "line": line}


async def run(code, result="display", pixel_ratio=1):
    """Run `code` in USER_GLOBALS; its last expression's value as describe() gives it (result="display") or as
    to_jsonable() does (result="json"). Output printed meanwhile goes to the worker's stdout/stderr handlers, and so
    do the figures it shows (playground_figures.py), drawn for a screen of `pixel_ratio` device pixels per CSS pixel;
    the figures still open at its end are shown then, as a notebook does."""
    global _active, _starting
    filename = f"{USER_PREFIX}{next(_numbers)}>"
    current = _Run()
    _active, _starting = current, False
    try:
        try:
            playground_display.pixel_ratio = pixel_ratio
            await load_imported(code)
            value = await eval_code_async(code, USER_GLOBALS, filename=filename)
            _show_open_figures(but=value)
        finally:
            _active = None
            sys.setprofile(None)  # a Stop that waited for a safe point is moot now
            _remember_source(filename, code)
            sys.stdout.flush()  # a last line without its newline reaches the page too
            sys.stderr.flush()
    except asyncio.CancelledError as e:
        if not current.stopped:
            raise
        current.task.uncancel()
        error = KeyboardInterrupt(f"{STOPPED} {current.cancelled_while}")
        return {"ok": False, "error": describe_error(error.with_traceback(e.__traceback__), filename)}
    except BaseException as e:  # the user's error, KeyboardInterrupt and SystemExit included
        return {"ok": False, "error": describe_error(e, filename)}
    try:
        shown = await (describe(value) if result == "display" else to_jsonable(value))
    except Exception as e:  # e.g. a tensor in a result that runPython cannot read back
        return {"ok": False, "error": describe_error(e, filename)}
    return {"ok": True, "value": shown}


def _show_open_figures(but):
    if "matplotlib.pyplot" in sys.modules:  # a figure exists only once pyplot is imported
        import playground_figures

        playground_figures.show(but=but)


def clear_names():
    """Forget every name the page's code defined; returns how many there were."""
    count = len(USER_GLOBALS.keys() - fresh_globals().keys() - {"__builtins__"})  # exec() adds __builtins__
    USER_GLOBALS.clear()
    USER_GLOBALS.update(fresh_globals())
    return count


signal.signal(signal.SIGINT, _on_interrupt)
time.sleep = _sleep
builtins.input = _input
sys.stdin = _TypedLines()
