"""The oracle's decisions on simulated child runs whose truth is known (no engine, no timing).

Each simulated run has ten sub-windows of 8 steps at C = 2; its step time is the revision's
true step time × a run-level factor (the spread between children, log sd 3 %) × a
sub-window factor (log sd 5 %). Its anatomy puts the extra time where the revision's
change puts it: forward time (the regression) or host time (another change).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from inproc.bisect.agree import SpreadInUse
from inproc.bisect.looks import look_alpha
from inproc.bisect.oracle import BAD, GOOD, OTHER, UNDECIDED, OracleSettings, decide, reference, regressed
from inproc.bisect.runs import RunSample
from inproc.record.compact import CellAnatomy

STEPS, C, UNITS = 8, 2, 10
BASE_FORWARD_S, BASE_HOST_S = 0.0025, 0.0005
SETTINGS = OracleSettings()
SPREAD = SpreadInUse(0.03, math.inf, "stated")
LAST = SETTINGS.max_pairs  # the last look: the level is the rest of the error rate


def run(rng, forward_s: float, host_s: float = BASE_HOST_S, run_sd: float = 0.03, unit_sd: float = 0.05) -> RunSample:
    step_s = (forward_s + host_s) * math.exp(rng.normal(0, run_sd))
    seconds = STEPS * step_s * np.exp(rng.normal(0, unit_sd, UNITS))
    tokens = np.full(UNITS, STEPS * C, dtype=float)
    anatomy = CellAnatomy(steps=STEPS * UNITS, window_s=float(seconds.sum()), output_tokens=STEPS * UNITS * C,
                          step_s=float(seconds.sum()) / (STEPS * UNITS), host_s=host_s * math.exp(rng.normal(0, run_sd)))
    return RunSample(tokens, seconds, anatomy)


def runs(rng, n, **kw):
    return [run(rng, **kw) for _ in range(n)]


@pytest.fixture()
def rng():
    return np.random.default_rng(7)


def doubled(rng, n: int = 3):
    """The reference: a doubled step (forward time) at the bad revision, n runs a side."""
    return reference(runs(rng, n, forward_s=BASE_FORWARD_S), runs(rng, n, forward_s=2 * BASE_FORWARD_S + BASE_HOST_S),
                     SPREAD, 1, SETTINGS)


def test_a_doubled_step_is_the_regression_and_its_signature_is_forward_time(rng):
    ref = doubled(rng)
    assert regressed(ref), ref.reason
    assert 0.4 < ref.change.ratio < 0.65  # tok/s about halved
    assert ref.signature.term == "forward"
    assert f"look 1 of {SETTINGS.max_pairs}" in ref.reason


def test_no_change_is_no_regression(rng):
    ref = reference(runs(rng, 3, forward_s=BASE_FORWARD_S), runs(rng, 3, forward_s=BASE_FORWARD_S), SPREAD, LAST,
                    SETTINGS)
    assert not regressed(ref)


@pytest.mark.parametrize("extra_forward, expected", [(0.0, GOOD), (BASE_FORWARD_S + BASE_HOST_S, BAD)])
def test_candidates_like_good_and_like_bad_are_called_so(rng, extra_forward, expected):
    ref = doubled(rng)
    d = decide(ref, runs(rng, 4, forward_s=BASE_FORWARD_S), runs(rng, 2, forward_s=BASE_FORWARD_S + extra_forward),
               SPREAD, 2, SETTINGS)
    assert d.verdict == expected, d.note


def test_slower_in_host_time_is_another_change(rng):
    ref = doubled(rng)
    cand = runs(rng, 2, forward_s=BASE_FORWARD_S, host_s=BASE_HOST_S + BASE_FORWARD_S + BASE_HOST_S)
    d = decide(ref, runs(rng, 4, forward_s=BASE_FORWARD_S), cand, SPREAD, 2, SETTINGS)
    assert d.verdict == OTHER, d.note
    assert d.signature.term == "host"


def test_half_the_regression_stays_undecided(rng):
    """A candidate exactly half-way cannot be told from either side: more pairs, then insufficient data."""
    ref = doubled(rng)
    half = math.exp(ref.size / 2)  # the step-time factor half-way, in logs
    cand = runs(rng, 2, forward_s=(BASE_FORWARD_S + BASE_HOST_S) * half - BASE_HOST_S)
    d = decide(ref, runs(rng, 4, forward_s=BASE_FORWARD_S), cand, SPREAD, 2, SETTINGS)
    assert d.verdict == UNDECIDED, d.note


@pytest.mark.parametrize("step_factor, words", [(0.5, "surely faster than the good revision"),
                                                (4.0, "surely slower than the bad revision too")])
def test_a_candidate_beyond_both_revisions_is_not_called(rng, step_factor, words):
    """Runs faster than good or slower than bad are what a drifting machine makes: neither good nor bad."""
    ref = doubled(rng)
    cand = runs(rng, 3, forward_s=(BASE_FORWARD_S + BASE_HOST_S) * step_factor - BASE_HOST_S)
    d = decide(ref, runs(rng, 4, forward_s=BASE_FORWARD_S), cand, SPREAD, 3, SETTINGS)
    assert d.verdict == UNDECIDED and words in d.note, d.note


def test_an_earlier_look_asks_for_more_than_the_last():
    """The sequential rule: the interval of an interim look is wider than the last look's, on the same runs."""
    rng = np.random.default_rng(3)
    ref = doubled(rng)
    good, cand = runs(rng, 4, forward_s=BASE_FORWARD_S), runs(rng, 2, forward_s=BASE_FORWARD_S)
    first = decide(ref, good, cand, SPREAD, 1, SETTINGS).change.interval
    last = decide(ref, good, cand, SPREAD, LAST, SETTINGS).change.interval
    assert first.low < last.low and first.high > last.high
    assert look_alpha(1, LAST, SETTINGS.call_alpha) < look_alpha(LAST, LAST, SETTINGS.call_alpha)
