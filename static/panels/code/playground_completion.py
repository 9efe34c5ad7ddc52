"""Completion and signature help for the editor, by jedi, in the worker (static/worker.js, op "complete").

jedi and parso load from the server's wheels on the first request (app/assets.py), never at boot. jedi reads the
editor's code with the run namespace (playground_run.USER_GLOBALS: `pe`, `np` and the names earlier runs made), so
`x.` completes a tensor's methods from py_engine/tensor.pyi, and `pd.` pandas' names once pandas is loaded (a run
that imports it loads it). It never runs the user's objects' code: properties and __getattr__ are not evaluated
(jedi's allow_unsafe_interpreter_executions), so asking for completions creates no tensor and reads nothing back.
"""

import playground_run
import pyodide_js
from pyodide.ffi import to_js

MAX_ITEMS = 200  # completions returned; CodeMirror filters them further as the user types
MAX_DOC = 600  # characters of a docstring shown


async def _jedi():
    await pyodide_js.loadPackage(to_js(["jedi"]), messageCallback=lambda message: None)
    import jedi

    jedi.settings.allow_unsafe_interpreter_executions = False
    return jedi


def _position(code, offset):
    """jedi's (line from 1, column) of a character offset of `code`."""
    before = code[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1)


def _doc(definition):
    try:
        text = definition.docstring(raw=True)
    except Exception:  # jedi cannot always read a compiled module's docs
        return ""
    return text[:MAX_DOC] + ("…" if len(text) > MAX_DOC else "")


def _signature(signature):
    index = signature.index
    return {
        "label": signature.to_string(),
        "params": [p.to_string() for p in signature.params],
        "index": index,
        "doc": _doc(signature),
    }


async def complete(code, offset):
    """{"from": where the completed word starts, "items": [{"label", "type", "detail", "info"}], "signatures": [...]}
    at character `offset` of `code`: the names that fit there, and the signatures of the call the cursor is in."""
    jedi = await _jedi()
    line, column = _position(code, offset)
    script = jedi.Interpreter(code, [playground_run.USER_GLOBALS])
    completions = script.complete(line, column)[:MAX_ITEMS]
    prefix = len(completions[0].name) - len(completions[0].complete) if completions else 0
    items = []
    for c in completions:
        item = {"label": c.name, "type": c.type}
        if c.type == "function":
            signatures = c.get_signatures()
            if signatures:
                item["detail"] = signatures[0].to_string().removeprefix(c.name)
        items.append(item)
    signatures = [_signature(s) for s in script.get_signatures(line, column)]
    return {"from": offset - prefix, "items": items, "signatures": signatures}
