"""Drives an engine step by step through a cold-prefill sample or a sustained-decode cell.

The driver keeps the engine between measurements: it drains it, resets its prefix
cache, primes a row's shared context, and runs single requests to completion (cold
prefill). A decode cell is one :class:`~inproc.run.decode.DecodeCell`, which owns that
loop's state. Every measurement starts and ends with the engine idle. Nothing here
computes a statistic; ``inproc.measure.metrics`` does, from the trace.
"""
from __future__ import annotations

import itertools
import time
from typing import Callable

from inproc.engines.base import Engine
from inproc.measure.steps import StepRecorder, on_ns_grid
from inproc.measure.trace import CellTrace, RequestTrace
from inproc.plan.prompts import CellPrompts
from inproc.run.decode import Clock, DecodeCell, DecodeSettings
from inproc.run.idle import EngineNotIdle, drain, file_delta, stop
from inproc.run.profiling import DebugSettings
from inproc.run.watchdog import watched_step
from inproc.types import RequestSpec

__all__ = ["DecodeSettings", "Driver", "EngineNotIdle"]


class Driver:
    """Steps one engine; every measurement starts and ends with the engine idle."""

    def __init__(self, engine: Engine, clock: Clock = time.perf_counter, should_stop: Callable[[], bool] | None = None,
                 ticker: Callable[[str], None] | None = None) -> None:
        self.engine = engine
        self.clock = clock
        self.should_stop = should_stop  # checked at every step boundary (Ctrl-C)
        self.ticker = ticker  # live status for a terminal
        self.ids = itertools.count(1)  # request ids, unique over the engine's life
        # Called with ("open" | "close", clock time) at a decode window's edges (the runner's telemetry
        # marks them: the GPUs' energy counters are read there); None: nobody listens.
        self.on_window_edge: Callable[[str, float], None] | None = None
        # The garbage collector's pauses recorded per step (inproc.run.gcwatch); off only in a benchmark's A/B.
        self.record_gc = True

    def drain(self, max_steps: int = 1_000_000) -> None:
        """Step until the engine holds no request (aborted ones leave at the next step)."""
        drain(self.engine, max_steps)

    def cold_start(self) -> None:
        """Empty engine and prefix cache, so the next prompt reuses nothing."""
        self.drain()
        if not self.engine.reset_prefix_cache():
            raise EngineNotIdle("the engine refused to reset its prefix cache")

    def run_to_completion(self, prompt: list[int], max_tokens: int, temperature: float = 1.0) -> CellTrace:
        """Submit one request, step until it finishes; used for cold prefill and priming.

        Timed as a decode cell is (``inproc.run.decode``): submit just before ``add_request``,
        each step between two clock reads.
        """
        engine, clock = self.engine, self.clock
        watchdog, engine_step = watched_step(engine)  # armed outside the step's clock reads
        rec, t0 = StepRecorder(), clock()
        req = RequestTrace(f"one-{next(self.ids)}", len(prompt), max_tokens, 0.0, True)
        spec = RequestSpec(req.request_id, prompt, max_tokens, temperature)
        before = engine.counters()
        req.submit_s = on_ns_grid(clock() - t0)
        engine.add_request(spec)
        while req.finished_step is None:
            if watchdog is not None:
                watchdog.arm_step()
            ts = clock()
            res = engine_step()
            te = clock()
            if watchdog is not None:
                watchdog.disarm_step(te - ts)
            i = rec.append(ts - t0, te - t0, res)
            for d in res.deltas:
                if d.request_id == req.request_id:
                    file_delta(req, d, i)
            if self.should_stop is not None and self.should_stop():
                stop(engine, [req.request_id])
        return CellTrace(rec.freeze(), [req], None, 0.0, "", before, engine.counters(), t0)

    def prefill_sample(self, prompt: list[int], temperature: float = 1.0) -> CellTrace:
        """Cold prefill: cache reset, then one request with a single output token (sampled at the plan's temperature)."""
        self.cold_start()
        return self.run_to_completion(prompt, 1, temperature)

    def prime(self, prompts: CellPrompts, temperature: float = 1.0) -> None:
        """Empty the prefix cache, then put the row's shared context in it (shared mode)."""
        self.cold_start()
        if prompts.mode == "shared":
            self.run_to_completion(prompts.shared_prefix(), 1, temperature)

    def decode_cell(self, prompts: CellPrompts, s: DecodeSettings, primed: bool = False,
                    debug: DebugSettings | None = None) -> CellTrace:
        """Keep ``s.concurrency`` requests in flight and measure one window (see :class:`DecodeCell`).

        ``primed``: the row's shared context is in the prefix cache already (its cold
        prefill or an earlier cell of the row left it there); otherwise it is primed first.
        ``debug``: NVTX ranges, a breakpoint, and the engine's profiler over steps after the
        window (``inproc.run.profiling``).
        """
        return self.cell(prompts, s, primed, debug).run()

    def cell(self, prompts: CellPrompts, s: DecodeSettings, primed: bool = False,
             debug: DebugSettings | None = None) -> DecodeCell:
        """:meth:`decode_cell`'s cell, ready to run, the engine drained (and primed, unless ``primed``): for a
        caller that reads the cell itself after :meth:`DecodeCell.run` (its ``held_work_s``)."""
        self.drain()
        if not primed:
            self.prime(prompts, s.temperature)
        return DecodeCell(self.engine, prompts, s, self.ids, self.clock, debug, self.should_stop, self.ticker,
                          self.on_window_edge, self.record_gc)
