"""The gradient tape being recorded, if any: ops append to it (run_kernel), capture runs nothing under it."""

from contextvars import ContextVar

TAPE = ContextVar("py_engine_tape", default=None)  # set only while gradients are being recorded
