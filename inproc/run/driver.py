"""Drives an engine step by step through a cold-prefill sample or a sustained-decode cell.

The driver owns the loop: it submits requests, calls ``Engine.step()`` once per engine
iteration, stamps each step with ``perf_counter`` before and after, and files every
returned token under the step that produced it (``inproc.measure.trace``). It computes
no statistic; ``inproc.measure.metrics`` does, from the trace.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from inproc.engines.base import Engine
from inproc.measure.steps import StepRecorder
from inproc.engines.cuda import nvtx
from inproc.measure.trace import CellTrace, RequestTrace
from inproc.plan.prompts import CellPrompts
from inproc.run.inflight import InFlight, Window, apply_delta
from inproc.run.interrupt import RunInterrupted
from inproc.run.profiling import AfterWindow, DebugSettings, StepRanges
from inproc.types import RequestSpec

Clock = Callable[[], float]
TICK_S = 0.5


@dataclass(frozen=True)
class DecodeSettings:
    """How one decode cell is driven."""

    concurrency: int
    window_s: float
    max_tokens: int  # per request, already capped by the model's length
    temperature: float = 1.0
    warmup_limit_s: float = 600.0  # open the window anyway after this long (reason recorded)
    window_steps: int | None = None  # a window of exactly this many steps instead of window_s


class EngineNotIdle(RuntimeError):
    """The engine still had requests when a measurement needed it empty."""


class Driver:
    """Steps one engine; every measurement starts and ends with the engine idle."""

    def __init__(self, engine: Engine, clock: Clock = time.perf_counter, should_stop: Callable[[], bool] = lambda: False,
                 ticker: Callable[[str], None] | None = None) -> None:
        self.engine = engine
        self.clock = clock
        self.should_stop = should_stop  # checked at every step boundary (Ctrl-C)
        self.ticker = ticker  # live status for a terminal, called at most every TICK_S
        self._next_id = 0

    def _stop(self, in_flight: list[str]) -> None:
        """Leave the engine idle and abandon the measurement in progress."""
        self.engine.abort(in_flight)
        self.drain()
        raise RunInterrupted("stopped at a step boundary on request")

    def _new_id(self, tag: str) -> str:
        self._next_id += 1
        return f"{tag}-{self._next_id}"

    def _timed_step(self, rec: StepRecorder, t0: float):
        """One ``Engine.step()`` between two clock reads, recorded; returns (index, result, end time)."""
        ts = self.clock()
        res = self.engine.step()
        te = self.clock()
        i = rec.append(ts - t0, te - t0, res)
        return i, res, te

    def drain(self, max_steps: int = 1_000_000) -> None:
        """Step until the engine holds no request (aborted ones leave at the next step)."""
        for _ in range(max_steps):
            if not self.engine.has_unfinished():
                return
            self.engine.step()
        raise EngineNotIdle("engine still has requests after draining")

    def cold_start(self) -> None:
        """Empty engine and prefix cache, so the next prompt reuses nothing."""
        self.drain()
        if not self.engine.reset_prefix_cache():
            raise EngineNotIdle("the engine refused to reset its prefix cache")

    def run_to_completion(self, prompt: list[int], max_tokens: int, temperature: float = 1.0) -> CellTrace:
        """Submit one request, step until it finishes; used for cold prefill and priming."""
        rec, t0 = StepRecorder(64), self.clock()
        req = RequestTrace(self._new_id("one"), len(prompt), max_tokens, 0.0, True)
        before = self.engine.counters()
        self.engine.add_request(RequestSpec(req.request_id, prompt, max_tokens, temperature))
        req.submit_s = self.clock() - t0
        while req.finished_step is None:
            i, res, _ = self._timed_step(rec, t0)
            for d in res.deltas:
                if d.request_id == req.request_id:
                    apply_delta(req, d, i)
            if self.should_stop():
                self._stop([req.request_id])
        return CellTrace(rec.freeze(), [req], None, 0.0, "", before, self.engine.counters(), t0)

    def prefill_sample(self, prompt: list[int]) -> CellTrace:
        """Cold prefill: cache reset, then one request with a single output token."""
        self.cold_start()
        return self.run_to_completion(prompt, 1)

    def prime(self, prompts: CellPrompts, temperature: float = 1.0) -> None:
        """Empty the prefix cache, then put the row's shared context in it (shared mode)."""
        self.cold_start()
        if prompts.mode == "shared":
            self.run_to_completion(prompts.shared_prefix(), 1, temperature)

    def decode_cell(self, prompts: CellPrompts, s: DecodeSettings, primed: bool = False,
                    debug: DebugSettings | None = None) -> CellTrace:
        """Keep ``s.concurrency`` requests in flight; measure a window of ``s.window_s`` seconds
        (or of exactly ``s.window_steps`` steps).

        ``primed``: the row's shared context is in the prefix cache already (its cold
        prefill or an earlier cell of the row left it there); otherwise it is primed first.
        The window opens at the end of the first step after which every one of the first
        C requests has its first token (their prefill is behind them). If that cannot
        happen (one finished first, or the warm-up limit passed: requests queued), it
        opens then, and the reason says so. ``debug``: NVTX ranges, a breakpoint, and the
        engine's profiler over steps after the window (``inproc.run.profiling``).
        """
        self.drain()
        if not primed:
            self.prime(prompts, s.temperature)
        debug = debug or DebugSettings()
        prefix = prompts.shared_prefix() if prompts.mode == "shared" else None
        rec, t0 = StepRecorder(), self.clock()
        cell, win = InFlight(self, prompts, prefix, s, t0), Window(s)
        ranges = StepRanges(nvtx(), prompts.context, s.concurrency) if debug.nvtx else None
        after = AfterWindow(self.engine, debug, f"ctx{prompts.context}-C{s.concurrency}") if debug.profile else None
        try:
            self._decode_loop(rec, t0, cell, win, s, debug, ranges, after)
        finally:
            if after is not None:
                after.abandon()
        return CellTrace(rec.freeze(), cell.close(), win.open_s, s.window_s, win.reason, win.counters_start,
                         win.counters_end, t0, s.window_steps, after.result if after else None)

    def _decode_loop(self, rec, t0, cell, win, s, debug, ranges, after) -> None:
        """Steps until the window (and any profiled steps after it) is done."""
        last_tick, closed = 0.0, False
        while True:
            if debug.break_at_step and win.open_s is not None and win.steps == debug.break_at_step - 1 and not closed:
                window_step = debug.break_at_step  # noqa: F841 - for the debugger: the window step about to run
                breakpoint()  # the Nth window step runs next, on this thread (PYTHONBREAKPOINT picks the debugger)
            if ranges is not None:
                ranges.push(len(rec))
            i, res, te = self._timed_step(rec, t0)
            if ranges is not None:
                ranges.pop(i, res)
            finished = cell.file(res, i)
            if closed:
                if after.stepped(i):
                    return
            elif not win.advance(te - t0, cell.initial, finished, self.engine):
                # The window closed at this step (a time window: it ends past the window, outside it).
                closed = True
                if after is None or after.closed_at(i):
                    return
            if self.should_stop():
                self._stop(list(cell.active))
            if self.ticker is not None and te - last_tick >= TICK_S:
                last_tick = te
                self.ticker(_tick_text(te - t0, win.open_s, s, res.num_running, res.num_waiting))
            for _ in range(finished):
                cell.submit(False)


def _tick_text(now_s: float, open_s: float | None, s: DecodeSettings, running: int, waiting: int) -> str:
    """One live status line (ends with '...': the terminal printer overwrites it)."""
    if open_s is None:
        phase = f"warm-up {now_s:.1f} s"
    elif s.window_steps:
        phase = f"window {now_s - open_s:.1f} s ({s.window_steps} steps)"
    else:
        phase = f"window {now_s - open_s:.1f}/{s.window_s:g} s"
    return f"  {phase}, {running} running, {waiting} waiting ..."
