"""compare's judgement of one tested row and its settings' checks (``inproc.compare.verdicts``), at the edges the
rules draw: a change exactly at the threshold, the words of each verdict with a known bound (a test with no spread:
its bound is the change itself), each refused setting's message; and on saved CPU runs (tests/fixtures/compare),
which runs the spread is learned from, the confidence a reason states, and cells the plan did not leave out."""
from __future__ import annotations

import math
from dataclasses import replace

import pytest

from inproc import types as st
from inproc.compare.estimate import StatSettings
from inproc.compare.spread import ChangeTest
from inproc.compare.verdicts import (FASTER, NOT_COMPARABLE, NOT_RUN_BOTH, NOT_SIGNIFICANT, SLOWER, CompareSettings,
                                     compare_runs, judge_test)
from inproc.errors import UsageError
from inproc.measure.judge import Verdict
from tests.compare.test_verdict_rows import HOG, RUN1, RUN2, RUN3, with_status  # saved CPU runs of one build, a hog


def exact(ratio: float) -> ChangeTest:
    """A change known without spread: its bound at any confidence is the ratio itself."""
    return ChangeTest(math.log(ratio), 0.0, math.inf, 0.0, 0.95)


@pytest.mark.parametrize("ratio, metric, verdict, reason", [
    (0.5, "tok_s", SLOWER, "2.00x slower, at least 2.000x with 80 % confidence"),  # tok/s halved
    (2.0, "tok_s", FASTER, "2.00x faster, at least 2.000x with 80 % confidence"),
    (2.0, "tbt", SLOWER, "2.00x slower, at least 2.000x with 80 % confidence"),  # a time doubled
    (0.8, "ttft", FASTER, "1.25x faster, at least 1.250x with 80 % confidence"),
    (1.02, "tbt", NOT_SIGNIFICANT, "1.02x slower, not beyond the 5% threshold with 80 % confidence (at least 1.020x)"),
    (1 / 1.02, "tbt", NOT_SIGNIFICANT,
     "1.02x faster, not beyond the 5% threshold with 80 % confidence (at least 1.020x)"),
])
def test_each_verdicts_words_give_the_change_and_its_bound_in_the_metrics_direction(ratio, metric, verdict, reason):
    assert judge_test(exact(ratio), metric, 0.05, True) == (verdict, reason)


def test_the_threshold_confidence_is_said_as_given():
    assert judge_test(exact(0.5), "tok_s", 0.05, True, threshold_confidence=0.9)[1] == (
        "2.00x slower, at least 2.000x with 90 % confidence")


def test_a_change_exactly_at_the_threshold_is_not_beyond_it():
    """No change against a threshold of 0: the bound 1.0 is 1 + 0, not past it (would fail: ``>=``)."""
    assert judge_test(exact(1.0), "tok_s", 0.0, True)[0] == NOT_SIGNIFICANT
    assert judge_test(exact(1.0), "tbt", 0.0, True)[0] == NOT_SIGNIFICANT
    assert judge_test(exact(1.25), "tbt", 0.0, True)[0] == SLOWER  # any change beyond 0 is beyond


@pytest.mark.parametrize("threshold", [0.0, 0.05, 0.999])
def test_thresholds_from_zero_to_below_one_hundred_percent_are_taken(threshold):
    assert CompareSettings(threshold=threshold).threshold == threshold


@pytest.mark.parametrize("threshold, shown", [(1.0, "100"), (-0.01, "-1"), (2.5, "250")])
def test_a_threshold_outside_zero_to_below_one_hundred_percent_is_refused_in_words(threshold, shown):
    with pytest.raises(UsageError) as e:
        CompareSettings(threshold=threshold)
    assert str(e.value) == (f"Bad threshold {shown}%: give a percentage from 0% to below 100%, e.g. 5%.")


def test_an_unknown_or_no_metric_is_refused_naming_the_metrics():
    with pytest.raises(UsageError) as e:
        CompareSettings(metrics=("tok_s", "itl"))
    assert str(e.value) == "Unknown metric 'itl'. Metrics: tok_s, tbt, ttft."
    with pytest.raises(UsageError) as e:
        CompareSettings(metrics=())
    assert str(e.value) == "No metric given. Metrics: tok_s, tbt, ttft."
    with pytest.raises(UsageError, match=r"^Unknown --allow-different key 'nosuch'\. Keys: "):
        CompareSettings(allow_different=("nosuch",))
    assert CompareSettings(metrics=("ttft",)).metrics == ("ttft",)



def test_one_baseline_run_against_several_new_runs_learns_the_spread_between_them():
    """Two new runs show how much a run varies: every row is tested between runs (would fail: several runs
    counted only on the baseline's side, or from three new runs)."""
    c = compare_runs([RUN1], [RUN2, RUN3])
    assert {r.estimate.test for r in c.rows} == {"between-run t"}
    assert all(r.estimate.spread_source.startswith("learned from 1 baseline run and 2 new runs") for r in c.rows)


def test_the_rows_reason_states_the_threshold_confidence_of_the_settings():
    """A CPU hog's rows at a threshold confidence of 50 % say so (would fail: the default 80 % used)."""
    c = compare_runs([RUN1], [HOG], CompareSettings(tests=StatSettings(threshold_confidence=0.5)))
    slower = [r for r in c.rows if r.verdict == SLOWER]
    assert slower and all("with 50 % confidence" in r.reason for r in slower)


def test_baseline_runs_that_disagree_show_no_baseline_status():
    """The baseline's runs disagree (Valid and Looped): its status is none, "" (the new side's is its own)."""
    c = compare_runs([RUN1, with_status(RUN2, st.LOOPED, "planted", keys=("256x4",))], [RUN3])
    row = next(r for r in c.rows if r.key == "256x4" and r.metric == "tbt")
    assert (row.verdict, row.base_status, row.new_status) == (NOT_COMPARABLE, "", st.VALID)


@pytest.mark.parametrize("kept", ["trace, no figures", "figures, no trace"])
def test_a_cell_measured_in_both_then_over_capacity_is_not_the_plans_doing(kept):
    """A cell the plan left out has nothing measured: no trace, no summary, no figures. One measured in both runs
    and then found Over capacity keeps some of them: not comparable, never "not run in either" (would fail: the
    trace's absence, or the figures', standing for all three)."""
    over = Verdict(st.OVER_CAPACITY, "needs 131,072 tokens of KV, the engine has 65,536", ())
    measured = replace(next(e for e in RUN1.decode if e.key == "256x4"), context=2048, concurrency=64, verdict=over)
    assert measured.trace is not None and measured.figures is not None and measured.summary is None
    entry = replace(measured, figures=None) if kept == "trace, no figures" else replace(measured, trace=None)
    c = compare_runs([replace(RUN1, decode=RUN1.decode + (entry,))], [replace(RUN2, decode=RUN2.decode + (entry,))],
                     CompareSettings(metrics=("tok_s",)))
    row = next(r for r in c.rows if r.key == "2048x64")
    assert row.verdict == NOT_COMPARABLE != NOT_RUN_BOTH
    assert row.reason == "Over capacity in both; only Valid and Requests queued cells are judged"
