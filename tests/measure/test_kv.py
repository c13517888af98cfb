"""KV usage per cell: peak and mean over the window's steps, and the Requests queued reason quoting them."""
from __future__ import annotations

import numpy as np

from inproc import types as st
from inproc.measure.figures import decode_figures
from inproc.measure.judge import judge_decode
from inproc.measure.kv import kv_usage
from inproc.measure.metrics import Window
from inproc.measure.steps import StepRecorder, StepTrace
from inproc.measure.trace import CellTrace, RequestTrace
from inproc.plan.capacity import check_cell
from inproc.types import Capacity, KVCacheGroup, StepResult

CAP = Capacity(301, 32, 301 * 32, (KVCacheGroup("sliding_window", 32, 2, 256, max_blocks=11),), 8, 64, 2048, None, {}, 300)


def test_peak_and_mean_over_the_window_only():
    used = np.array([250, 40, 44, 48, 46, 290])  # prefill before, then the window's steps 1..4, then after
    steps = StepTrace.of(t_start_s=np.arange(6.0), t_end_s=np.arange(6.0) + 1, kv_used_blocks=used)
    kv = kv_usage(steps, Window(1.0, 5.0, 1, 4), 300)
    assert (kv.peak_blocks, kv.mean_blocks, kv.pool_blocks) == (48, 44.5, 300)
    assert kv.describe() == "KV blocks in use: peak 48 of 300 (16%), mean 44"


def test_unknown_usage_and_old_files_give_no_figure():
    steps = StepTrace.of(t_start_s=np.zeros(3), t_end_s=np.ones(3))  # a file before the column: -1
    assert kv_usage(steps, Window(0.0, 1.0, 0, 2), 300) is None
    old = StepTrace.from_dict({k: v for k, v in steps.to_dict().items() if not k.startswith("kv_")})
    assert (old.kv_used_blocks == -1).all()


def test_recorder_keeps_the_engines_count():
    rec = StepRecorder()
    for used in (5, None, 7):
        rec.append(0.0, 1.0, StepResult((), 1, 0, kv_used_blocks=used))
    assert rec.freeze().kv_used_blocks.tolist() == [5, -1, 7]


def test_queued_reason_quotes_observed_usage_and_estimate():
    n = 12
    steps = StepTrace.of(t_start_s=np.arange(n, dtype=float), t_end_s=np.arange(n) + 1.0,
                         num_running=np.full(n, 3), num_waiting=np.full(n, 1), num_preempted=np.zeros(n, int),
                         kv_used_blocks=np.full(n, 297))
    reqs = [RequestTrace(f"r{i}", 100, 64, 0.0, True, list(range(n)), [1] * n, list(range(n))) for i in range(4)]
    trace = CellTrace(steps, reqs, 0.5, 20.0)
    figs = decode_figures(trace, None, kv_pool_blocks=CAP.allocatable_blocks)
    estimate = check_cell(CAP, 1500, 4, 64, "distinct", 0)
    v = judge_decode(figs, 4, CAP, estimate=estimate)
    assert v.status == st.QUEUED
    assert "up to 1 waiting" in v.reason and "KV blocks in use: peak 297 of 300 (99%), mean 297" in v.reason
    assert "estimate 32 blocks at the steady decode footprint, 44 if all C held their peak at once" in v.reason
