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
from inproc.measure.trace import CellTrace, RequestTrace
from inproc.plan.prompts import CellPrompts
from inproc.run.interrupt import RunInterrupted
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
                    _apply(req, d, i)
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

    def decode_cell(self, prompts: CellPrompts, s: DecodeSettings, primed: bool = False) -> CellTrace:
        """Keep ``s.concurrency`` requests in flight; measure a window of ``s.window_s`` seconds.

        ``primed``: the row's shared context is in the prefix cache already (its cold
        prefill or an earlier cell of the row left it there); otherwise it is primed first.
        The window opens at the end of the first step after which every one of the first
        C requests has its first token (their prefill is behind them). If that cannot
        happen (one finished first, or the warm-up limit passed: requests queued), it
        opens then, and the reason says so.
        """
        self.drain()
        if not primed:
            self.prime(prompts, s.temperature)
        prefix = prompts.shared_prefix() if prompts.mode == "shared" else None
        rec, t0 = StepRecorder(), self.clock()
        cell = _InFlight(self, prompts, prefix, s, t0)
        win = _Window(s)
        last_tick = 0.0
        while True:
            i, res, te = self._timed_step(rec, t0)
            finished = cell.file(res, i)
            if not win.advance(te - t0, cell.initial, finished, self.engine):
                break  # this step ends past the window: it and its counts stay outside
            if self.should_stop():
                self._stop(list(cell.active))
            if self.ticker is not None and te - last_tick >= TICK_S:
                last_tick = te
                self.ticker(_tick_text(te - t0, win.open_s, s, res.num_running, res.num_waiting))
            for _ in range(finished):
                cell.submit(False)
        requests = cell.close()
        return CellTrace(rec.freeze(), requests, win.open_s, s.window_s, win.reason, win.counters_start,
                         win.counters_end, t0)


class _InFlight:
    """The requests of one decode cell: C submitted at the start, each refilled when it finishes."""

    def __init__(self, driver: Driver, prompts: CellPrompts, prefix: list[int] | None, s: DecodeSettings,
                 t0: float) -> None:
        self.driver, self.prompts, self.prefix, self.s, self.t0 = driver, prompts, prefix, s, t0
        self.active: dict[str, RequestTrace] = {}
        self.done: list[RequestTrace] = []
        self.submitted = 0
        for _ in range(s.concurrency):
            self.submit(True)
        self.initial = list(self.active.values())

    def submit(self, initial: bool) -> None:
        d, s = self.driver, self.s
        prompt = self.prompts.request(self.submitted, self.prefix)
        req = RequestTrace(d._new_id("r"), len(prompt), s.max_tokens, 0.0, initial)
        d.engine.add_request(RequestSpec(req.request_id, prompt, s.max_tokens, s.temperature))
        req.submit_s = d.clock() - self.t0
        self.active[req.request_id] = req
        self.submitted += 1

    def file(self, res, step_index: int) -> int:
        """File a step's deltas under their requests; returns how many requests finished."""
        finished = 0
        for delta in res.deltas:
            req = self.active.get(delta.request_id)
            if req is not None and _apply(req, delta, step_index):
                self.done.append(self.active.pop(delta.request_id))
                finished += 1
        return finished

    def close(self) -> list[RequestTrace]:
        """Abort what is still in flight, leave the engine idle; every request, finished first."""
        self.driver.engine.abort(list(self.active))
        self.driver.drain()
        for req in self.active.values():
            req.finish_reason = req.finish_reason or "abort"
        return self.done + list(self.active.values())


class _Window:
    """When the decode window opened and why, and the engine counters at its two ends."""

    def __init__(self, s: DecodeSettings) -> None:
        self.s = s
        self.open_s: float | None = None
        self.reason = ""
        self.counters_start: dict[str, int] = {}
        self.counters_end: dict[str, int] = {}

    def advance(self, now_s: float, initial: list[RequestTrace], finished: int, engine: Engine) -> bool:
        """Account for a step that ended at ``now_s``; False once it ends past the window."""
        if self.open_s is None:
            self.reason = _window_opens(initial, finished, now_s, self.s.warmup_limit_s, self.s.concurrency)
            if self.reason:
                self.open_s = now_s
                self.counters_start = self.counters_end = engine.counters()
            return True
        if now_s > self.open_s + self.s.window_s:
            return False
        self.counters_end = engine.counters()  # counters as of the last step inside the window
        return True


def _apply(req: RequestTrace, d, step_index: int) -> bool:
    """File a step's delta under its request; True when the request finished."""
    if d.new_token_ids:
        req.token_steps.append(step_index)
        req.token_counts.append(len(d.new_token_ids))
        req.token_ids.extend(d.new_token_ids)
    if d.num_cached_tokens is not None and req.num_cached_tokens is None:
        req.num_cached_tokens = d.num_cached_tokens
    if d.finished:
        req.finished_step, req.finish_reason = step_index, d.finish_reason
    return d.finished


def _window_opens(initial: list[RequestTrace], finished: int, now_s: float, limit_s: float, c: int) -> str:
    """Why the decode window opens at this step, or "" while warm-up goes on."""
    started = sum(1 for r in initial if r.token_steps)
    if started == c:
        return f"all {c} requests decoding"
    if finished:
        return f"a request finished while {started} of {c} had started decoding"
    if now_s > limit_s:
        return f"warm-up limit {limit_s:g} s passed with {started} of {c} decoding"
    return ""


def _tick_text(now_s: float, open_s: float | None, s: DecodeSettings, running: int, waiting: int) -> str:
    """One live status line (ends with '...': the terminal printer overwrites it)."""
    phase = f"warm-up {now_s:.1f} s" if open_s is None else f"window {now_s - open_s:.1f}/{s.window_s:g} s"
    return f"  {phase}, {running} running, {waiting} waiting ..."
