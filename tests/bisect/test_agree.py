"""The oracle's check of its own reference, and the sequential rule, on simulated runs whose truth is known."""
from __future__ import annotations

import math

import numpy as np
import pytest

from inproc.bisect.agree import AGREE_ALPHA, SpreadInUse, in_use, off_level, robust_start
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
