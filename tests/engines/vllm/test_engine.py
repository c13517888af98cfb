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


def _layer_methods(model):
    """Each torch module's quantization method class and the dtype of its weight, read off the built model."""
    return [(type(m.quant_method).__name__, str(m.weight.dtype)) for m in model.modules()
            if hasattr(m, "quant_method") and hasattr(m, "weight") and type(m).__name__.endswith("Linear")]


def test_the_recorded_compute_dtype_is_what_the_built_model_s_layers_use(vllm_engine):
    from inproc.measure.peaks import short_dtype

    settings = vllm_engine.info.settings
    layers = vllm_engine._engine.apply_model(_layer_methods)[0]  # read from the engine, not the profile
    assert layers, "the tiny model has linear layers"
    methods, weight_dtypes = {m for m, _ in layers}, {d for _, d in layers}
    # On this CPU the tiny model runs unquantized: every linear layer multiplies in the model's own dtype.
    assert methods == {"UnquantizedLinearMethod"} and len(weight_dtypes) == 1
    assert settings.compute_dtype == short_dtype(weight_dtypes.pop()) == short_dtype(vllm_engine._engine.vllm_config.model_config.dtype)
    assert "UnquantizedLinearMethod" in settings.compute_dtype_source and "100%" in settings.compute_dtype_source
