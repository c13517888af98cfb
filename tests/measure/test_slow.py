"""The slow-step rule and its causes on synthetic step rows whose truth is known."""
from __future__ import annotations

import gc
import inspect
import re

import numpy as np
import pytest

from inproc.measure import slow
from inproc.measure.metrics import Window
from inproc.measure.slow import slow_figures, slow_steps
from inproc.measure.slow_online import OnlineSlow
from inproc.measure.steps import NO_GC, StepRecorder, StepTrace
from inproc.run.gcwatch import GcWatch
from inproc.types import BatchShape, StepResult

N = 200


def as_kind(kind):
    return kind  # these tests hand the online rule each step's kind itself


def rows(n: int = N, seed: int = 0, **cols) -> dict[str, np.ndarray]:
    """``n`` decode steps of 4 requests, ~10 ms each with 2 % jitter, every column known."""
    rng = np.random.default_rng(seed)
    dur = 0.010 * (1 + 0.02 * rng.standard_normal(n))
    start = np.arange(n) * 0.012
    base = dict(t_start_s=start, t_end_s=start + dur, schedule_s=np.full(n, 0.001), update_s=np.full(n, 0.0005),
                probe_s=np.full(n, 0.0001), num_running=np.full(n, 4), num_waiting=np.zeros(n),
                num_scheduled_tokens=np.full(n, 4), num_preempted=np.zeros(n), num_prefill_reqs=np.zeros(n),
                num_prefill_tokens=np.zeros(n), num_decode_reqs=np.full(n, 4), num_decode_tokens=np.full(n, 4),
                kv_used_blocks=40 + np.arange(n) // 8, gc_count=np.zeros(n), gc_generation=np.full(n, -1),
                gc_ns=np.zeros(n), gc_between_count=np.zeros(n), gc_between_generation=np.full(n, -1),
                gc_between_ns=np.zeros(n), graph_mode=np.full(n, 2), num_unpadded_tokens=np.full(n, 4),
                num_padded_tokens=np.full(n, 4))
    base.update(cols)
    return base


def slow_down(c: dict, row: int, by_s: float) -> None:
    """Step ``row`` takes ``by_s`` longer (every later step shifts with it)."""
    c["t_end_s"][row] += by_s
    c["t_start_s"][row + 1:] += by_s
    c["t_end_s"][row + 1:] += by_s


def window(n: int = N) -> Window:
    return Window(0.0, 1.0, 0, n - 1)


def test_the_rule_quoted_in_the_report_names_the_constants_the_code_uses():
    doc = inspect.getdoc(slow.threshold_s)
    found = dict(re.findall(r"(MIN_STEPS|K_MAD|FLOOR) = (\d+)", doc))
    assert found == {"MIN_STEPS": str(slow.MIN_STEPS), "K_MAD": f"{slow.K_MAD:g}", "FLOOR": f"{slow.FLOOR:g}"}


def test_clean_steps_flag_nothing_and_identical_steps_do_not_flag_jitter():
    assert slow_steps(StepTrace.of(**rows()), window()) == []
    c = rows()
    c["t_end_s"] = c["t_start_s"] + 0.010  # MAD = 0: only the floor guards
    c["t_end_s"][7] += 0.015  # 2.5× the median: jitter under the floor
    assert slow_steps(StepTrace.of(**c), window()) == []


def test_each_cause_is_found_in_order():
    c = rows()
    planted = {10: 0.2, 30: 0.2, 50: 0.2, 70: 0.2, 90: 0.2, 110: 0.2, 130: 0.2, 150: 0.2}
    for row, by in planted.items():
        slow_down(c, row, by)
    c["gc_count"][10], c["gc_generation"][10], c["gc_ns"][10] = 1, 2, 150_000_000  # 150 of the 200 ms
    c["gc_count"][150], c["gc_generation"][150], c["gc_ns"][150] = 3, 0, 90_000  # a young collection: no cause
    c["num_prefill_reqs"][30], c["num_prefill_tokens"][30] = 1, 512
    c["num_scheduled_tokens"][30] = 516
    c["num_preempted"][50] = 2
    c["graph_mode"][70] = 0  # eager where like batches ran FULL
    c["num_padded_tokens"][90] = 8
    c["kv_used_blocks"][110:] += 30  # 30 new blocks for 4 requests
    c["schedule_s"][130] = 0.15
    trace = StepTrace.of(**c)
    flagged = slow_steps(trace, window())
    assert [s.row for s in flagged] == sorted(planted)  # in row order, whichever reference judged each
    found = {s.row: s.cause for s in flagged}
    assert found == {10: "gc", 30: "prefill", 50: "preemption", 70: "graph", 90: "graph", 110: "kv", 130: "host",
                     150: "unexplained"}
    figs = slow_figures(trace, window())
    assert figs.count == 8 and sum(figs.causes.values()) == 8 and figs.causes["graph"] == 2
    assert figs.max_ms == pytest.approx(1e3 * (trace.t_end_s - trace.t_start_s).max())
    assert figs.gc_ms == pytest.approx(150.09)


def test_a_shape_with_few_steps_falls_back_to_its_decode_batch_then_to_the_window():
    c = rows()
    c["num_scheduled_tokens"][5] = 7  # a shape of one step: judged against the 4-request steps
    slow_down(c, 5, 0.2)
    c["num_decode_reqs"][60] = 3  # a decode batch of one step: judged against the window
    slow_down(c, 60, 0.2)
    (a, b) = slow_steps(StepTrace.of(**c), window())
    assert (a.row, a.reference, b.row, b.reference) == (5, "decode batch", 60, "window")
    assert a.median_s == pytest.approx(0.010, rel=0.05)


def test_a_window_of_too_few_steps_flags_nothing():
    c = rows(slow.MIN_STEPS - 1)
    slow_down(c, 3, 1.0)
    assert slow_steps(StepTrace.of(**c), window(slow.MIN_STEPS - 1)) == []


def test_old_files_without_gc_columns_load_as_not_recorded():
    c = rows()
    for name in ("gc_count", "gc_generation", "gc_ns", "gc_between_count", "gc_between_generation", "gc_between_ns"):
        del c[name]
    trace = StepTrace.from_dict(StepTrace.of(**c).to_dict())
    assert (trace.gc_count == -1).all() and not trace.known("gc_ns").any()
    figs = slow_figures(trace, window())
    assert figs.gc_ms is None and figs.count == 0


def test_online_judging_agrees_with_the_window_once_a_kind_has_enough_steps():
    c = rows()
    for row in (20, 120):
        slow_down(c, row, 0.2)
    slow_down(c, 3, 0.2)  # before its kind has MIN_STEPS steps: not judged online
    trace = StepTrace.of(**c)
    judge = OnlineSlow(as_kind)
    online = [i for i in range(N) if judge.judge(i, float(trace.t_end_s[i] - trace.t_start_s[i]), (4, 4, 2)) is not None]
    assert online == [20, 120]
    assert [s.row for s in slow_steps(trace, window())] == [3, 20, 120]


def test_gc_watch_counts_a_collection_between_takes_and_records_it_in_the_row():
    watch = GcWatch()
    watch.start()
    try:
        gc.collect(1)
        count, generation, ns = watch.take()
        assert count == 1 and generation == 1 and ns > 0
        assert watch.take() == (0, -1, 0)
    finally:
        watch.stop()
    assert watch.take() == NO_GC[:3]
    rec = StepRecorder()
    rec.append(0.0, 0.01, StepResult((), 1, 0, 1, batch=BatchShape(0, 0, 1, 1)), (1, 2, 5000, 0, -1, 0))
    rec.append(0.02, 0.03, StepResult((), 1, 0, 1))
    t = rec.freeze()
    assert (t.gc_count.tolist(), t.gc_generation.tolist(), t.gc_ns.tolist()) == ([1, -1], [2, -1], [5000, -1])
    assert rec.row(0)["gc_ns"] == 5000 and rec.row(0)["num_decode_reqs"] == 1
