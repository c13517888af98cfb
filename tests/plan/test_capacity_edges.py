"""The KV arithmetic's edges (``inproc.plan.capacity``), worked out by hand: a need equal to the pool fits and one
block more does not, in the shared pool and in a window pool of its own; each reason by its words; the footprint of
each group kind at the block boundaries; what vLLM logs as max concurrency; a record read back."""
from __future__ import annotations

import dataclasses

import pytest

from inproc.plan.capacity import (CapacityCheck, PoolNeed, blocks_per_sequence, check_cell, group_blocks,
                                  keeps_every_token, max_concurrency_at_max_len)
from inproc.types import Capacity, KVCacheGroup

FULL = KVCacheGroup("full_attention", block_size=16, num_layers=2)


def capacity(num_blocks: int, *groups: KVCacheGroup) -> Capacity:
    return Capacity(num_blocks=num_blocks, block_size=16, kv_tokens=num_blocks * 16, groups=groups or (FULL,),
                    max_num_seqs=64, max_num_batched_tokens=None, max_model_len=1600)


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_need_equal_to_the_pool_fits_and_one_block_more_does_not(concurrency):
    """48 + 16 tokens = 4 blocks of 16 per request: C requests fit 4·C blocks exactly, not 4·C − 1 (``<`` for
    ``<=`` on the steady need, or on one request's peak at C = 1, refuses the exact fit)."""
    need = 4 * concurrency
    exact = check_cell(capacity(need), 48, concurrency, 16, "distinct", 0)
    short = check_cell(capacity(need - 1), 48, concurrency, 16, "distinct", 0)
    assert exact.fits and not short.fits
    assert (exact.blocks_needed, exact.tokens_needed, exact.blocks_available, exact.tokens_available) == (
        need, need * 16, need, need * 16)
    if concurrency == 1:  # the one request's own peak is what does not fit
        assert short.reason() == "one request needs 4 KV blocks at its peak (prefill in flight), the engine has 3 (48 tokens)"
    else:
        assert short.reason() == "needs 16 KV blocks (256 tokens) even at the steady decode footprint, the engine has 15 (240 tokens)"


def test_a_shared_context_is_held_once_only_in_shared_mode():
    """32 shared tokens are 2 whole blocks: in shared mode C = 4 need 2 + 4 × (4 − 2) = 10 blocks steady and at
    peak (adding the shared blocks back gives 26); in distinct mode the same prefix length changes nothing (16)."""
    shared = check_cell(capacity(100), 48, 4, 16, "shared", 32)
    distinct = check_cell(capacity(100), 48, 4, 16, "distinct", 32)
    assert (shared.blocks_needed, shared.peak_blocks_needed, shared.request_peak_blocks) == (10, 10, 4)
    assert (distinct.blocks_needed, distinct.peak_blocks_needed) == (16, 16)


@pytest.mark.parametrize("concurrency, pool, fits", [(2, 8, True), (2, 7, False), (1, 4, True), (1, 3, False)])
def test_a_window_pool_of_its_own_fits_its_exact_need(concurrency, pool, fits):
    """A 64-token window in blocks of 16 keeps 4 blocks steady and 5 at its peak (a window straddles one more
    block), but 64 tokens fill only 4: C requests need 4·C of the window pool, one request 4."""
    window = KVCacheGroup("sliding_window", 16, 2, sliding_window=64, pool_blocks=pool)
    got = check_cell(capacity(100, FULL, window), 48, concurrency, 16, "distinct", 0)
    assert got.fits is fits
    assert got.window_pool == PoolNeed(4 * concurrency, 4 * concurrency, 4, pool)


def test_the_reason_names_the_pool_that_is_short_only_once_it_is_exceeded():
    """At the pool's size exactly (one request's peak, the window pool's steady or peak need) the shared pool's
    steady need is the reason; one block over, the short pool is (``>=`` for ``>`` names it at equality)."""
    base = CapacityCheck(fits=False, blocks_needed=120, blocks_available=100, tokens_needed=1920, tokens_available=1600,
                         reference_tokens_needed=2000, reference_fits=False, peak_blocks_needed=130,
                         request_peak_blocks=100)
    main = "needs 120 KV blocks (1,920 tokens) even at the steady decode footprint, the engine has 100 (1,600 tokens)"
    assert base.reason() == main
    assert dataclasses.replace(base, request_peak_blocks=101).reason() == (
        "one request needs 101 KV blocks at its peak (prefill in flight), the engine has 100 (1,600 tokens)")
    for steady, peak, short in ((50, 10, False), (40, 50, False), (51, 10, True), (40, 51, True)):
        got = dataclasses.replace(base, window_pool=PoolNeed(steady, 60, peak, 50)).reason()
        assert got == (f"needs {steady} sliding-window pool blocks even at the steady decode footprint (one request "
                       f"at its peak {peak}), the engine's window pool has 50" if short else main)


def test_each_group_kinds_footprint_at_the_block_boundaries():
    # A window of 18 tokens can straddle three blocks of 16 (tokens 15..32); 17 straddles two.
    assert group_blocks(KVCacheGroup("sliding_window", 16, 1, sliding_window=18), 1000) == 3
    assert group_blocks(KVCacheGroup("sliding_window", 16, 1, sliding_window=17), 1000) == 2
    # A Mamba state holds its pages whatever the length: the engine's count, else one.
    assert group_blocks(KVCacheGroup("mamba", 16, 1), 1000) == 1
    assert group_blocks(KVCacheGroup("mamba", 16, 1, max_blocks=3), 1000) == 3
    assert [keeps_every_token(KVCacheGroup(kind, 16, 1)) for kind in ("mamba", "full_attention", "mla")] == [
        False, True, True]


def test_max_concurrency_is_the_shared_pool_over_one_max_length_sequence():
    """1,600 tokens: 100 full-attention blocks and 9 of a 128-token window in blocks of 16 (at its peak) in the
    shared pool; a group with a pool of its own is not counted: 1,000 / 109 (not 1,000 × 109)."""
    window = KVCacheGroup("sliding_window", 16, 1, sliding_window=128)
    own = KVCacheGroup("sliding_window", 16, 1, sliding_window=128, pool_blocks=500)
    cap = capacity(1000, FULL, window, own)
    assert blocks_per_sequence(cap, 1600) == 109
    assert max_concurrency_at_max_len(cap) == pytest.approx(1000 / 109)
    assert max_concurrency_at_max_len(capacity(1000)) == pytest.approx(10.0)


def test_a_check_with_a_window_pool_reads_back_from_its_record():
    window = KVCacheGroup("sliding_window", 16, 2, sliding_window=64, pool_blocks=9)
    check = check_cell(capacity(100, FULL, window), 48, 2, 16, "distinct", 0)
    assert check.window_pool is not None
    assert CapacityCheck.from_dict(dataclasses.asdict(check)) == check
