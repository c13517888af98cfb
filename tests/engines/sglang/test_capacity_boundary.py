"""Over capacity on SGLang's token pool, held to the real scheduler (the session engine).

The plan counts SGLang's pool as one group of pages (``inproc/engines/sglang/info.py``; a
hybrid sliding-window model adds its window pool as a group with a pool of its own). For
L = 1,500 + M = 64 the plan's largest runnable C* is read from the plan; then the cell C*
is measured as ``inproc run`` measures it and its status matches what SGLang did in the
window, C* + 1 forced onto SGLang never all run at once without a retraction, and the
pool SGLang reports in use never exceeds its pool.
"""
from __future__ import annotations

from inproc import types as st
from inproc.measure import metrics as m
from inproc.measure.loops import LoopSettings
from inproc.plan.capacity import check_cell
from inproc.plan.matrix import CellPlan
from inproc.plan.prompts import CellPrompts, PromptFactory
from inproc.record import derive
from inproc.run.driver import DecodeSettings, Driver
from inproc.types import RequestSpec
from tests.engines.sglang.conftest import needs_sglang

pytestmark = needs_sglang

L, M = 1500, 64


def test_plan_boundary_holds_on_sglang(idle_engine):
    engine = idle_engine
    info = engine.info
    cap = info.capacity
    pool = cap.allocatable_blocks
    assert [g.kind for g in cap.groups] == ["token_pool"] and cap.groups[0].pool_blocks is None
    runnable = [c for c in range(1, 17) if check_cell(cap, L, c, M, "distinct", 0).fits]
    c_star = max(runnable)
    assert runnable == list(range(1, c_star + 1)) and c_star < max(16, cap.max_num_seqs)
    chk = check_cell(cap, L, c_star, M, "distinct", 0)
    assert chk.blocks_needed == chk.peak_blocks_needed <= pool  # one pool keeping every token: steady = peak

    prompts = CellPrompts(PromptFactory(info.vocab_size, 5, info.special_token_ids), L, c_star, "distinct", 32)
    trace = Driver(engine).decode_cell(prompts, DecodeSettings(c_star, 60.0, M, window_steps=8))
    entry = derive.decode_entry(CellPlan(L, c_star, M, chk), "distinct", "", trace, None, cap, LoopSettings(enabled=False))
    s, w = trace.steps, m.window(trace)
    rows = slice(w.first_step, w.last_step + 1)
    assert (s.kv_used_blocks >= 0).all() and s.kv_used_blocks.max() <= pool
    held_all = bool((s.num_waiting[rows] == 0).all() and (s.num_preempted[rows] == 0).all())
    assert entry.status == (st.VALID if held_all else st.QUEUED), (c_star, entry.status, entry.reason)
    kv = entry.figures.kv
    assert kv is not None and 0 < kv.mean_blocks <= kv.peak_blocks <= pool
    if held_all:  # C* requests past their prefills hold their contexts: more than C* × L tokens
        assert kv.peak_blocks * cap.block_size >= c_star * L

    # C* + 1, Over capacity, forced onto SGLang.
    factory = PromptFactory(info.vocab_size, 2, info.special_token_ids)
    for i in range(c_star + 1):
        engine.add_request(RequestSpec(f"over-{i}", factory.tokens(L, "boundary", i), M))
    running, preempted, used, steps = 0, 0, 0, 0
    while engine.has_unfinished():
        res = engine.step()
        steps += 1
        assert steps < 5000
        running, preempted = max(running, res.num_running), preempted + res.num_preempted
        used = max(used, res.kv_used_blocks)
    assert preempted > 0 or running < c_star + 1, (c_star, running, preempted)
    assert 0 < used <= pool
