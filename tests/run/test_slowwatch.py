"""The slow-step watch's break: switched off with Python's own switch, it prepares nothing in the window."""
from __future__ import annotations

import sys

from inproc.measure.steps import StepRecorder
from inproc.run.profiling import DebugSettings
from inproc.run.slowwatch import SlowWatch
from inproc.types import BatchShape, StepResult


def test_switched_off_breakpoints_stop_nowhere_and_freeze_no_rows(monkeypatch):
    # PYTHONBREAKPOINT=0 makes breakpoint() do nothing; the watch then must not build the window's rows for a
    # debugger that never comes (a pass over every row so far, inside the window's time). Would fail: the
    # break's locals built (the rows frozen) or the hook called whatever the switch says.
    times, frozen, hooked = [0.001] * 20 + [0.05] + [0.001] * 5, [], []
    monkeypatch.setattr(sys, "breakpointhook", lambda *a, **k: hooked.append(1))
    monkeypatch.setenv("PYTHONBREAKPOINT", "0")
    watch = SlowWatch(None, DebugSettings(break_at_slow_step=True), "t", StepRecorder(), steps=lambda: frozen.append(1))
    for row, t in enumerate(times):
        watch.stepped(row, t, StepResult((), 1, 0, 1, batch=BatchShape(0, 0, 1, 1)))
    assert watch.first_slow == 20  # the planted step was judged slow
    assert not watch.broke and frozen == [] and hooked == []
