"""Ctrl-C as a request: the driver stops at the next step boundary, the run saves and exits.

A SIGINT that lands inside engine code can leave the engine half-way through a step (and
some engines log it with a traceback), so the first Ctrl-C only sets a flag; a second one
interrupts at once.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager


class RunInterrupted(Exception):
    """The user asked to stop; everything measured before the current cell is kept."""


class StopFlag:
    def __init__(self) -> None:
        self.requested = False

    def __call__(self) -> bool:
        return self.requested


@contextmanager
def graceful_sigint():
    """Install the two-stage Ctrl-C handler (main thread only) and yield the stop flag."""
    flag = StopFlag()
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return

    def on_sigint(signum, frame):
        if flag.requested:
            raise KeyboardInterrupt
        flag.requested = True

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)
