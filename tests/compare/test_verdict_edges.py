"""compare's judgement of one tested row and its settings' checks (``inproc.compare.verdicts``), at the edges the
rules draw: a change exactly at the threshold, the words of each verdict with a known bound (a test with no spread:
its bound is the change itself), and each refused setting's message."""
from __future__ import annotations

import math

import pytest

from inproc.compare.spread import ChangeTest
from inproc.compare.verdicts import FASTER, NOT_SIGNIFICANT, SLOWER, CompareSettings, judge_test
from inproc.errors import UsageError


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
