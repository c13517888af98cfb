"""The oracle's check of its own reference, and the sequential rule, on simulated runs whose truth is known."""
from __future__ import annotations

import math

import numpy as np
import pytest

from inproc.bisect.agree import AGREE_ALPHA, SpreadInUse, clusters_text, in_use, off_level, robust_start, two_clusters
from inproc.bisect.looks import look_alpha


def test_runs_of_one_build_are_called_off_their_level_at_most_at_the_alarm_rate():
    """20,000 sets of 2-12 runs of one build (spread 3 %): the share with any run called off is ≤ AGREE_ALPHA."""
    rng = np.random.default_rng(5)
    alarms, sets = 0, 20_000
    for k in range(sets):
        alarms += any(off_level(rng.normal(0, 0.03, 2 + k % 11), 0.03))
    rate = alarms / sets
    assert rate <= AGREE_ALPHA * 1.15, rate  # 1.15: the rate's own sampling error over 20,000 sets
    assert rate > AGREE_ALPHA / 20  # the band is a test, not a wall nothing reaches


@pytest.mark.parametrize("slowdown", [1.2, 2.0, 6.0])
def test_a_run_the_machine_slowed_is_off_its_level(slowdown):
    rng = np.random.default_rng(2)
    others = 0
    for _ in range(200):
        logs = rng.normal(math.log(160), 0.02, 6)
        logs[3] -= math.log(slowdown)
        flags = off_level(logs, 0.02)
        assert flags[3]
        others += sum(flags) - 1
    assert others <= 4  # the runs on the level: flagged at the alarm rate at most (expected ≤ 2 of 200 sets)


def test_a_given_spread_the_runs_agree_with_is_kept_and_one_they_exceed_is_replaced():
    rng = np.random.default_rng(9)
    given = SpreadInUse(0.02, math.inf, "history's")
    quiet = [list(rng.normal(0, 0.02, 6)), list(rng.normal(-0.1, 0.02, 6))]
    spread, flags = in_use(quiet, given)
    assert spread is given and not any(f for g in flags for f in g)
    noisy = [list(rng.normal(0, 0.08, 8)), list(rng.normal(-0.1, 0.08, 8))]
    spread, _ = in_use(noisy, given)
    assert spread.switched and 0.04 < spread.sigma < 0.16
    assert "more than history's (2.0 %): the runs' spread is used" in spread.source


def test_the_chi_square_check_of_a_given_spread_alarms_at_most_at_its_rate():
    rng = np.random.default_rng(4)
    given, trials = SpreadInUse(0.05, math.inf, "stated"), 5000
    switched = sum(in_use([list(rng.normal(0, 0.05, 5)), list(rng.normal(0, 0.05, 3))], given)[0].switched
                   for _ in range(trials))
    assert switched / trials <= AGREE_ALPHA * 1.3  # runs flagged off are left out first: the rate can only fall


def test_the_learned_spread_sees_past_a_slow_stretch():
    """Seven good runs at 2 %, three of them slowed 5x alike: the start ignores the stretch, the stretch is off."""
    rng = np.random.default_rng(1)
    logs = list(rng.normal(math.log(160), 0.02, 7))
    for k in (2, 3, 4):
        logs[k] -= math.log(5)
    assert robust_start([logs]) < 0.06
    spread, flags = in_use([logs], None)
    assert flags[0] == [False, False, True, True, True, False, False]
    assert spread.sigma < 0.04 and spread.df == 3 and "learned" in spread.source


def test_the_looks_spend_exactly_the_error_rate():
    for looks in (1, 2, 5, 8, 20):
        assert sum(look_alpha(k, looks, 0.05) for k in range(1, looks + 1)) == pytest.approx(0.05)
    assert look_alpha(8, 8, 0.05) == pytest.approx(0.025)


def test_runs_of_one_build_fall_in_two_clusters_at_most_at_the_alarm_rate():
    """20,000 sets of 4-16 runs of one build at this machine's widest clean spread (16.6 %): two clusters in ≤ 1 %."""
    rng = np.random.default_rng(8)
    hits = sum(two_clusters(rng.normal(0, 0.166, 4 + k % 13)) is not None for k in range(20_000))
    assert hits / 20_000 <= AGREE_ALPHA, hits
    # A one-build spread that wide and a run-to-run spread of 2-10 % never split at all.
    assert not any(two_clusters(rng.normal(0, (0.02, 0.10)[k % 2], 4 + k % 13)) for k in range(4000))


def test_a_machine_loaded_half_the_time_puts_the_runs_in_two_clusters():
    """Half the runs 3-12x slower (log-uniform), the rest at a 5 % spread: two clusters in most sets of 8-16 runs (checked again at every look of a bisect),
    named by their ranges; the loaded bisect's good runs too."""
    rng = np.random.default_rng(3)
    found = 0
    for k in range(1000):
        n = 8 + k % 9
        slow = rng.random(n) < 0.5
        logs = rng.normal(math.log(100), 0.05, n) - np.where(slow, rng.uniform(math.log(3), math.log(12), n), 0)
        got = two_clusters(logs)
        found += got is not None
        if got is not None:  # the split is between the loaded and the quiet runs
            assert max(got[0]) < min(got[1]) and max(got[0]) < math.log(100 / 2)
    assert found >= 700, found  # 78 %: a set whose loaded share fell under a third is not split (the bisect looks again)
    runs = [9.4, 96.9, 11.2, 67.0, 23.0, 116.0, 96.0, 14.1, 88.5]  # the loaded bisect's good runs, in their order
    assert clusters_text(np.log(runs), "the good revision's") == \
        "the good revision's runs fall in two clusters (9.4–23.0 and 67.0–116.0 tok/s)"
    # One run slowed alone (a third of the runs is the least a cluster holds) is off its level, not a cluster.
    assert two_clusters(np.log([100.0, 101.0, 99.0, 30.0, 100.5, 98.0])) is None
