"""Metric definitions on hand-made traces: a fake clock, so every expected value is exact."""
from __future__ import annotations

import numpy as np
import pytest

from inproc.measure import metrics as m
from inproc.measure.trace import CellTrace, RequestTrace, StepTrace
from inproc.types import EngineCounters


def make_trace(step_ends, running, requests, open_s, window_s, gap=0.0, waiting=None):
    """Steps back to back (each starts ``gap`` after the previous ends)."""
    ends = np.asarray(step_ends, dtype=float)
    starts = np.concatenate([[0.0], ends[:-1]]) + gap
    n = len(ends)
    steps = StepTrace.of(t_start_s=starts, t_end_s=ends, num_running=running,
                         num_waiting=waiting if waiting is not None else [0] * n,
                         num_scheduled_tokens=np.zeros(n), num_preempted=np.zeros(n))
    return CellTrace(steps, requests, open_s, window_s)


def req(rid, steps, counts=None, submit=0.0, finished=None, reason=None):
    counts = counts or [1] * len(steps)
    return RequestTrace(rid, 100, 1000, submit, True, list(steps), list(counts), list(range(sum(counts))), finished, reason)


def test_window_covers_steps_ending_inside():
    # Steps end every 0.125 s (exact in binary); the window opens at step 1's end (0.25) for 0.5 s.
    tr = make_trace([0.125 * (i + 1) for i in range(12)], [2] * 12, [], open_s=0.25, window_s=0.5)
    w = m.window(tr)
    assert (w.first_step, w.last_step) == (2, 5)  # the step ending at exactly 0.75 is inside
    assert w.close_s == 0.75
    assert m.measured_for_s(w) == pytest.approx(0.5)


def test_total_tbt_ttft_per_request():
    # Two requests, one token per step each, steps of 10 ms; request b gets 2 tokens at step 6.
    ends = [0.01 * (i + 1) for i in range(10)]
    a = req("a", range(10), submit=0.0)
    b = req("b", [1, 3, 5, 6, 7], counts=[1, 1, 1, 2, 1], submit=0.005)
    tr = make_trace(ends, [2] * 10, [a, b], open_s=0.02, window_s=0.05)  # steps 2..6
    w = m.window(tr)
    assert m.output_tokens(tr, w) == 5 + 4  # a: steps 2..6; b: steps 3,5,6(2)
    assert m.total_tok_s(tr, w) == pytest.approx(9 / 0.05)
    # TTFT: a 10 ms (step 0 end), b 20 ms - 5 ms = 15 ms; median 12.5 ms.
    assert m.ttft_ms_median(tr) == pytest.approx(12.5)
    # Gaps: a: four 10 ms; b: 20 ms (3->5), 10 ms split over 2 tokens = 5, 5.
    assert sorted(m.tbt_intervals_s(tr, w) * 1000) == pytest.approx([5, 5, 10, 10, 10, 10, 20])
    assert m.tbt_ms_median(tr, w) == pytest.approx(10)
    # Per request: a 4 tokens / 40 ms = 100/s; b (2+1... tokens after first) 3 / 30 ms = 100/s.
    assert m.per_request_tok_s(tr, w) == pytest.approx(100)


def test_avg_active_is_time_weighted():
    # Step 1 lasts 0.1 s with 4 running, step 2 lasts 0.3 s with 2 running.
    tr = make_trace([0.1, 0.2, 0.5], [9, 4, 2], [], open_s=0.1, window_s=1.0)
    w = m.window(tr)
    assert m.avg_active(tr, w) == pytest.approx((4 * 0.1 + 2 * 0.3) / 0.4)


def test_harness_overhead_counts_time_between_steps():
    # Each step starts 2 ms after the previous one ends: 2 ms of every 10 ms is the tool's.
    tr = make_trace([0.01 * (i + 1) for i in range(20)], [1] * 20, [], open_s=0.05, window_s=0.1, gap=0.002)
    assert m.harness_overhead(tr, m.window(tr)) == pytest.approx(0.2)


def test_completed_excludes_aborted_and_outside():
    ends = [0.1 * (i + 1) for i in range(10)]
    done_in = req("x", [1, 2, 3], finished=3, reason="length")
    done_before = req("y", [0, 1], finished=1, reason="length")
    aborted = req("z", [4, 5], finished=5, reason="abort")
    tr = make_trace(ends, [1] * 10, [done_in, done_before, aborted], open_s=0.2, window_s=0.5)
    assert m.completed_requests(tr, m.window(tr)) == 1


def test_spec_decode_from_counter_differences():
    tr = make_trace([0.1], [1], [], None, 1.0)
    tr.counters_start = EngineCounters(0, spec_drafts=10, spec_draft_tokens=50, spec_accepted_tokens=20)
    tr.counters_end = EngineCounters(0, spec_drafts=30, spec_draft_tokens=150, spec_accepted_tokens=80)
    assert m.spec_acceptance_rate(tr) == pytest.approx(60 / 100)
    assert m.spec_mean_acceptance_length(tr) == pytest.approx(1 + 60 / 20)
    assert m.window(tr) is None


def test_prefill_figures():
    ends = [0.2, 0.4, 0.5]
    r = RequestTrace("p", 4096, 1, 0.0, True, [2], [1], [7], 2, "length", 0)
    tr = make_trace(ends, [1, 1, 1], [r], None, 0.0)
    assert m.prefill_ttft_s(tr) == pytest.approx(0.5)
    assert m.prompt_tok_s(tr) == pytest.approx(4096 / 0.5)
    assert m.prefill_steps(tr) == 3


def _sub_bounds(subs):
    return [(s.open_s, s.close_s, s.first_step, s.last_step) for s in subs]


def test_subwindows_by_time_tile_the_window():
    # Steps end every 0.125 s; the window opens at step 0's end and holds steps 1..8 (0.25 .. 1.125).
    ends = [0.125 * (i + 1) for i in range(12)]
    a = req("a", range(12))
    tr = make_trace(ends, [1] * 12, [a], open_s=0.125, window_s=1.0)
    w = m.window(tr)
    subs = m.subwindows(tr, w, sub_s=0.25)
    # Step k belongs to ceil((its end - 0.125) / 0.25): steps 1-2, 3-4, 5-6, 7-8.
    assert _sub_bounds(subs) == [(0.125, 0.375, 1, 2), (0.375, 0.625, 3, 4), (0.625, 0.875, 5, 6), (0.875, 1.125, 7, 8)]
    assert sum(m.output_tokens(tr, s) for s in subs) == m.output_tokens(tr, w) == 8
    assert sum(m.measured_for_s(s) for s in subs) == pytest.approx(m.measured_for_s(w))
    assert [m.total_tok_s(tr, s) for s in subs] == pytest.approx([8.0] * 4)


def test_subwindows_short_tail_joins_and_empty_ones_are_skipped():
    ends = [0.125 * (i + 1) for i in range(12)]
    tr = make_trace(ends, [1] * 12, [req("a", range(12))], open_s=0.125, window_s=1.125)  # steps 1..9
    # By 0.5 s: steps 1-4, 5-8, then step 9 alone (0.125 s < 0.25 s): it joins the second.
    assert _sub_bounds(m.subwindows(tr, m.window(tr), sub_s=0.5)) == [(0.125, 0.625, 1, 4), (0.625, 1.25, 5, 9)]
    # One step of 0.625 s covers sub-windows 2 and 3 without ending in them: its time goes to sub-window 4.
    tr = make_trace([0.125, 0.25, 0.375, 1.0, 1.125], [1] * 5, [req("a", range(5))], open_s=0.125, window_s=1.0)
    assert _sub_bounds(m.subwindows(tr, m.window(tr), sub_s=0.25)) == [(0.125, 0.375, 1, 2), (0.375, 1.125, 3, 4)]


def test_subwindows_by_steps():
    ends = [0.125 * (i + 1) for i in range(12)]
    tr = make_trace(ends, [1] * 12, [req("a", range(12))], open_s=0.125, window_s=1.0)  # steps 1..8
    assert [(s.first_step, s.last_step) for s in m.subwindows(tr, m.window(tr), every_steps=3)] == [(1, 3), (4, 6), (7, 8)]
    tr = make_trace(ends, [1] * 12, [req("a", range(12))], open_s=0.125, window_s=0.875)  # steps 1..7
    # The last group would hold 1 step, under half of 3: it joins the one before.
    assert [(s.first_step, s.last_step) for s in m.subwindows(tr, m.window(tr), every_steps=3)] == [(1, 3), (4, 7)]
    for bad in ({}, {"sub_s": 0.0}, {"every_steps": 0}, {"sub_s": 1.0, "every_steps": 2}):
        with pytest.raises(ValueError):
            m.subwindows(tr, m.window(tr), **bad)
