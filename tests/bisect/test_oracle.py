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

from inproc.bisect.oracle import (BAD, GOOD, OTHER, UNDECIDED, OracleSettings, decide, learned_spread, reference,
                                  regressed)
from inproc.bisect.runs import RunSample
from inproc.record.compact import CellAnatomy

STEPS, C, UNITS = 8, 2, 10
BASE_FORWARD_S, BASE_HOST_S = 0.0025, 0.0005
SETTINGS = OracleSettings(run_spread=0.05)


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


def test_a_doubled_step_is_the_regression_and_its_signature_is_forward_time(rng):
    ref = reference(runs(rng, 1, forward_s=BASE_FORWARD_S), runs(rng, 1, forward_s=2 * BASE_FORWARD_S + BASE_HOST_S),
                    SETTINGS.run_spread, "stated", SETTINGS)
    assert regressed(ref)
    assert 0.4 < ref.change.ratio < 0.65  # tok/s about halved
    assert ref.signature.term == "forward"


def test_no_change_is_no_regression(rng):
    ref = reference(runs(rng, 1, forward_s=BASE_FORWARD_S), runs(rng, 1, forward_s=BASE_FORWARD_S),
                    SETTINGS.run_spread, "stated", SETTINGS)
    assert not regressed(ref)


@pytest.mark.parametrize("extra_forward, expected", [(0.0, GOOD), (BASE_FORWARD_S + BASE_HOST_S, BAD)])
def test_candidates_like_good_and_like_bad_are_called_so_in_one_pair(rng, extra_forward, expected):
    ref = reference(runs(rng, 1, forward_s=BASE_FORWARD_S), runs(rng, 1, forward_s=2 * BASE_FORWARD_S + BASE_HOST_S),
                    SETTINGS.run_spread, "stated", SETTINGS)
    good = runs(rng, 2, forward_s=BASE_FORWARD_S)
    d = decide(ref, good, runs(rng, 1, forward_s=BASE_FORWARD_S + extra_forward), SETTINGS.run_spread, "stated",
               SETTINGS)
    assert d.verdict == expected, d.note


def test_slower_in_host_time_is_another_change(rng):
    ref = reference(runs(rng, 1, forward_s=BASE_FORWARD_S), runs(rng, 1, forward_s=2 * BASE_FORWARD_S + BASE_HOST_S),
                    SETTINGS.run_spread, "stated", SETTINGS)
    cand = runs(rng, 1, forward_s=BASE_FORWARD_S, host_s=BASE_HOST_S + BASE_FORWARD_S + BASE_HOST_S)
    d = decide(ref, runs(rng, 2, forward_s=BASE_FORWARD_S), cand, SETTINGS.run_spread, "stated", SETTINGS)
    assert d.verdict == OTHER, d.note
    assert d.signature.term == "host"


def test_half_the_regression_stays_undecided(rng):
    """A candidate exactly half-way cannot be told from either side: more pairs, then insufficient data."""
    ref = reference(runs(rng, 1, forward_s=BASE_FORWARD_S), runs(rng, 1, forward_s=2 * BASE_FORWARD_S + BASE_HOST_S),
                    SETTINGS.run_spread, "stated", SETTINGS)
    half = math.exp(ref.size / 2)  # the step-time factor half-way, in logs
    cand = runs(rng, 1, forward_s=(BASE_FORWARD_S + BASE_HOST_S) * half - BASE_HOST_S)
    d = decide(ref, runs(rng, 1, forward_s=BASE_FORWARD_S), cand, SETTINGS.run_spread, "stated", SETTINGS)
    assert d.verdict == UNDECIDED, d.note


def test_calls_match_the_truth_over_many_simulated_bisect_steps():
    """200 simulated candidates (half like good, half like bad, one pair each, noisier runs): no wrong call."""
    rng = np.random.default_rng(11)
    wrong, undecided = 0, 0
    for k in range(200):
        truth_bad = k % 2 == 1
        ref = reference(runs(rng, 1, forward_s=BASE_FORWARD_S, run_sd=0.06),
                        runs(rng, 1, forward_s=2 * BASE_FORWARD_S + BASE_HOST_S, run_sd=0.06), 0.06, "stated", SETTINGS)
        fwd = 2 * BASE_FORWARD_S + BASE_HOST_S if truth_bad else BASE_FORWARD_S
        d = decide(ref, runs(rng, 2, forward_s=BASE_FORWARD_S, run_sd=0.06), runs(rng, 1, forward_s=fwd, run_sd=0.06),
                   0.06, "stated", SETTINGS)
        undecided += d.verdict == UNDECIDED
        wrong += d.verdict == (GOOD if truth_bad else BAD)
    assert wrong == 0
    assert undecided < 20


def test_the_spread_is_learned_once_repeated_runs_give_enough_degrees_of_freedom():
    sd, source = learned_spread([[100.0, 102.0], [50.0]], 0.1)
    assert sd == 0.1 and "stated" in source and "on 1 degrees of freedom" in source
    groups = [[100.0, 104.0, 96.0, 101.0], [50.0, 52.0]]
    sd, source = learned_spread(groups, 0.1)
    logs = [np.log(g) for g in groups]
    expected = math.sqrt(sum(((x - x.mean()) ** 2).sum() for x in logs) / 4)
    assert sd == pytest.approx(expected) and "repeated runs" in source
    sd, source = learned_spread(groups, 0.1, learn=False)  # the stated one, with what the runs show
    assert sd == 0.1 and f"the runs show {expected * 100:.0f} % on 4 degrees of freedom" in source
