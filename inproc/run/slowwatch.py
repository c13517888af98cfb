"""Slow steps while a window runs: a breakpoint right after the first, a profiler trace around it.

The rule is ``inproc.measure.slow``'s, applied online (:class:`~inproc.measure.slow_online.OnlineSlow`):
each window step against the window steps of its kind before it, so nothing is flagged
until a kind has MIN_STEPS steps.

``--profile-slow``: the engine's profiler API has only start and stop, and a stop writes
the trace (no rolling buffer to dump on demand), so the window is profiled in consecutive
chunks of ``--profile-steps`` steps: a chunk's files are deleted when the next one ends
without a slow step, and once the chunk holding the first slow step has ended, that chunk
and the one before it are kept and profiling stops. The figures of such a cell are
measured under the profiler (and with the stops between chunks in the window's time).
"""
from __future__ import annotations

import os
from typing import Callable

from inproc.measure.slow import Reference, cause_of
from inproc.measure.slow_online import OnlineSlow
from inproc.measure.steps import StepRecorder, StepTrace
from inproc.measure.trace import ProfiledSteps
from inproc.run.profiling import DebugSettings
from inproc.types import StepResult


class SlowWatch:
    """Judges each window step as it ends; stops in the debugger and/or profiles as ``debug`` asks."""

    def __init__(self, engine, debug: DebugSettings, name: str, rec: StepRecorder,
                 steps: Callable[[], StepTrace] | None = None) -> None:
        self.engine, self.debug, self.name, self.rec = engine, debug, name, rec
        self.steps = steps or rec.freeze  # the rows so far with their GC columns (the cause reads them)
        self.online = OnlineSlow()
        self.first_slow: int | None = None  # row of the first slow step
        self.broke = False
        self.chunk: list = []  # [first row, files] of the chunk being profiled; [] when none
        self.kept: tuple[int, tuple[str, ...]] | None = None  # the chunk before it: first row, files
        self.result: ProfiledSteps | None = None

    def opened(self, row: int) -> None:
        """The window opened at the end of step ``row``: the profiler starts before the next."""
        if self.debug.profile_slow:
            self._start(row + 1)

    def stepped(self, row: int, time_s: float, res: StepResult) -> None:
        """Window step ``row`` has been recorded (it took ``time_s``, returned ``res``): judge it, then break and
        profile as asked. Its row is made later, in bulk: the rule reads the step's time as it ends, and its kind
        from ``res`` only where the time does not tell (or later, in bulk)."""
        ref = self.online.judge(row, time_s, res)
        if ref is not None and self.first_slow is None:
            self.first_slow = row
            if self.debug.break_at_slow_step:
                self._break(row, ref)
        if self.chunk and row - self.chunk[0] + 1 >= self.debug.profile_steps:
            self._end_chunk(row)

    def _break(self, row: int, ref: Reference) -> None:
        if os.environ.get("PYTHONBREAKPOINT") == "0":
            return  # breakpoints switched off (Python's own switch): no debugger to show the step to, the window goes on
        self.broke = True
        steps = self.steps()  # the rows so far, the GC columns charged (the cause reads them)
        step = {name: col[row].item() for name, col in steps.columns.items()}  # noqa: F841 - for the debugger: its row
        cause, detail = cause_of(steps, row, ref)  # noqa: F841 - its cause, as the report gives it
        median_ms = ref.median_s * 1e3  # noqa: F841 - its reference's median step time
        breakpoint()  # right after the first slow step (PYTHONBREAKPOINT picks the debugger)

    def _start(self, first_row: int) -> None:
        d = self.debug
        self.engine.start_profile(d.profile, d.profile_dir, d.profile_with_stack, self.name)
        self.chunk = [first_row]

    def _end_chunk(self, last_row: int) -> None:
        files = self.engine.stop_profile()
        first = self.chunk[0]
        self.chunk = []
        if self.first_slow is None:
            if self.kept is not None:
                _remove(self.kept[1])
            self.kept = (first, files)
            self._start(last_row + 1)
            return
        before_first, before_files = self.kept if self.kept is not None else (first, ())
        self.result = ProfiledSteps(self.debug.profile, before_files + files, before_first, last_row)
        self.kept = None

    def closed(self) -> None:
        """The window closed (or the cell ended early): stop a profiler still running, keep only the slow step's chunks."""
        if self.chunk:
            files = self.engine.stop_profile()
            first, self.chunk = self.chunk[0], []
            if self.first_slow is not None and self.first_slow >= first:
                before_first, before_files = self.kept if self.kept is not None else (first, ())
                self.result = ProfiledSteps(self.debug.profile, before_files + files, before_first, len(self.rec) - 1)
                self.kept = None
            else:
                _remove(files)
        if self.kept is not None:
            _remove(self.kept[1])
            self.kept = None


def _remove(files: tuple[str, ...]) -> None:
    for f in files:
        try:
            os.remove(f)
        except OSError:
            pass  # already gone: nothing to keep
