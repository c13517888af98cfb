"""Drives an engine step by step through a cold-prefill sample or a sustained-decode cell.

The driver owns the loop: it submits requests, calls ``Engine.step()`` once per engine
iteration, stamps each step with ``perf_counter`` before and after, and files every
returned token under the step that produced it (``inproc.trace``). It computes no
statistic; ``inproc.metrics`` does, from the trace.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from inproc.engines.base import Engine, RequestSpec
from inproc.interrupt import RunInterrupted
from inproc.prompts import CellPrompts
from inproc.trace import CellTrace, RequestTrace, StepRecorder

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
        i = rec.append(ts - t0, te - t0, res.num_running, res.num_waiting, res.num_scheduled_tokens, res.num_preempted)
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

    def decode_cell(self, prompts: CellPrompts, s: DecodeSettings) -> CellTrace:
        """Keep ``s.concurrency`` requests in flight; measure a window of ``s.window_s`` seconds.

        The window opens at the end of the first step after which every one of the first
        C requests has its first token (their prefill is behind them). If that cannot
        happen (one finished first, or the warm-up limit passed: requests queued), it
        opens then, and the reason says so.
        """
        self.cold_start()
        prefix = prompts.shared_prefix() if prompts.mode == "shared" else None
        if prefix:
            self.run_to_completion(prefix, 1, s.temperature)  # primes the prefix cache
        eng, clock = self.engine, self.clock
        rec, active, done = StepRecorder(), {}, []
        t0 = clock()
        n_submitted = 0

        def submit(initial: bool) -> None:
            nonlocal n_submitted
            prompt = prompts.request(n_submitted, prefix)
            req = RequestTrace(self._new_id("r"), len(prompt), s.max_tokens, 0.0, initial)
            eng.add_request(RequestSpec(req.request_id, prompt, s.max_tokens, s.temperature))
            req.submit_s = clock() - t0
            active[req.request_id] = req
            n_submitted += 1

        for _ in range(s.concurrency):
            submit(True)
        initial = list(active.values())
        open_s, reason, c_start, c_end = None, "", {}, {}
        last_tick = 0.0
        while True:
            i, res, te = self._timed_step(rec, t0)
            finished = 0
            for d in res.deltas:
                req = active.get(d.request_id)
                if req is None:
                    continue
                if _apply(req, d, i):
                    done.append(active.pop(d.request_id))
                    finished += 1
            if open_s is None:
                reason = _window_opens(initial, finished, te - t0, s.warmup_limit_s, s.concurrency)
                if reason:
                    open_s, c_start = te - t0, eng.counters()
                    c_end = c_start
            elif te - t0 > open_s + s.window_s:
                break  # this step ends past the window: it and its counts stay outside
            else:
                c_end = eng.counters()  # counters as of the last step inside the window
            if self.should_stop():
                self._stop(list(active))
            if self.ticker is not None and te - last_tick >= TICK_S:
                last_tick = te
                self.ticker(_tick_text(te - t0, open_s, s, res.num_running, res.num_waiting))
            for _ in range(finished):
                submit(False)
        eng.abort(list(active))
        self.drain()
        for req in active.values():
            req.finish_reason = req.finish_reason or "abort"
        return CellTrace(rec.freeze(), done + list(active.values()), open_s, s.window_s, reason, c_start, c_end, t0)


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
