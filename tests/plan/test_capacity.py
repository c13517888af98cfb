"""Over capacity only where a cell provably cannot run: steady footprints against the pool, one request's peak."""
from __future__ import annotations

import dataclasses

import pytest

from inproc import types as st
from inproc.plan.capacity import CapacityCheck, check_cell, group_blocks, steady_group_blocks
from inproc.plan.matrix import make_plan
from inproc.profiles.spec import MatrixSettings
from inproc.types import Capacity, KVCacheGroup


def pool(usable: int, *groups: KVCacheGroup, prefix: bool = False) -> Capacity:
    return Capacity(usable + 1, 32, (usable + 1) * 32, groups, 64, 2048, 4096, None, {"prefix_caching": prefix}, usable)


FULL = KVCacheGroup("full_attention", 32, 2)
# The engine's cap: window 512 - 1 + 2,048 tokens in flight → ceil(2559/32) + 1 = 81 blocks.
SLIDING = KVCacheGroup("sliding_window", 32, 2, 512, max_blocks=81)
CHUNKED = KVCacheGroup("chunked_local_attention", 32, 2, 256, max_blocks=72)
MAMBA = KVCacheGroup("mamba", 1, 2, None, max_blocks=3)


def largest_fitting(capacity: Capacity, context: int, output: int) -> int:
    fits = [c for c in range(1, 200) if check_cell(capacity, context, c, output, "distinct", 0).fits]
    assert fits == list(range(1, len(fits) + 1))  # monotone: fewer requests never stop fitting
    return max(fits, default=0)


def test_footprints_per_group_kind():
    seq = 2048 + 256
    assert steady_group_blocks(FULL, seq) == group_blocks(FULL, seq) == 72  # every token kept: steady = peak
    assert (steady_group_blocks(SLIDING, seq), group_blocks(SLIDING, seq)) == (16, 72)  # 512 / 32; peak min(72, 81)
    assert (steady_group_blocks(CHUNKED, seq), group_blocks(CHUNKED, seq)) == (1, 72)
    assert steady_group_blocks(MAMBA, seq) == group_blocks(MAMBA, seq) == 3
    short = 100  # shorter than the window: every token kept, as in a full group
    assert steady_group_blocks(SLIDING, short) == group_blocks(SLIDING, short) == 4


def test_full_attention_keeps_the_exact_boundary():
    cap = pool(160, FULL)
    # 1,500 + 64 tokens: 49 blocks a request, steady and peak; 3 × 49 = 147 ≤ 160 < 196.
    assert largest_fitting(cap, 1500, 64) == 3
    chk = check_cell(cap, 1500, 4, 64, "distinct", 0)
    assert (chk.fits, chk.blocks_needed, chk.peak_blocks_needed) == (False, 196, 196)
    assert "196 KV blocks" in chk.reason() and "steady decode footprint" in chk.reason()


def test_sliding_window_counts_the_window_not_the_prefill_peak():
    cap = pool(200, SLIDING)
    # Steady 16 blocks a request: 12 × 16 = 192 ≤ 200 < 208; the old rule (72 at peak) said 2.
    assert largest_fitting(cap, 2048, 256) == 12
    chk = check_cell(cap, 2048, 12, 256, "distinct", 0)
    assert (chk.blocks_needed, chk.peak_blocks_needed, chk.request_peak_blocks) == (192, 12 * 72, 72)


def test_one_request_that_cannot_fit_at_its_peak_is_over_capacity():
    cap = pool(60, SLIDING)  # 16 steady fits, 72 at the peak does not
    chk = check_cell(cap, 2048, 1, 256, "distinct", 0)
    assert not chk.fits and chk.blocks_needed == 16
    assert chk.reason().startswith("one request needs 72 KV blocks at its peak")


def test_hybrid_is_bounded_by_the_groups_that_keep_every_token():
    cap = pool(190, SLIDING, FULL)
    # 1,564 tokens: full 49 + sliding min(49, 16) = 65 steady a request: 2 × 65 = 130 ≤ 190 < 195.
    assert largest_fitting(cap, 1500, 64) == 2
    assert check_cell(cap, 1500, 2, 64, "distinct", 0).peak_blocks_needed == 2 * (49 + 49)


def test_shared_context_only_in_groups_that_keep_every_token():
    cap = pool(400, SLIDING, FULL, prefix=True)
    # Context 2,048, 2,016 shared: 63 full blocks once; per request full 72 - 63 = 9, sliding 16.
    chk = check_cell(cap, 2048, 4, 256, "shared", 2016)
    assert chk.blocks_needed == 63 + 4 * (9 + 16)


def test_window_pool_of_its_own_is_checked_against_that_pool():
    # SGLang's hybrid SWA: full layers in the token pool, sliding layers in a pool of 1,200 pages.
    own = KVCacheGroup("sliding_window", 1, 2, 128, max_blocks=128 + 2048, pool_blocks=1200)
    cap = Capacity(100_000, 1, 100_000, (KVCacheGroup("token_pool", 1, 2), own), 64, 2048, 8192, None, {}, None)
    ok, over = (check_cell(cap, 1024, c, 64, "distinct", 0) for c in (9, 10))
    assert ok.fits and (ok.window_pool.steady_blocks, ok.window_pool.request_peak_blocks) == (9 * 128, 1088)
    assert not over.fits and over.window_pool.steady_blocks == 1280 and "sliding-window pool" in over.reason()
    assert ok.blocks_needed == 9 * 1088  # the token pool keeps every token
    small = Capacity(100_000, 1, 100_000, cap.groups[:1] + (dataclasses.replace(own, pool_blocks=1000),),
                     64, 2048, 8192, None, {}, None)
    assert not check_cell(small, 1024, 1, 64, "distinct", 0).fits  # one request's prefill peak: 1,088 > 1,000


def test_deepseek_v4_groups_steady_against_peak():
    # The seven groups vLLM 0.32 builds for DeepSeek-V4 (block sizes, windows and caps as it reads
    # them: windows + 2,048 tokens in flight): four sliding-window MLA groups, the compressed MLA
    # + indexer group, two fp32 compressor-state groups. L = 1,024, M = 128 against 2,999 blocks.
    swa = KVCacheGroup("sliding_window", 64, 2, 128, max_blocks=33)
    groups = (swa, swa, swa, swa, KVCacheGroup("mla", 256, 6),
              KVCacheGroup("sliding_window", 4, 4, 8, max_blocks=513), KVCacheGroup("sliding_window", 8, 2, 128, max_blocks=257))
    cap = pool(2999, *groups)
    chk = check_cell(cap, 1024, 1, 128, "distinct", 0)
    # steady: 4 × 2 + 5 + 2 + 16 = 31; peak: 4 × 18 + 5 + 288 + 144 = 509.
    assert (chk.blocks_needed, chk.request_peak_blocks) == (31, 509)
    assert largest_fitting(cap, 1024, 128) == 2999 // 31


def test_plan_runs_every_cell_that_can_run():
    s = MatrixSettings(contexts=(2048,), concurrency=(1, 2, 8, 16), max_output=256)
    cells = {p.concurrency: p for p in make_plan(s, pool(200, SLIDING), seed=1).cells}
    assert [c for c, p in cells.items() if p.pre_status is None] == [1, 2, 8]
    assert cells[16].pre_status == st.OVER_CAPACITY and "256 KV blocks" in cells[16].pre_reason


def test_check_round_trips_and_old_records_load():
    chk = check_cell(pool(200, SLIDING), 2048, 12, 256, "distinct", 0)
    assert CapacityCheck.from_dict(dataclasses.asdict(chk)) == chk
    old = {k: v for k, v in dataclasses.asdict(chk).items() if k not in ("peak_blocks_needed", "request_peak_blocks", "window_pool")}
    loaded = CapacityCheck.from_dict(old)
    assert loaded.peak_blocks_needed is None and loaded.window_pool is None and loaded.blocks_needed == 192


@pytest.mark.parametrize("groups", [(FULL,), (KVCacheGroup("mla", 32, 2),)])
def test_steady_equals_peak_where_every_token_is_kept(groups):
    chk = check_cell(pool(500, *groups), 1000, 3, 100, "distinct", 0)
    assert chk.blocks_needed == chk.peak_blocks_needed == 3 * 35
