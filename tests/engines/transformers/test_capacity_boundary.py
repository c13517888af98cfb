"""Over capacity on transformers' paged cache, held to the real engine (the session engine: 192 blocks of 32).

C requests of L + M = 1,536 tokens (48 blocks each) fill the pool exactly: the plan lets C = 4 run and
the engine holds all four at once, its block tables at 4 × 48 blocks, nothing offloaded. One block
more per request (49 blocks each) is Over capacity in the plan, and on the engine the four are
never all held at once: it offloads one back to its waiting queue, or runs fewer together. Either
way every token asked for comes back, counted alike by inproc and by the engine.
"""
from __future__ import annotations

from inproc.plan.capacity import check_cell
from inproc.plan.prompts import PromptFactory
from inproc.types import RequestSpec
from tests.conftest import needs_transformers

pytestmark = needs_transformers

M = 16


def _run(engine, prompt_len: int, n: int, tag: str):
    """Submit ``n`` distinct prompts of ``prompt_len`` + M tokens; step to the end; the step results and counts."""
    info = engine.info
    factory = PromptFactory(info.vocab_size, 11, info.special_token_ids)
    before = engine.counters().generation_tokens
    for i in range(n):
        engine.add_request(RequestSpec(f"{tag}-{i}", factory.tokens(prompt_len, tag, i), M, temperature=0.0))
    results = []
    while engine.has_unfinished():
        results.append(engine.step())
        assert len(results) < 2000
    streamed = sum(len(d.new_token_ids) for r in results for d in r.deltas)
    return results, streamed, engine.counters().generation_tokens - before


def test_the_pool_holds_exactly_the_plans_boundary(transformers_engine):
    engine = transformers_engine
    cap = engine.info.capacity
    assert (cap.num_blocks, cap.block_size, cap.kv_tokens) == (192, 32, 6144)
    assert [g.kind for g in cap.groups] == ["full_attention"]
    per_request = 1536 // cap.block_size
    fits = [c for c in range(1, 9) if check_cell(cap, 1536 - M, c, M, "distinct", 0).fits]
    assert fits == [1, 2, 3, 4] and 4 * per_request == cap.num_blocks

    results, streamed, counted = _run(engine, 1536 - M, 4, "fits")
    assert streamed == counted == 4 * M
    assert sum(r.num_preempted for r in results) == 0
    decoding = [r for r in results if r.batch is not None and r.batch.num_decode_reqs]
    assert max(r.num_running for r in decoding) == 4 and all(r.num_waiting == 0 for r in decoding[-M // 2:])
    # The engine's own block tables at the last step: each request holds its 1,535 computed tokens, 48 blocks.
    assert max(r.kv_used_blocks for r in results) == 4 * per_request == cap.num_blocks

    over = check_cell(cap, 1536 - M + cap.block_size, 4, M, "distinct", 0)
    assert not over.fits and over.blocks_needed == 4 * (per_request + 1) > cap.num_blocks
    results, streamed, counted = _run(engine, 1536 - M + cap.block_size, 4, "over")
    assert streamed == counted == 4 * M
    offloaded = sum(r.num_preempted for r in results)
    held = max(r.num_running for r in results if r.batch is not None and r.batch.num_decode_reqs)
    assert offloaded > 0 or held < 4, (offloaded, held)
    assert max(r.kv_used_blocks for r in results) <= cap.num_blocks
