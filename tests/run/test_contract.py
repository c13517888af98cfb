"""The engine contract, on every engine installed here: the driver's records agree with the engine.

Each test runs once per engine (``engine`` fixture, tests/conftest.py): vLLM in
``.venv-vllm``, SGLang in ``.venv-sglang``; the other is skipped with the reason. Both
default profiles have the same tiny Llama, pool, max 8 running and a 2,048-token step.
"""
from __future__ import annotations

import numpy as np
import pytest

from inproc import types as st
from inproc.measure import anatomy as an
from inproc.measure import metrics as m
from inproc.measure.figures import decode_figures
from inproc.measure.judge import judge_decode
from inproc.plan.prompts import CellPrompts
from inproc.run.driver import DecodeSettings
from inproc.types import RequestSpec
from tests.run.test_runner import make_runner


def test_tokens_counted_equal_tokens_the_engine_emitted(driver, prompts, engine):
    # Short outputs so requests finish and refill inside the window; distinct mode has no
    # priming request, so every token the engine emitted belongs to the cell.
    before = engine.counters()
    trace = driver.decode_cell(CellPrompts(prompts, 96, 3, "distinct", 16), DecodeSettings(3, 1.0, 6))
    after = engine.counters()
    # SGLang runs an aborted request once more; that token reaches no caller (it counts it apart).
    emitted = (after.generation_tokens - before.generation_tokens
               - ((after.dropped_tokens or 0) - (before.dropped_tokens or 0)))
    finished = [r for r in trace.requests if r.finish_reason == "length"]
    assert len(finished) >= 3, "requests of 6 tokens must finish and be refilled within a 1 s window"
    assert all(r.num_tokens == 6 for r in finished)
    assert all(sum(r.token_counts) == r.num_tokens for r in trace.requests)
    assert sum(r.num_tokens for r in trace.requests) == emitted
    w = m.window(trace)
    in_window = trace.counters_end.generation_tokens - trace.counters_start.generation_tokens
    assert m.output_tokens(trace, w) == in_window
    # The adapter stamps its own conversion of the outputs, inside the step and apart from its probe.
    s = trace.steps
    assert (s.convert_s > 0).all() and (s.probe_s + s.convert_s < s.t_end_s - s.t_start_s).all()
    assert 0 < an.adapter_fraction(s, w) < 1


def test_window_excludes_warm_up(driver, prompts):
    # 512 output tokens each: SGLang admits a request only when its prompt plus a share of
    # max_tokens fits its pool (4 × (512 + 4,096 × 0.7) would not), vLLM admits all four.
    trace = driver.decode_cell(CellPrompts(prompts, 512, 4, "distinct", 32), DecodeSettings(4, 1.0, 512))
    w = m.window(trace)
    initial = [r for r in trace.requests if r.initial]
    last_first_token = max(r.token_steps[0] for r in initial)
    assert trace.window_open_reason == "all 4 requests decoding"
    assert w.open_s == pytest.approx(trace.steps.t_end_s[last_first_token])
    assert w.first_step == last_first_token + 1
    # The prefill steps (whole prompts scheduled) are all before the window.
    prefill_steps = np.flatnonzero(trace.steps.num_scheduled_tokens > 4)
    assert prefill_steps.size and prefill_steps.max() < w.first_step
    assert 0 < m.measured_for_s(w) <= 1.0
    assert m.output_tokens(trace, w) == 4 * (w.last_step - w.first_step + 1)


def test_c_requests_stay_in_flight(driver, prompts):
    trace = driver.decode_cell(CellPrompts(prompts, 128, 4, "shared", 16), DecodeSettings(4, 1.0, 4))
    w = m.window(trace)
    rows = np.arange(w.first_step, w.last_step + 1)
    assert sum(r.finish_reason == "length" for r in trace.requests) >= 4  # refills happened
    # The driver keeps C requests submitted and unfinished at every step of the window ...
    in_flight = [sum(1 for r in trace.requests if r.submit_s < trace.steps.t_start_s[i]
                     and (r.finished_step is None or r.finished_step >= i)) for i in rows]
    assert set(in_flight) == {4}, in_flight
    # ... and the engine runs all C in every batch it forms. SGLang's overlap loop has an
    # idle iteration (no batch) when every request's last token is still in flight.
    formed = trace.steps.num_scheduled_tokens[rows] > 0
    running = trace.steps.num_running[rows]
    assert formed.sum() > 0.7 * rows.size and (running[formed] == 4).all(), sorted(set(running[formed].tolist()))


def test_cold_prefill_has_no_prefix_hits_and_warm_does(driver, prompts):
    prompt = prompts.tokens(1024, "test-prefill")
    cold = driver.prefill_sample(prompt)
    assert cold.requests[0].num_cached_tokens == 0
    assert m.counter_delta(cold, "prefix_hits") == 0
    assert m.prefill_steps(cold) == 1 and m.prompt_tok_s(cold) > 0
    # Control: without the reset the same prompt is served from the cache, so the check can fail.
    warm = driver.run_to_completion(prompt, 1)
    assert warm.requests[0].num_cached_tokens > 0
    assert m.counter_delta(warm, "prefix_hits") > 0


def test_chunked_prefill_takes_several_steps(driver, prompts):
    # Both profiles schedule at most 2,048 tokens a step: a 5,000-token prompt takes 3 steps.
    cold = driver.prefill_sample(prompts.tokens(5000, "chunked"))
    assert m.prefill_steps(cold) == 3
    assert cold.steps.num_scheduled_tokens[:3].tolist() == [2048, 2048, 904]


def test_queued_when_concurrency_exceeds_max_num_seqs(driver, prompts, engine):
    cap = engine.info.capacity
    C = cap.max_num_seqs + 2
    trace = driver.decode_cell(CellPrompts(prompts, 64, C, "shared", 16), DecodeSettings(C, 0.5, 24))
    figs = decode_figures(trace)
    assert figs.max_waiting > 0
    assert trace.steps.num_running.max() <= cap.max_num_seqs
    v = judge_decode(figs, C, cap)
    assert v.status == st.QUEUED
    assert f"max_num_seqs={cap.max_num_seqs} < C={C}" in v.reason


def test_abort_leaves_the_engine_idle(driver, prompts, engine):
    for i in range(3):
        engine.add_request(RequestSpec(f"abort-{i}", prompts.tokens(64, "abort", i), 200))
    for _ in range(3):
        engine.step()
    assert engine.has_unfinished()
    engine.abort([f"abort-{i}" for i in range(3)])
    driver.drain(max_steps=20)
    assert not engine.has_unfinished()
    assert engine.reset_prefix_cache()  # refused while anything is in flight


def test_runner_matrix_on_the_real_engine(engine, driver, tmp_path):
    """A plan with a Valid, a Requests queued and an Over capacity cell, measured by the runner."""
    cap = engine.info.capacity
    runner = make_runner(engine, tmp_path / "r.json", concurrency=(2, cap.max_num_seqs + 2), contexts=(128, 4096),
                         max_output=256, prompt_mode="shared", window_s=0.5)
    rec = runner.run()
    cells = {e.key: e for e in rec.decode}
    assert cells["128x2"].status == st.VALID and cells["128x2"].figures.output_tokens > 0
    queued = cells[f"128x{cap.max_num_seqs + 2}"]
    assert queued.error is None, queued.error
    assert queued.status == st.QUEUED and f"max_num_seqs={cap.max_num_seqs}" in queued.reason
    over = cells[f"4096x{cap.max_num_seqs + 2}"]
    assert over.status == st.OVER_CAPACITY and over.trace is None and not over.capacity_check.fits
    for e in rec.decode:
        if e.trace is not None:
            w = m.window(e.trace)
            assert e.figures.total_tok_s == pytest.approx(e.figures.output_tokens / m.measured_for_s(w))
    assert rec.finished and not engine.has_unfinished()


def test_each_row_is_primed_once_and_serves_only_itself(engine, driver, tmp_path, monkeypatch):
    """Shared mode: a row's cold prefill primes its context for every cell of the row."""
    runner = make_runner(engine, tmp_path / "r.json", concurrency=(1, 2), contexts=(256, 1024),
                         prefill_contexts=(256,), prompt_mode="shared", window_s=0.3)
    primings = []
    real_prime = runner.driver.prime
    monkeypatch.setattr(runner.driver, "prime", lambda *a, **k: (primings.append(a[0].context), real_prime(*a, **k)))
    rec = runner.run()
    # 256 has a cold prefill (its last sample primes the row); 1K has none: primed once, by the driver.
    assert primings == [1024]
    (pre,) = rec.prefill
    assert pre.figures.cached_tokens == 0 and pre.figures.prefix_hits == 0 and pre.status == st.VALID
    block = engine.info.capacity.block_size
    for e in rec.decode:
        prefix = e.context - min(32, e.context // 2)
        for r in e.trace.requests:
            if r.num_cached_tokens is None:
                continue
            # Served from its own row's context (whole blocks of it), never more: no other row's.
            assert (prefix // block) * block - block <= r.num_cached_tokens <= prefix, (e.key, r.num_cached_tokens)
    assert [e.key for e in rec.decode] == ["256x1", "256x2", "1024x1", "1024x2"]
    assert rec.measure_s > sum(e.figures.window_s for e in rec.decode)
