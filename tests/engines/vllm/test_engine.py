"""The real vLLM engine: what only vLLM has (capacity arithmetic, the forward on this thread).

The contract every engine meets (counting, windows, caches, queues, aborts) is tests/run/test_contract.py.
"""
from __future__ import annotations

import threading

import pytest

from inproc.plan.capacity import blocks_per_sequence, check_cell, max_concurrency_at_max_len
from tests.conftest import needs_vllm

pytestmark = needs_vllm


def test_capacity_arithmetic_matches_the_engine(vllm_engine):
    cap = vllm_engine.info.capacity
    resolved = vllm_engine._engine.vllm_config  # what vLLM chose for this CPU, not a constant
    assert cap.block_size == resolved.cache_config.block_size and cap.kv_tokens == cap.num_blocks * cap.block_size
    assert cap.num_blocks == 193 and cap.usable_blocks == 192 and cap.max_model_len == 6144
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
