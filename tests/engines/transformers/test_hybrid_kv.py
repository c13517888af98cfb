"""transformers' paged cache on a model with full and sliding-window layers (the tiny Gemma 2: one of each, window
256, dummy weights): blocks in use and capacity in one unit, the whole-model block ``num_blocks`` counts."""
from __future__ import annotations

import pytest

from inproc import engines
from inproc.plan.prompts import PromptFactory
from inproc.selftest.checks import step_all
from inproc.types import LaunchSpec, RequestSpec
from tests.conftest import ROOT, needs_transformers

pytestmark = [needs_transformers, pytest.mark.engine]
PAGE, BLOCKS, N, PROMPT, OUT = 32, 64, 8, 200, 8


def test_used_blocks_stay_within_capacity_in_whole_model_blocks(tmp_path):
    """8 requests of 200 + 8 tokens, all held at once: each holds ceil(207 / 32) = 7 pages in the full layer and
    7 in the sliding one (its 256-token window is not yet full), 7 whole-model blocks, so 56 of the pool's 64.
    Wrong code this fails: allocator blocks summed as they are (each one layer's page: it read 112 "blocks" of a
    pool of 64 when tried), or any count off the 56 the tokens held imply."""
    launch = LaunchSpec("transformers", str(ROOT / "launch_profiles" / "models" / "tiny-gemma2"),
                        {"load-format": "dummy", "device": "cpu", "dtype": "float32", "max-model-len": 1024,
                         "block-size": PAGE, "num-blocks": BLOCKS, "max-requests-per-batch": N,
                         "max-batch-tokens": 2048, "safety-margin": 0.0, "use-cuda-graph": False,
                         "use-async-batching": False, "torch-threads": 1}, temperature=0.0)
    engine = engines.build_engine(launch)
    try:
        cap = engine.info.capacity
        kinds = sorted(g.kind for g in cap.groups)
        assert kinds == ["full_attention", "sliding_window"] and cap.num_blocks >= BLOCKS
        prompts = PromptFactory(engine.info.vocab_size, 3, ())
        reqs = [RequestSpec(f"h-{i}", prompts.tokens(PROMPT, "h", i), OUT, 0.0) for i in range(N)]
        used = [r.kv_used_blocks for r in step_all(engine, reqs)]
    finally:
        engine.shutdown()
    assert max(used) <= cap.num_blocks
    assert max(used) == N * -(-(PROMPT + OUT - 1) // PAGE)
