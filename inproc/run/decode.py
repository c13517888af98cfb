"""One decode cell while it runs: C requests kept in flight, the window, every step recorded.

:class:`DecodeCell` owns all of the decode loop's state: its requests (C submitted at the
start, each refilled before the next step once it finishes), its window (when it opened,
why, the engine counters at its two ends), its step rows (``inproc.measure.steps``) and,
when asked, what happens after the window (a profiler, NVTX ranges, a breakpoint:
``inproc.run.profiling``). It computes no statistic: ``inproc.measure.metrics`` does.

What is timed, from where to where (``time.perf_counter`` seconds from the cell's start,
on the clock's nanosecond grid: ``inproc.measure.steps.on_ns_grid``):

- a step: from just before ``Engine.step()`` is called to just after it returns (its row's
  ``t_start_s`` / ``t_end_s``); every token the step returned is stamped with that end.
  Between two steps the loop does as little as it can, in code the engine's step has left cold
  in the CPU's caches: the step's times and result are held (``StepRecorder``), and only what
  the next step depends on is read from it (which requests finished, to refill them; before the
  window opens, which have started). The step rows, the tokens filed under their requests
  (``inproc.run.requests``: every ``HELD_DELTAS`` deltas and at the cell's end), the garbage collector's pauses
  (``inproc.run.gcwatch``: a log its callback keeps, charged to the steps by time) and the
  step watchdog's view (``inproc.run.watchdog``: the thread reads the loop's step count) are
  all done in bulk or off the stepping thread;
- a request's submit: just before it is handed to ``Engine.add_request`` (``submit_s``,
  where TTFT starts on every engine);
- everything else the loop does (holding the step, the window's bookkeeping, refills, the
  bulk work when it falls due, the counters read at the window's edges, and in a time window
  after each step: the step that ends past it is outside, so the counters must be those of the
  step before) falls between steps: that is what ``harness_overhead`` measures.

The accounting only the step anatomy reads (``Engine.set_anatomy``) is on only in its own pass:
up to :data:`ANATOMY_STEPS` steps right after the window, same requests (``CellTrace.anatomy_pass``).
The kernel pass (``inproc.run.kernelpass``, ``CellTrace.kernel_pass``) follows it, then any profiler.
Garbage collection while the window is open, and why: ``inproc.run.window``.
"""
from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Callable, Iterator

from inproc.engines.base import Engine
from inproc.engines.cuda import nvtx
from inproc.measure.steps import StepRecorder, on_ns_grid
from inproc.measure.trace import CellTrace, RequestTrace, StepSpan
from inproc.plan.prompts import CellPrompts
from inproc.run.gcwatch import GcWatch
from inproc.run.idle import drain, stop
from inproc.run.progress import tick_line
from inproc.run.requests import CellRequests
from inproc.run.kernelpass import KernelPassRun
from inproc.run.profiling import AfterWindow, DebugSettings, StepRanges
from inproc.run.slowwatch import SlowWatch
from inproc.run.watchdog import watched_step
from inproc.run.window import WindowEdges, heap_frozen, window_opens  # noqa: F401 - the benchmarks import heap_frozen
from inproc.types import EngineCounters, RequestSpec, StepResult

Clock = Callable[[], float]
TICK_S = 0.5  # at most one live status line this often
#: Steps in the anatomy's own pass after the window (fewer when the window held fewer).
ANATOMY_STEPS = 64


@dataclass(frozen=True)
class DecodeSettings:
    """How one decode cell is driven."""

    concurrency: int
    window_s: float
    max_tokens: int  # per request, already capped by the model's length
    temperature: float = 1.0
    warmup_limit_s: float = 600.0  # open the window anyway after this long (reason recorded)
    window_steps: int | None = None  # a window of exactly this many steps instead of window_s
    anatomy_steps: int = 0  # the anatomy's own pass after the window: at most this many steps (0: none)
    kernel_steps: int = 0  # the kernel pass after the anatomy's: this many steps (0: none)


class DecodeCell:
    """Keeps ``s.concurrency`` requests in flight on ``engine`` and measures one window; :meth:`run` once.

    The window opens at the end of the first step after which every one of the first C
    requests has its first token (their prefill is behind them). If that cannot happen
    (one finished first, or the warm-up limit passed: requests queued), it opens then, and
    the reason says so. A time window closes at the first step that ends past
    ``s.window_s`` (that step is outside); a step window with its ``s.window_steps``-th step.
    Request ids are ``r-N`` with N from ``ids``, which the caller keeps unique per engine.
    """

    def __init__(self, engine: Engine, prompts: CellPrompts, s: DecodeSettings, ids: Iterator[int],
                 clock: Clock = time.perf_counter, debug: DebugSettings | None = None,
                 should_stop: Callable[[], bool] | None = None, ticker: Callable[[str], None] | None = None,
                 on_edge: Callable[[str, float], None] | None = None, record_gc: bool = True) -> None:
        self.engine, self.prompts, self.s, self.ids, self.clock = engine, prompts, s, ids, clock
        self.watchdog, self._engine_step = watched_step(engine)  # it watches the loop's step count (run)
        self.debug = debug or DebugSettings()
        self.should_stop = should_stop  # checked at every step boundary (Ctrl-C)
        self.ticker = ticker  # live status for a terminal, called at most every TICK_S
        self.prefix = prompts.shared_prefix() if prompts.mode == "shared" else None
        self.t0 = 0.0  # absolute clock at the cell's start; every time kept is relative to it
        # The requests.
        self.requests = CellRequests()
        self.submitted = 0
        # The window.
        self.open_s: float | None = None
        self.reason = ""
        self.window_steps = 0  # steps inside the window so far
        self.counters_start: EngineCounters | None = None
        self.counters_end: EngineCounters | None = None
        self.anatomy_pass: StepSpan | None = None  # rows of the anatomy's own pass, once it ran
        self.edges = WindowEdges(on_edge)  # at the window's edges: the heap frozen, ``on_edge`` told
        # The steps, and what is looked into besides the figures.
        self.rec = StepRecorder()
        self.held_work_s = 0.0  # the bulk work left when the loop ends, timed (:meth:`_held_work`)
        self.gc_watch = GcWatch() if record_gc else None
        self.ranges = StepRanges(nvtx(), prompts.context, s.concurrency) if self.debug.nvtx else None
        name = f"ctx{prompts.context}-C{s.concurrency}"
        self.after = AfterWindow(engine, self.debug, name) if self.debug.profile and not self.debug.profile_slow else None
        self.slow = SlowWatch(engine, self.debug, name, self.rec, self._steps) if self.debug.watch_slow else None
        self.kernels = KernelPassRun(engine, s.kernel_steps, self.debug.profile_dir, name) if s.kernel_steps else None

    def run(self) -> CellTrace:
        """Submit C requests, step through the window (and any profiled steps), then abort what is left."""
        self.t0 = self.clock()
        gc_watch = self.gc_watch
        if gc_watch is not None:
            gc_watch.start()
        try:
            for _ in range(self.s.concurrency):
                self._submit(initial=True)
            with self.watchdog.watching(self.rec.__len__) if self.watchdog is not None else nullcontext() as watch:
                try:
                    self._loop()
                    self._held_work()
                finally:
                    if watch is not None:
                        watch.longest_step_s = self._longest_step_s()
        finally:
            if gc_watch is not None:
                gc_watch.stop()
            self.edges.closed()
            if self.after is not None:
                self.after.abandon()
            if self.s.anatomy_steps:
                self.engine.set_anatomy(False)  # also when the pass was cut short
            if self.slow is not None:
                self.slow.closed()
            if self.kernels is not None:
                self.kernels.abandon(len(self.rec) - 1)  # when the pass was cut short
        s, after, slow, kernels = self.s, self.after, self.slow, self.kernels
        profiled = after.result if after else slow.result if slow else None
        return CellTrace(self._steps(), self._close(), self.open_s, s.window_s, self.reason, self.counters_start,
                         self.counters_end, self.t0, s.window_steps, profiled, self.anatomy_pass,
                         kernels.result if kernels else None, kernels.table if kernels else None)

    # -- the loop ------------------------------------------------------------------
    def _loop(self) -> None:
        """Steps until the window (and any profiled steps after it) is done."""
        break_at, after = self.debug.break_at_step, self.after
        watched = self._advance_watched if self.slow is not None else None  # no call layer when no watch
        closed, last_tick, pass_left = False, -TICK_S, 0
        while True:
            if break_at and not closed and self.open_s is not None and self.window_steps == break_at - 1:
                window_step = break_at  # noqa: F841 - for the debugger: the window step about to run
                breakpoint()  # the Nth window step runs next, on this thread (PYTHONBREAKPOINT picks the debugger)
            i, res, now_s, took = self._step()
            finished = self.requests.file(res, i) if self.open_s is None else self.requests.hold(res, i)
            if pass_left:
                pass_left -= 1
                if not pass_left:
                    pass_left = self._next_pass(i)
                    if not pass_left and (after is None or after.closed_at(i)):
                        return
            elif closed:
                if after.stepped(i):
                    return
            elif not (self._advance(now_s, finished) if watched is None else watched(i, now_s, finished, took, res)):
                closed = True
                self.edges.closed(self.t0 + now_s)
                pass_left = self._next_pass(i)
                if not pass_left and (after is None or after.closed_at(i)):
                    return
            if self.should_stop is not None and self.should_stop():
                stop(self.engine, list(self.requests.active))
            if self.ticker is not None and now_s - last_tick >= TICK_S:
                last_tick = now_s
                self.ticker(tick_line(self.s, self.open_s, now_s, res))
            for _ in range(finished):
                self._submit(initial=False)

    def _step(self) -> tuple[int, StepResult, float, float]:
        """The one place the cell steps the engine: ``Engine.step()`` between two clock reads, recorded.

        Returns the step's row, its result, its end (s from the cell's start, before the nanosecond grid
        the row's ``t_end_s`` is frozen on: :meth:`_advance` puts it there where it matters) and its time.
        """
        ranges, t0 = self.ranges, self.t0
        if ranges is not None:
            ranges.push(len(self.rec))
        ts = self.clock()
        res = self._engine_step()
        te = self.clock()
        i = self.rec.append(ts - t0, te - t0, res)
        if ranges is not None:
            ranges.pop(i, res)
        return i, res, te - t0, te - ts

    def _held_work(self) -> None:
        """The held tokens filed, the held steps made rows: timed (``held_work_s``), before anything reads a row."""
        held_from = self.clock()
        self.requests.file_held()
        self.rec.flush()
        self.held_work_s = self.clock() - held_from

    def _steps(self):
        """The step rows so far, frozen, with the garbage collector's pauses charged to them."""
        gc_watch, t0 = self.gc_watch, self.t0
        if gc_watch is None:
            return self.rec.freeze()
        return self.rec.freeze(lambda starts, ends: gc_watch.columns(starts, ends, t0))

    def _longest_step_s(self) -> float:
        steps = self.rec.freeze()
        return float((steps.t_end_s - steps.t_start_s).max()) if len(steps) else 0.0

    # -- the requests -------------------------------------------------------------------
    def _submit(self, initial: bool) -> None:
        s = self.s
        prompt = self.prompts.request(self.submitted, self.prefix)
        req = RequestTrace(f"r-{next(self.ids)}", len(prompt), s.max_tokens, 0.0, initial)
        spec = RequestSpec(req.request_id, prompt, s.max_tokens, s.temperature)
        req.submit_s = on_ns_grid(self.clock() - self.t0)  # before the engine takes it in: TTFT's start
        self.engine.add_request(spec)
        self.requests.add(req)
        self.submitted += 1

    def _close(self) -> list[RequestTrace]:
        """Abort what is still in flight, leave the engine idle; every request, finished ones first."""
        active = self.requests.active
        self.engine.abort(list(active))
        drain(self.engine)
        for req in active.values():
            req.finish_reason = req.finish_reason or "abort"
        return self.requests.done + list(active.values())

    # -- the window ---------------------------------------------------------------------
    def _advance(self, now_s: float, finished: int) -> bool:
        """Account for a step that ended at ``now_s``; False once the window has closed."""
        s = self.s
        if self.open_s is None:
            self.reason = window_opens(self.requests.started, s.concurrency, finished, now_s, s.warmup_limit_s)
            if self.reason:
                self.open_s = on_ns_grid(now_s)  # the row's t_end_s as frozen: the window's bounds are step ends
                self.counters_start = self.counters_end = self.engine.counters()
                self.edges.opened(self.t0 + now_s)
            return True
        if s.window_steps is not None:
            self.window_steps += 1
            if self.window_steps < s.window_steps:
                return True
            self.counters_end = self.engine.counters()  # the window's last step
            return False
        end = self.open_s + s.window_s
        if now_s > end - 1e-6 and on_ns_grid(now_s) > end:  # compared as the row will be frozen
            return False  # this step ends past the window: it and its counts stay outside
        self.window_steps += 1
        self.counters_end = self.engine.counters()  # as of the last step inside the window (it may be)
        return True

    def _next_pass(self, row: int) -> int:
        """Row ``row`` closed the window or a pass after it: end that pass and start the next (the anatomy's,
        then the kernel pass); the steps of the one started (0: none left)."""
        kernels = self.kernels
        if kernels is not None and kernels.profiler is not None:
            self._engine_step = self._plain_step
            kernels.end(row)
            return 0
        if self.anatomy_pass is not None and self.anatomy_pass.last_step < self.anatomy_pass.first_step:
            self.engine.set_anatomy(False)
            self.anatomy_pass = StepSpan(self.anatomy_pass.first_step, row)
        else:  # the window closed: the anatomy's accounting on for its own pass, if it has one
            n = min(self.s.anatomy_steps, max(self.window_steps, 1))
            if n and self.engine.set_anatomy(True):
                self.anatomy_pass = StepSpan(row + 1, row)  # grows as the pass steps
                return n
        n = kernels.start(row) if kernels is not None else 0
        if n:  # the pass's steps run inside the profiler's step marks
            self._plain_step, self._engine_step = self._engine_step, kernels.wrap(self._engine_step)
        return n

    def _advance_watched(self, row: int, now_s: float, finished: int, took: float, res: StepResult) -> bool:
        """:meth:`_advance`, then the step (its time and result) handed to the slow-step watch (on)."""
        was_open, counted = self.open_s is not None, self.window_steps
        more = self._advance(now_s, finished)
        slow = self.slow
        if not was_open and self.open_s is not None:
            slow.opened(row)
        elif self.window_steps > counted:
            slow.stepped(row, took, res)
        if not more:
            slow.closed()
        return more
