"""The spread learned across rows, the change test, and one alarm rate over a night's rows, on numbers with a known truth."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from inproc.compare.spread import (Spread, adjusted, moderated_spreads, night_alarms, prior, residual_ss, t_quantile,
                                   change_test)


def test_benjamini_hochberg_on_a_worked_example():
    p = [0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205, 0.212, 0.216]
    # k = 2 is the largest with p(k) <= 0.05 k / 10 (0.008 <= 0.01; 0.039 > 0.015, 0.041 > 0.02, 0.042 > 0.025).
    assert night_alarms(p, 0.05).tolist() == [True, True] + [False] * 8
    assert (adjusted(p) <= 0.05).tolist() == night_alarms(p, 0.05).tolist()
    # Order does not matter, and many small p-values lift each other (step-up).
    assert night_alarms([0.04, 0.03, 0.02, 0.01], 0.05).all()
    assert not night_alarms([0.04, 0.9, 0.9, 0.9], 0.05).any()
    assert night_alarms([], 0.05).size == 0


def test_a_clean_night_of_many_rows_alarms_at_most_alpha_of_the_time():
    rng = np.random.default_rng(7)
    nights = [night_alarms(rng.uniform(size=36), 0.05).any() for _ in range(4000)]
    assert 0.035 < np.mean(nights) < 0.065  # Simes: exactly alpha for independent rows


def test_test_change_is_the_t_test_on_logs():
    base, new = np.log([100, 103, 98, 101]), np.log([90.0])
    sp = Spread(0.02, 12, "by hand")
    t = change_test(base, new, sp)
    d = math.log(90) - base.mean()
    se = 0.02 * math.sqrt(1 / 4 + 1)
    assert t.log_ratio == pytest.approx(d) and t.se == pytest.approx(se)
    assert t.p_change == pytest.approx(2 * stats.t.sf(abs(d) / se, 12))
    low, high = t.interval()
    assert low == pytest.approx(math.exp(d - stats.t.ppf(0.975, 12) * se))
    assert t.at_least(0.8) == pytest.approx(math.exp(abs(d) - stats.t.ppf(0.8, 12) * se))
    assert change_test(base, [base.mean()], sp).at_least(0.8) == 1.0  # no change: the bound stops at none
    assert t_quantile(0.975, math.inf) == pytest.approx(1.959964, rel=1e-6)


def test_rows_whose_variances_agree_are_pooled_and_a_noisier_row_keeps_its_own():
    rng = np.random.default_rng(3)
    groups = [rng.normal(0, 0.02, 8) for _ in range(12)]
    parts = [residual_ss([g]) for g in groups]
    found = moderated_spreads([p[0] for p in parts], [p[1] for p in parts], "test")
    assert len({round(s.log_sd, 12) for s in found}) == 1 and found[0].df == 12 * 7  # d0 = ∞: one spread
    assert 0.017 < found[0].log_sd < 0.023 and "pooled over 12 rows" in found[0].source
    noisy = groups[:11] + [rng.normal(0, 0.20, 8)]  # one cell ten times noisier
    parts = [residual_ss([g]) for g in noisy]
    found = moderated_spreads([p[0] for p in parts], [p[1] for p in parts], "test")
    own = math.sqrt(parts[11][0] / parts[11][1])
    assert found[11].log_sd == pytest.approx(own) and "its own, noisier than the other rows" in found[11].source
    assert found[11].df == 7  # and its own degrees of freedom: the pool does not vouch for it
    assert 0.017 < found[0].log_sd < 0.023 and found[0].df == 11 * 7  # the others are pooled without it


def test_the_prior_recovers_a_known_common_variance():
    rng = np.random.default_rng(11)
    df = np.full(400, 5.0)
    ss = 0.03 ** 2 * rng.chisquare(5, 400)  # every row's variance the same: s0 = 0.03, d0 = ∞
    s0, d0 = prior(ss, df)
    assert math.sqrt(s0) == pytest.approx(0.03, rel=0.05) and d0 > 50
    # Rows whose true variances differ (scaled inverse chi-square with 8 degrees of freedom): a finite d0 near 8.
    true = 0.03 ** 2 * 8 / rng.chisquare(8, 4000)
    ss = true * rng.chisquare(5, 4000)
    s0, d0 = prior(ss, np.full(4000, 5.0))
    assert 5 < d0 < 13 and math.sqrt(s0) == pytest.approx(0.03, rel=0.1)
    assert moderated_spreads([0.0], [0], "none") == [None]


def test_a_regression_in_many_rows_is_easier_to_call_than_in_one():
    # The same evidence (p = 0.004) on one row of 36 is no alarm; on 12 rows of 36 every one of them is.
    one = night_alarms([0.004] + [0.5] * 35, 0.05)
    many = night_alarms([0.004] * 12 + [0.5] * 24, 0.05)
    assert not one.any() and many[:12].all() and not many[12:].any()
