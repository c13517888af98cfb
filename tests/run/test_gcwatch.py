"""The GC watch's log charged to steps by time, and the step recorder's held rows made in bulk."""
import gc

import numpy as np
import pytest

from inproc.measure.steps import HELD_ROWS, StepRecorder
from inproc.run.gcwatch import GcWatch, charge
from inproc.types import BatchShape, ForwardStats, StepResult


def test_each_collection_is_charged_by_its_stop_to_the_step_or_the_gap_it_fell_in():
    # Wrong code this fails: slots swapped (inside / gap), a stop on a step's start charged inside it
    # (side="right"), a collection after the last step charged to it, generations summed instead of maxed.
    t0 = 100.0
    starts, ends = np.array([0.0, 1.0, 2.0]), np.array([0.5, 1.5, 2.5])
    ns = lambda s: int(round((t0 + s) * 1e9))  # noqa: E731
    log = np.array([
        [ns(-1.1), ns(-1.0), 0],     # before the first step: its gap
        [ns(0.1), ns(0.2), 1],       # inside step 0
        [ns(0.6), ns(0.7), 0],       # the gap before step 1
        [ns(0.9), ns(1.0), 2],       # stopped as step 1 started: still the gap
        [ns(1.15), ns(1.2), 2],      # inside step 1
        [ns(1.3), ns(1.4), 0],       # inside step 1 again
        [ns(2.9), ns(3.0), 2],       # after the last step: nobody's
    ], dtype=np.int64)
    cols = charge(log, starts, ends, t0)
    assert cols["gc_count"].tolist() == [1, 2, 0]
    assert cols["gc_generation"].tolist() == [1, 2, -1]
    assert cols["gc_between_count"].tolist() == [1, 2, 0]
    assert cols["gc_between_generation"].tolist() == [0, 2, -1]
    assert cols["gc_ns"].tolist() == pytest.approx([1e8, 1.5e8, 0], abs=2)
    assert cols["gc_between_ns"].tolist() == pytest.approx([1e8, 2e8, 0], abs=2)


def test_a_real_collection_lands_in_the_step_it_ran_in():
    # Wrong code this fails: a callback that logs nothing, or times on another clock than perf_counter.
    import time

    watch = GcWatch()
    watch.start()
    try:
        t0 = time.perf_counter()
        a = time.perf_counter() - t0
        gc.collect(1)
        b = time.perf_counter() - t0
        time.sleep(0.001)
        c = time.perf_counter() - t0
    finally:
        watch.stop()
    cols = watch.columns(np.array([a, c]), np.array([b, c + 1e-3]), t0)
    assert cols["gc_count"].tolist() == [1, 0] and cols["gc_generation"].tolist() == [1, -1]
    assert cols["gc_ns"][0] > 0 and cols["gc_between_count"].tolist() == [0, 0]


def test_held_rows_become_the_same_rows_across_flushes_with_forwards_filed_to_earlier_rows():
    # Wrong code this fails: a flush that drops or reorders held steps, a forward filed to the wrong row
    # when its source row was made in an earlier flush, a row read before the held steps are made.
    rec, n = StepRecorder(), HELD_ROWS + 45
    for i in range(n):
        fw = ForwardStats("FULL", 4, 8, float(i - 1), None, None) if i else None
        res = StepResult((), i, 0, 7, batch=BatchShape(0, 0, i % 5, i % 5), returned_lag=1 if i else -1, forward=fw,
                         kv_used_blocks=i)
        rec.append(i * 0.01, i * 0.01 + 0.005, res)
        if i == HELD_ROWS + 3:
            assert rec.row(i - 1)["num_running"] == i - 1
    t = rec.freeze()
    assert len(t) == n and t.num_running.tolist() == list(range(n)) and t.kv_used_blocks.tolist() == list(range(n))
    assert t.flops[:-1].tolist() == [float(i) for i in range(n - 1)] and np.isnan(t.flops[-1])
    assert t.output_of.tolist() == [-1] + list(range(n - 1))
    assert t.t_end_s[-1] == pytest.approx((n - 1) * 0.01 + 0.005)
