"""Interleaved blocks of steps inside one engine: C requests kept in flight on the CPU default's
engine (anatomy on, room for C = 128), one block of counted steps under one setting at a time, so
an A/B's sides alternate within one process (``anatomy``, ``kernelpass``, ``telemetry``)."""
from __future__ import annotations

import dataclasses
import os
import contextlib
import time

from scripts.benchmarks.harness import PROFILE

# Room for C = 128 requests of 64 + 128 prompt and up to 1,024 output tokens (about 155K tokens, 1 KiB each).
SETS = ("max-num-seqs=128", "num-gpu-blocks-override=6144", "max-num-batched-tokens=8192")
PROMPT_TOKENS, MIN_OUTPUT, MAX_OUTPUT = 64, 512, 1024


@dataclasses.dataclass
class Block:
    """One block's counted steps: its setting, tokens, span, Σ step time and Σ watchdog-call time (s)."""

    level: str
    armed: bool
    gc: bool = False
    tokens: int = 0
    span_s: float = 0.0
    step_s: float = 0.0
    steps: int = 0
    dog_s: float = 0.0
    step_times_s: list[float] = dataclasses.field(default_factory=list)  # each counted step's own time


class InFlight:
    """C requests kept in flight on the engine; :meth:`step` makes one step and refills what finished."""

    def __init__(self, engine, c: int, tag: int) -> None:
        from inproc.measure.steps import StepRecorder
        from inproc.plan.prompts import CellPrompts, PromptFactory
        from inproc.run.gcwatch import GcWatch

        info = engine.info
        self.engine, self.c = engine, c
        self.prompts = CellPrompts(PromptFactory(info.vocab_size, tag, info.special_token_ids), PROMPT_TOKENS + c, c,
                                   "distinct", 16)
        self.live: set[str] = set()
        self.serial = 0
        self.rec, self.gc = StepRecorder(), GcWatch()
        for _ in range(c):
            self._submit()

    def _submit(self) -> None:
        from inproc.types import RequestSpec

        i, self.serial = self.serial, self.serial + 1
        rid = f"ab-{self.c}-{i}"
        # Staggered lengths: refills spread over the run instead of C at once.
        max_tokens = MIN_OUTPUT + (i * 131) % (MAX_OUTPUT - MIN_OUTPUT)
        self.engine.add_request(RequestSpec(rid, self.prompts.request(i), max_tokens))
        self.live.add(rid)

    def settle(self) -> None:
        """Step until every request has been scheduled (prefill behind them)."""
        while len(self.live) and self.engine.step().num_waiting:
            pass
        for _ in range(4):
            self.step()

    def step(self, dog=None, clock=time.perf_counter) -> tuple[int, float, float, float]:
        """One step: (tokens returned, its end, its time, the watchdog calls' time)."""
        a = clock()
        if dog is not None:
            dog.arm_step()
        between = self.gc.take()
        ts = clock()
        res = self.engine.step()
        te = clock()
        inside = self.gc.take()
        if dog is not None:
            dog.disarm_step(te - ts)
        d = clock()
        self.rec.append(ts, te, res, inside + between)
        tokens = 0
        for delta in res.deltas:
            if delta.request_id in self.live:
                tokens += len(delta.new_token_ids)
                if delta.finished:
                    self.live.discard(delta.request_id)
        while len(self.live) < self.c:
            self._submit()
        return tokens, te, te - ts, (ts - a) + (d - te)

    def close(self) -> None:
        self.engine.abort(list(self.live))
        while self.engine.has_unfinished():
            self.engine.step()


def run_block(flight: InFlight, switch, dog, level: str, armed: bool, gc: bool, steps: int, settle: int) -> Block:
    """One block under one setting (switched before its first step)."""
    switch.set(level)
    if gc:
        flight.gc.start()
    else:
        flight.gc.stop()
    block = Block(level, armed, gc)
    end = 0.0
    # Armed as the decode loop arms it: nothing per step; the watchdog's thread reads the block's step count.
    with dog.watching(lambda: block.steps) if armed else contextlib.nullcontext() as loop:
        for _ in range(settle):
            _, end, _, _ = flight.step()
        start = end
        for _ in range(steps):
            tokens, end, step_s, dog_s = flight.step()
            block.tokens += tokens
            block.step_s += step_s
            block.step_times_s.append(step_s)
            block.dog_s += dog_s
            block.steps += 1
        if loop is not None:
            loop.longest_step_s = max(block.step_times_s, default=0.0)
    block.span_s = end - start
    return block


def build_engine():
    """The CPU default's engine with the anatomy on and room for C = 128; the watchdog as a run arms it."""
    from inproc import engines
    from inproc.profiles.spec import load_profile
    from inproc.run.watchdog import StepTimeout, StepWatchdog

    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    profile = load_profile(PROFILE).with_overrides(SETS)
    engine = engines.build_engine(dataclasses.replace(profile.launch, anatomy=True))
    dog = StepWatchdog(StepTimeout(), lambda hang: print(f"bench: {hang.reason()}", flush=True))
    return engine, engine._accounting, dog
