"""The real vLLM engine, stepped by the driver: counting, windows, caches, queues, capacity."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from inproc import metrics as m
from inproc import status as st
from inproc.capacity import blocks_per_sequence, check_cell, max_concurrency_at_max_len
from inproc.driver import DecodeSettings
from inproc.figures import decode_figures
from inproc.judge import judge_decode
from inproc.prompts import CellPrompts
from tests.conftest import needs_vllm

pytestmark = needs_vllm


def test_tokens_counted_equal_tokens_the_engine_emitted(driver, prompts, vllm_engine):
    # Short outputs so requests finish and refill inside the window; distinct mode has no
    # priming request, so every token the engine core emitted belongs to the cell.
    before = vllm_engine.counters()["generation_tokens"]
    trace = driver.decode_cell(CellPrompts(prompts, 96, 3, "distinct", 16), DecodeSettings(3, 1.0, 6))
    emitted = vllm_engine.counters()["generation_tokens"] - before
    finished = [r for r in trace.requests if r.finish_reason == "length"]
    assert len(finished) >= 3, "requests of 6 tokens must finish and be refilled within a 1 s window"
    assert all(r.num_tokens == 6 for r in finished)
    assert all(sum(r.token_counts) == r.num_tokens for r in trace.requests)
    assert sum(r.num_tokens for r in trace.requests) == emitted
    w = m.window(trace)
    in_window = trace.counters_end["generation_tokens"] - trace.counters_start["generation_tokens"]
    assert m.output_tokens(trace, w) == in_window


def test_window_excludes_warm_up(driver, prompts):
    trace = driver.decode_cell(CellPrompts(prompts, 512, 4, "distinct", 32), DecodeSettings(4, 1.0, 4096))
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
    running = trace.steps.num_running[w.first_step : w.last_step + 1]
    assert sum(r.finish_reason == "length" for r in trace.requests) >= 4  # refills happened
    assert (running == 4).all(), f"running counts in window: {sorted(set(running.tolist()))}"
    assert m.avg_active(trace, w) == pytest.approx(4.0)


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
    # max-num-batched-tokens is 2048: a 5000-token prompt needs 3 steps.
    cold = driver.prefill_sample(prompts.tokens(5000, "chunked"))
    assert m.prefill_steps(cold) == 3
    assert cold.steps.num_scheduled_tokens[:3].tolist() == [2048, 2048, 904]


def test_queued_when_concurrency_exceeds_max_num_seqs(driver, prompts, vllm_engine):
    cap = vllm_engine.info.capacity
    C = cap.max_num_seqs + 2
    trace = driver.decode_cell(CellPrompts(prompts, 64, C, "shared", 16), DecodeSettings(C, 0.5, 24))
    figs = decode_figures(trace)
    assert figs.max_waiting > 0
    assert trace.steps.num_running.max() <= cap.max_num_seqs
    v = judge_decode(figs, C, cap)
    assert v.status == st.QUEUED
    assert f"max_num_seqs={cap.max_num_seqs} < C={C}" in v.reason


def test_capacity_arithmetic_matches_the_engine(vllm_engine):
    cap = vllm_engine.info.capacity
    assert cap.num_blocks == 193 and cap.usable_blocks == 192 and cap.block_size == 32 and cap.max_model_len == 6144
    assert max_concurrency_at_max_len(cap) == pytest.approx(cap.engine_max_concurrency)
    per_seq = blocks_per_sequence(cap, cap.max_model_len)
    # Exactly the engine's concurrency fits; one more request does not.
    n = int(cap.engine_max_concurrency)
    assert check_cell(cap, cap.max_model_len - 1, n, 1, "distinct", 0).fits
    assert not check_cell(cap, cap.max_model_len - 1, n + 1, 1, "distinct", 0).fits
    assert per_seq == cap.max_model_len // cap.block_size


def test_step_runs_in_the_calling_thread(vllm_engine, driver, prompts):
    # EngineCore is in this process: the model forward runs on this very thread.
    seen = []
    model = vllm_engine._core.model_executor.driver_worker.worker.model_runner.model
    handle = model.register_forward_hook(lambda *a: seen.append(threading.get_ident()))
    try:
        driver.run_to_completion(prompts.tokens(64, "thread"), 2)
    finally:
        handle.remove()
    assert seen and set(seen) == {threading.get_ident()}
