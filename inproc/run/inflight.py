"""The state of one decode cell while the driver steps it: its requests and its window."""
from __future__ import annotations

from inproc.engines.base import Engine
from inproc.measure.trace import RequestTrace
from inproc.plan.prompts import CellPrompts
from inproc.types import RequestSpec


class InFlight:
    """The requests of one decode cell: C submitted at the start, each refilled when it finishes."""

    def __init__(self, driver, prompts: CellPrompts, prefix: list[int] | None, s, t0: float) -> None:
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
            if req is not None and apply_delta(req, delta, step_index):
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


class Window:
    """When the decode window opened and why, and the engine counters at its two ends."""

    def __init__(self, s) -> None:
        self.s = s  # the cell's DecodeSettings
        self.steps = 0  # steps inside the window so far
        self.open_s: float | None = None
        self.reason = ""
        self.counters_start: dict[str, int] = {}
        self.counters_end: dict[str, int] = {}

    def advance(self, now_s: float, initial: list[RequestTrace], finished: int, engine: Engine) -> bool:
        """Account for a step that ended at ``now_s``; False once the window has closed.

        A time window closes at the first step that ends past it (that step is outside); a
        step window closes with its last step (inside).
        """
        if self.open_s is None:
            self.reason = window_opens(initial, finished, now_s, self.s.warmup_limit_s, self.s.concurrency)
            if self.reason:
                self.open_s = now_s
                self.counters_start = self.counters_end = engine.counters()
            return True
        if self.s.window_steps is None and now_s > self.open_s + self.s.window_s:
            return False  # this step ends past the window: it and its counts stay outside
        self.steps += 1
        self.counters_end = engine.counters()  # counters as of the last step inside the window
        return self.s.window_steps is None or self.steps < self.s.window_steps


def apply_delta(req: RequestTrace, d, step_index: int) -> bool:
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


def window_opens(initial: list[RequestTrace], finished: int, now_s: float, limit_s: float, c: int) -> str:
    """Why the decode window opens at this step, or "" while warm-up goes on."""
    started = sum(1 for r in initial if r.token_steps)
    if started == c:
        return f"all {c} requests decoding"
    if finished:
        return f"a request finished while {started} of {c} had started decoding"
    if now_s > limit_s:
        return f"warm-up limit {limit_s:g} s passed with {started} of {c} decoding"
    return ""


