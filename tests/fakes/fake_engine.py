"""A scripted fake engine and a fake clock, for the decode loop's own logic (tests/run/test_decode_cell.py).

It plays out what the loop must handle (prefill that takes steps, outputs returned one
step late as under vLLM's async scheduling or SGLang's overlap loop, aborts, preemptions,
requests that finish early, a cap on running requests) in a few lines a test can read,
on a clock that advances only when told to. It stands in for no engine's allocation,
scheduling or counting in any figure: every real-engine test stays, and this fake
only tests the driver's window, refill and pairing logic in milliseconds.

Script (``FakeScript``): each step the fake admits waiting requests up to
``max_running``, gives each running request one step of prefill (its first token comes
with its last prefill step, as a real engine samples it there) or one decode token, and
finishes a request at ``max_tokens`` ("length") or at ``finish_after[serial]`` tokens
("stop"; serial: 1 for the first request submitted). ``preempt_at[step]``: that many of
the newest running requests go back to the front of the queue and redo their prefill.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from inproc.types import (BatchShape, Capacity, EngineCounters, EngineInfo, ForwardStats, KVCacheGroup, RequestDelta,
                          RequestSpec, StepResult)


class FakeClock:
    """A clock that moves only when told to (``advance``); call it for the time."""

    def __init__(self, start_s: float = 100.0) -> None:
        self.now_s = start_s

    def __call__(self) -> float:
        return self.now_s

    def advance(self, dt_s: float) -> None:
        self.now_s += dt_s


@dataclass
class FakeScript:
    """What the fake engine does; see the module docstring."""

    max_running: int = 64
    prefill_steps: int = 1  # steps of prefill; the first token comes with the last one
    lag: int = 0  # 1: each step returns the outputs of the batch the previous step formed
    step_s: float = 0.010  # fake seconds each step takes
    add_s: float = 0.0  # fake seconds add_request takes (an engine that takes the prompt in there)
    finish_after: dict[int, int] = field(default_factory=dict)  # request serial -> tokens, then "stop"
    preempt_at: dict[int, int] = field(default_factory=dict)  # step -> requests preempted in it


@dataclass
class _Req:
    rid: str
    serial: int
    max_tokens: int
    prefill_left: int
    tokens: int = 0


class FakeEngine:
    """The ``Engine`` interface over a :class:`FakeScript`, stepped on a :class:`FakeClock`."""

    def __init__(self, script: FakeScript | None = None, clock: FakeClock | None = None) -> None:
        self.script = script or FakeScript()
        self.clock = clock or FakeClock()
        cap = Capacity(num_blocks=1024, block_size=16, kv_tokens=16384, groups=(KVCacheGroup("full_attention", 16, 2),),
                       max_num_seqs=self.script.max_running, max_num_batched_tokens=4096, max_model_len=8192)
        self.info = EngineInfo("fake", "0", "fake-model", True, cap, 1000, ())
        self.waiting: deque[_Req] = deque()
        self.running: list[_Req] = []
        self.in_flight: deque[tuple[int, tuple[RequestDelta, ...], ForwardStats]] = deque()  # (formed at step, ...)
        self.aborting: set[str] = set()  # aborted, not yet dropped (at the next step)
        self.gone: set[str] = set()  # aborted and dropped: their outputs in flight reach no one
        self.steps = 0
        self.submitted = 0
        self.received_s: dict[str, float] = {}  # request id -> clock when add_request began
        self.generation_tokens = self.preemptions = 0
        self.profiles: list[tuple[str, int]] = []  # ("start" | "stop", at step)
        self.anatomy_switches: list[tuple[bool, int]] = []  # (on, after step): set_anatomy calls

    def add_request(self, spec: RequestSpec) -> None:
        self.received_s[spec.request_id] = self.clock()
        self.clock.advance(self.script.add_s)
        self.submitted += 1
        self.waiting.append(_Req(spec.request_id, self.submitted, spec.max_tokens, self.script.prefill_steps))

    def abort(self, request_ids) -> None:
        self.aborting.update(request_ids)

    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running or self.in_flight or self.aborting)

    def step(self) -> StepResult:
        sc = self.script
        self.steps += 1
        self.clock.advance(sc.step_s)
        self.waiting = deque(r for r in self.waiting if r.rid not in self.aborting)
        self.running = [r for r in self.running if r.rid not in self.aborting]
        self.gone |= self.aborting
        self.aborting.clear()
        preempted = self._preempt(sc.preempt_at.get(self.steps, 0))
        while self.waiting and len(self.running) < sc.max_running:
            self.running.append(self.waiting.popleft())
        num_running = len(self.running)
        shape, deltas = self._run_batch()
        if num_running:
            fw = ForwardStats("NONE", shape.num_prefill_tokens + shape.num_decode_tokens)
            self.in_flight.append((self.steps, deltas, fw))
        out, lag, fw = (), -1, None
        if self.in_flight and self.steps - self.in_flight[0][0] >= sc.lag:
            formed, deltas, fw = self.in_flight.popleft()
            out, lag = tuple(d for d in deltas if d.request_id not in self.gone), self.steps - formed
        return StepResult(out, num_running, len(self.waiting), shape.num_prefill_tokens + shape.num_decode_tokens,
                          preempted, shape, lag, fw)

    def _preempt(self, n: int) -> int:
        n = min(n, len(self.running))
        for _ in range(n):
            r = self.running.pop()
            r.prefill_left = self.script.prefill_steps  # recomputes its prompt (and output so far)
            self.waiting.appendleft(r)
        self.preemptions += n
        return n

    def _run_batch(self) -> tuple[BatchShape, tuple[RequestDelta, ...]]:
        """One step of every running request; finished ones leave the running set."""
        p_reqs = d_reqs = 0
        deltas = []
        for r in self.running:
            if r.prefill_left > 0:
                p_reqs += 1
                r.prefill_left -= 1
                if r.prefill_left > 0 or r.tokens > 0:
                    deltas.append(RequestDelta(r.rid, (), False))  # a prefill chunk (or a recompute): no token
                    continue
            else:
                d_reqs += 1
            r.tokens += 1
            self.generation_tokens += 1
            stop_at = self.script.finish_after.get(r.serial)
            reason = "stop" if stop_at is not None and r.tokens >= stop_at else "length" if r.tokens >= r.max_tokens else None
            deltas.append(RequestDelta(r.rid, (r.tokens % 997,), reason is not None, reason, 0))
        finished = {d.request_id for d in deltas if d.finished}
        self.running = [r for r in self.running if r.rid not in finished]
        return BatchShape(p_reqs, p_reqs * 16, d_reqs, d_reqs), tuple(deltas)

    def set_anatomy(self, on: bool) -> bool:
        self.anatomy_switches.append((on, self.steps))
        return True

    def reset_prefix_cache(self) -> bool:
        return not self.has_unfinished()

    def counters(self) -> EngineCounters:
        return EngineCounters(self.generation_tokens, 0, 0, self.preemptions)

    def start_profile(self, kind: str, directory: str, with_stack: bool, name: str) -> None:
        self.profiles.append(("start", self.steps))

    def stop_profile(self) -> tuple[str, ...]:
        self.profiles.append(("stop", self.steps))
        return ("fake-trace.json",)

    def shutdown(self) -> None:
        pass

