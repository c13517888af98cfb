"""The decode loop's own logic on a scripted fake engine and a fake clock: window, refill, pairing, aborts.

Every expected value is exact: the fake clock moves 0.125 s per step (a binary fraction),
so window edges fall where the test says. The same properties on the real engines are
tested in tests/run/test_contract.py.
"""
from __future__ import annotations

import gc
import itertools
import sys

import numpy as np
import pytest

from inproc.measure import anatomy as an
from inproc.measure import metrics as m
from inproc.measure.trace import ProfiledSteps
from inproc.plan.prompts import CellPrompts, PromptFactory
from inproc.run.decode import DecodeCell, DecodeSettings
from inproc.run.interrupt import RunInterrupted
from inproc.run.profiling import DebugSettings
from tests.fakes.fake_engine import FakeClock, FakeEngine, FakeScript

STEP_S = 0.125


def run_cell(script: FakeScript | None = None, c: int = 4, max_tokens: int = 50, window_s: float = 1.25,
             engine: FakeEngine | None = None, ids=None, **settings):
    """One decode cell on a fake engine; returns (engine, trace)."""
    clock = FakeClock()
    engine = engine or FakeEngine(script or FakeScript(step_s=STEP_S), clock)
    prompts = CellPrompts(PromptFactory(1000, 1), 64, c, "distinct", 8)
    debug = settings.pop("debug", None)
    should_stop = settings.pop("should_stop", None)
    ticker = settings.pop("ticker", None)
    on_edge = settings.pop("on_edge", None)
    s = DecodeSettings(c, window_s, max_tokens, **settings)
    cell = DecodeCell(engine, prompts, s, ids or itertools.count(1), engine.clock, debug, should_stop, ticker,
                      on_edge)
    return engine, cell.run()


def in_flight_per_step(trace, rows) -> list[int]:
    """Requests submitted before the step started and not yet returned as finished, per step."""
    return [sum(1 for r in trace.requests if r.submit_s <= trace.steps.t_start_s[i]
                and (r.finished_step is None or r.finished_step >= i)) for i in rows]


def test_window_opens_after_the_last_first_token_and_a_time_window_leaves_its_closing_step_out():
    ticks = []
    eng, trace = run_cell(FakeScript(prefill_steps=3, step_s=STEP_S), window_s=1.25, ticker=ticks.append)
    # Steps 1-2 prefill, step 3 returns every first token: the window opens at its end.
    assert trace.window_open_reason == "all 4 requests decoding"
    assert trace.window_open_s == 3 * STEP_S
    w = m.window(trace)
    assert (w.first_step, w.last_step) == (3, 12)  # steps ending in (0.375, 1.625]
    assert len(trace.steps) == 14  # ... and the step ending at 1.75 closed it, outside
    assert m.output_tokens(trace, w) == 4 * 10
    # The counters are those of the last step inside: the closing step's 4 tokens are not in them.
    in_window = trace.counters_end.generation_tokens - trace.counters_start.generation_tokens
    assert in_window == 40
    assert eng.counters().generation_tokens - trace.counters_start.generation_tokens == 44
    assert all(r.finish_reason == "abort" for r in trace.requests) and not eng.has_unfinished()
    assert ticks and ticks[0].startswith("  warm-up") and "4 running, 0 waiting" in ticks[-1]


def test_the_window_edges_are_told_when_they_happen_in_absolute_clock_time():
    """Telemetry reads the GPUs' energy counters at these calls: the open at the window's first edge, the close
    at the end of the step that closed it (a time window learns it closed one step late)."""
    edges = []
    _, trace = run_cell(FakeScript(prefill_steps=3, step_s=STEP_S), window_s=1.25,
                        on_edge=lambda label, t_s: edges.append((label, t_s)))
    w = m.window(trace)
    origin, ends = trace.clock_origin_s, trace.steps.t_end_s
    assert edges == [("open", origin + trace.window_open_s), ("close", origin + ends[w.last_step + 1])]
    edges.clear()
    _, trace = run_cell(window_steps=5, on_edge=lambda label, t_s: edges.append((label, t_s)))
    w = m.window(trace)  # a step window closes with its last step
    assert edges == [("open", trace.clock_origin_s + trace.window_open_s),
                     ("close", trace.clock_origin_s + trace.steps.t_end_s[w.last_step])]


def test_a_step_window_holds_exactly_its_steps():
    _, trace = run_cell(window_steps=5)
    w = m.window(trace)
    assert (w.first_step, w.last_step) == (1, 5) and len(trace.steps) == 6  # closes with its last step
    assert m.output_tokens(trace, w) == 20 == trace.counters_end.generation_tokens - trace.counters_start.generation_tokens


def test_outputs_a_step_late_are_paired_with_the_step_that_formed_them():
    eng, trace = run_cell(FakeScript(prefill_steps=2, lag=1, step_s=STEP_S), window_steps=6)
    s = trace.steps
    # Step 2 forms the first tokens' batch; step 3 returns it: the window opens at step 3's end.
    assert trace.window_open_s == 3 * STEP_S
    assert s.output_of.tolist()[:4] == [-1, 0, 1, 2]
    # Each batch's forward is filed under the row of the step that formed it.
    known = s.known("num_unpadded_tokens")
    assert known[:-1].all() and (s.num_unpadded_tokens[known] == s.num_scheduled_tokens[known]).all()
    assert s.num_prefill_tokens[1] == 4 * 16 and s.num_decode_reqs[2] == 4
    # TTFT runs to the end of the step that returned the token (one step after it was formed).
    assert [m.ttft_s(trace, r) for r in trace.requests] == [3 * STEP_S] * 4
    assert m.prefill_steps(trace) == 2
    assert not eng.has_unfinished()


@pytest.mark.parametrize("lag", [0, 1])
def test_a_request_that_finishes_early_is_refilled_before_the_next_step(lag):
    script = FakeScript(lag=lag, step_s=STEP_S, finish_after={2: 5, 4: 3})
    eng, trace = run_cell(script, c=3, max_tokens=40, window_s=2.5)
    early = {r.request_id: r for r in trace.requests if r.finish_reason == "stop"}
    assert sorted(r.num_tokens for r in early.values()) == [3, 5]
    refills = [r for r in trace.requests if not r.initial]
    assert len(refills) == 2
    for refill, done in zip(refills, sorted(early.values(), key=lambda r: r.finished_step)):
        i = done.finished_step
        assert trace.steps.t_end_s[i] <= refill.submit_s <= trace.steps.t_start_s[i + 1]
    w = m.window(trace)
    assert set(in_flight_per_step(trace, range(w.first_step, w.last_step + 1))) == {3}
    assert m.completed_requests(trace, w) == 2
    assert sum(r.num_tokens for r in trace.requests) == eng.generation_tokens - lag * 3  # the last batch: dropped


def test_a_request_finishing_during_warm_up_opens_the_window_and_says_so():
    script = FakeScript(max_running=2, step_s=STEP_S, finish_after={1: 2})
    _, trace = run_cell(script, c=3, window_steps=3)
    assert trace.window_open_reason == "a request finished while 2 of 3 had started decoding"
    assert trace.window_open_s == 2 * STEP_S


def test_the_warm_up_limit_opens_the_window_when_requests_queue():
    _, trace = run_cell(FakeScript(max_running=2, step_s=STEP_S), c=3, max_tokens=100, window_steps=4,
                        warmup_limit_s=1.0)
    assert trace.window_open_reason == "warm-up limit 1 s passed with 2 of 3 decoding"
    assert trace.window_open_s == 9 * STEP_S
    w = m.window(trace)
    assert m.max_waiting(trace, w) == 1 and m.avg_active(trace, w) == 2


def test_a_preempted_request_recomputes_and_the_step_row_counts_it():
    eng, trace = run_cell(FakeScript(step_s=STEP_S, preempt_at={6: 1}), window_steps=10)
    w = m.window(trace)
    assert (w.first_step, w.last_step) == (1, 10)
    assert trace.steps.num_preempted.tolist()[5] == 1 and an.preemptions(trace.steps, w) == 1
    assert m.output_tokens(trace, w) == 4 * 10 - 1  # the newest request recomputed in step 6: no token
    assert m.counter_delta(trace, "preemptions") == 1
    newest = next(r for r in trace.requests if r.request_id == "r-4")
    assert 5 not in newest.token_steps and 6 in newest.token_steps


def test_close_aborts_what_is_in_flight_and_ids_stay_unique_over_cells():
    ids = itertools.count(1)
    eng = FakeEngine(FakeScript(lag=1, step_s=STEP_S), FakeClock())
    _, first = run_cell(engine=eng, ids=ids, window_steps=3)
    assert not eng.has_unfinished()
    formed_before = eng.generation_tokens
    _, second = run_cell(engine=eng, ids=ids, window_steps=3)
    assert not {r.request_id for r in first.requests} & {r.request_id for r in second.requests}
    assert all(r.finish_reason == "abort" for r in first.requests + second.requests)
    # The batch in flight when the cell closed (one token for each of the 4) reaches no one.
    assert sum(r.num_tokens for r in second.requests) == eng.generation_tokens - formed_before - 4


def test_stop_at_a_step_boundary_leaves_the_engine_idle():
    calls = itertools.count()
    eng = FakeEngine(FakeScript(step_s=STEP_S), FakeClock())
    with pytest.raises(RunInterrupted):
        run_cell(engine=eng, should_stop=lambda: next(calls) >= 4)
    assert eng.steps >= 5 and not eng.has_unfinished()


def test_submit_is_stamped_before_the_engine_takes_the_request_in():
    # An engine whose add_request takes 0.5 s (vLLM takes the prompt in there): TTFT includes it.
    clock = FakeClock()
    eng = FakeEngine(FakeScript(step_s=STEP_S, add_s=0.5), clock)
    _, trace = run_cell(engine=eng, window_steps=2)
    t0 = trace.clock_origin_s
    assert [r.submit_s for r in trace.requests] == [eng.received_s[r.request_id] - t0 for r in trace.requests]
    assert [r.submit_s for r in trace.requests] == [0.0, 0.5, 1.0, 1.5]
    assert m.ttft_s(trace, trace.requests[0]) == 2.0 + STEP_S  # four intakes, then one step


def test_the_heap_is_frozen_inside_the_window_only():
    before = gc.get_freeze_count()
    seen = []

    class Watching(FakeEngine):
        def step(self):
            seen.append(gc.get_freeze_count())
            return super().step()

    eng = Watching(FakeScript(prefill_steps=2, step_s=STEP_S), FakeClock())
    _, trace = run_cell(engine=eng, window_steps=3)
    if before:  # an engine built in this process froze its heap: left as it is
        assert set(seen) == {before} and gc.get_freeze_count() == before
        return
    # Steps 1-2 warm up; the window opens at step 2's end: steps 3-5 run frozen, and it is undone.
    assert seen[:2] == [0, 0] and all(n > 0 for n in seen[2:5]) and gc.get_freeze_count() == 0


def test_profiled_steps_come_after_the_window():
    debug = DebugSettings(profile="torch", profile_steps=3, profile_skip=2)
    eng, trace = run_cell(debug=debug, window_steps=4)
    w = m.window(trace)
    # The window closed with row 4; rows 5-6 skipped; the profiler covered rows 7-9.
    assert trace.profiled == ProfiledSteps("torch", ("fake-trace.json",), 7, 9)
    assert w.last_step == 4 < trace.profiled.first_step
    assert eng.profiles == [("start", 7), ("stop", 10)]  # engine steps count from 1: row r is step r + 1
    assert len(trace.steps) == 10 and not eng.has_unfinished()


def test_the_breakpoint_stops_right_before_the_asked_window_step(monkeypatch):
    eng = FakeEngine(FakeScript(step_s=STEP_S), FakeClock())
    at = []
    monkeypatch.setattr(sys, "breakpointhook", lambda *a, **k: at.append(eng.steps))
    _, trace = run_cell(engine=eng, debug=DebugSettings(break_at_step=3), window_steps=5)
    assert at == [3]  # the window opened after step 1; window steps 1-2 are steps 2-3
    assert np.isfinite(trace.steps.t_end_s).all()


def test_the_anatomy_pass_follows_the_window_with_its_accounting_on_and_the_headline_is_read_without_it():
    # A step window of 5 steps and a pass of at most 3: the engine is switched on after the
    # window's last step and off after the pass's last, and the figures read those rows.
    eng, trace = run_cell(window_s=10.0, window_steps=5, anatomy_steps=3)
    w = m.window(trace)
    aw = m.anatomy_window(trace, w)
    assert trace.anatomy_pass is not None
    assert (trace.anatomy_pass.first_step, trace.anatomy_pass.last_step) == (w.last_step + 1, w.last_step + 3)
    assert (aw.first_step, aw.last_step) == (w.last_step + 1, w.last_step + 3)
    assert aw.open_s == trace.steps.t_start_s[aw.first_step] and aw.close_s == trace.steps.t_end_s[aw.last_step]
    # Engine steps count from 1: row r is step r + 1, so "on" comes after step w.last_step + 1.
    on, off = eng.anatomy_switches[0], eng.anatomy_switches[1]
    assert on == (True, w.last_step + 1) and off == (False, w.last_step + 4)
    assert all(not s for s, _ in eng.anatomy_switches[1:])
    fig = an.anatomy_figures(trace.steps, aw, None, None, own_pass=True)
    assert fig.pass_steps == 3
    assert fig.scheduled_tokens == int(trace.steps.num_scheduled_tokens[aw.first_step:aw.last_step + 1].sum())


def test_a_short_window_gets_a_pass_no_longer_than_itself_and_no_pass_when_not_asked():
    eng, trace = run_cell(window_s=10.0, window_steps=2, anatomy_steps=64)
    assert trace.anatomy_pass.last_step - trace.anatomy_pass.first_step + 1 == 2
    eng, trace = run_cell(window_s=10.0, window_steps=2)
    assert trace.anatomy_pass is None and eng.anatomy_switches == []
    assert m.anatomy_window(trace, m.window(trace)) == m.window(trace)


def test_profiled_steps_follow_the_anatomy_pass():
    debug = DebugSettings(profile="torch", profile_steps=2, profile_skip=0)
    eng, trace = run_cell(window_s=10.0, window_steps=4, anatomy_steps=3, debug=debug)
    assert trace.profiled.first_step == trace.anatomy_pass.last_step + 1


@pytest.mark.parametrize("watched", [False, True])
def test_the_bulk_work_left_when_the_loop_ends_is_timed_with_the_rows_made_in_it(monkeypatch, watched):
    """A short window holds its steps and tokens to the loop's end; that work is timed as ``held_work_s``. Making
    the held rows is planted to take 1 s of the fake clock: it is inside the timed span with the watchdog on or off
    (where the watchdog's exit read the rows first, they were made untimed and the span was 0)."""
    from inproc.measure import steps as st
    from inproc.run.watchdog import StepTimeout, StepWatchdog, WatchedEngine

    clock = FakeClock()
    engine = FakeEngine(FakeScript(step_s=STEP_S), clock)
    flush = st.StepRecorder.flush

    def slow_flush(self):
        if self._held:
            clock.advance(1.0)
        flush(self)

    monkeypatch.setattr(st.StepRecorder, "flush", slow_flush)
    dog = StepWatchdog(StepTimeout(), lambda hang: None, None) if watched else None
    try:
        stepped = WatchedEngine(engine, dog) if watched else engine
        prompts = CellPrompts(PromptFactory(1000, 1), 64, 4, "distinct", 8)
        cell = DecodeCell(stepped, prompts, DecodeSettings(4, 0.0, 50, window_steps=8), itertools.count(1), clock)
        trace = cell.run()
    finally:
        if dog is not None:
            dog.stop()
    assert cell.held_work_s == 1.0
    assert len(trace.steps) == 9  # the first token's step and the 8 window steps: all made rows
