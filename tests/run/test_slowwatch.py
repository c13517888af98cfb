"""The slow-step watch's break: switched off with Python's own switch, it prepares nothing in the window."""
from __future__ import annotations

import sys

from inproc.run.profiling import DebugSettings
from inproc.run.slowwatch import SlowWatch


class StepTimes:
    """What the watch reads of the recorder as a step ends (its time and batch shape), from a list of times."""

    def __init__(self, times_s: list[float]) -> None:
        self.times_s, self.at = times_s, -1

    def last_step(self) -> tuple[float, int, int, int]:
        return self.times_s[self.at], 1, 1, -1


def test_switched_off_breakpoints_stop_nowhere_and_freeze_no_rows(monkeypatch):
    # PYTHONBREAKPOINT=0 makes breakpoint() do nothing; the watch then must not build the window's rows for a
    # debugger that never comes (a pass over every row so far, inside the window's time). Would fail: the
    # break's locals built (the rows frozen) or the hook called whatever the switch says.
    rec, frozen, hooked = StepTimes([0.001] * 20 + [0.05] + [0.001] * 5), [], []
    monkeypatch.setattr(sys, "breakpointhook", lambda *a, **k: hooked.append(1))
    monkeypatch.setenv("PYTHONBREAKPOINT", "0")
    watch = SlowWatch(None, DebugSettings(break_at_slow_step=True), "t", rec, steps=lambda: frozen.append(1))
    for row in range(len(rec.times_s)):
        rec.at = row
        watch.stepped(row)
    assert watch.first_slow == 20  # the planted step was judged slow
    assert not watch.broke and frozen == [] and hooked == []
