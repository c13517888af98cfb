"""The statistics against values worked out by hand (or by exact enumeration), not against themselves."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from inproc.compare.stats import (Median, PooledRate, between_run_interval, bootstrap_ratio, geometric_mean,
                                  mann_whitney_u, t_quantile)


def test_mann_whitney_without_ties():
    # x below every y: U = 0; E[U] = 9/2, Var(U) = 3·3/12 · 7 = 5.25;
    # z = (0 - 4.5 + 0.5) / sqrt(5.25) = -1.745743; p = erfc(1.745743 / sqrt 2) = 0.080856
    # (R: wilcox.test(1:3, 4:6, exact = FALSE) gives p-value = 0.08086).
    r = mann_whitney_u([1, 2, 3], [4, 5, 6])
    assert r.u == 0 and r.z == pytest.approx(-1.745743, abs=1e-6) and r.p == pytest.approx(0.080856, abs=1e-6)
    assert mann_whitney_u([4, 5, 6], [1, 2, 3]).u == 9  # U_x + U_y = nx·ny


def test_mann_whitney_with_ties():
    # Pooled 1,2,2,2,3,3,3,4: ranks 1; 3,3,3 (2..4); 6,6,6 (5..7); 8. x = 1,2,2,3 has rank sum 13,
    # U = 13 - 4·5/2 = 3 (pairs: 2 vs 2 twice at 1/2, 3 > 2 once, 3 vs 3 twice at 1/2).
    # Ties: groups of 3 and 3 give Σ(t³ - t) = 48; Var(U) = 16/12 · (9 - 48/56) = 10.857143;
    # z = (3 - 8 + 0.5) / 3.295018 = -1.365698; p = erfc(1.365698 / sqrt 2) = 0.172034.
    r = mann_whitney_u([1, 2, 2, 3], [2, 3, 3, 4])
    assert r.u == 3 and r.z == pytest.approx(-1.365698, abs=1e-6) and r.p == pytest.approx(0.172034, abs=1e-6)


def test_mann_whitney_u_counts_pairs_and_equal_samples_give_p_1():
    rng = np.random.default_rng(5)
    x, y = rng.integers(0, 6, 40), rng.integers(2, 8, 30)  # many ties
    pairs = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in x for b in y)
    assert mann_whitney_u(x, y).u == pytest.approx(pairs)
    assert mann_whitney_u([2.0] * 5, [2.0] * 4).p == 1.0
    assert mann_whitney_u([1, 2, 3, 4], [1, 2, 3, 4]).p == 1.0  # |U - E[U]| = 0 < 1/2


def test_bootstrap_of_pooled_rate_matches_exact_enumeration():
    # Baseline 1, 2, 3 tokens in 1 s each: a resample's rate is (sum of 3 draws) / 3; sums 3..9 with
    # chances 1, 3, 6, 7, 6, 3, 1 in 27. New is a constant 2 tok/s, so ratio = 6 / sum. Each end
    # atom (sum 9: 2/3, sum 3: 2) holds 1/27 = 3.7 % > 2.5 %: the 95 % interval is exactly [2/3, 2].
    base = PooledRate(np.array([1.0, 2.0, 3.0]), np.ones(3))
    new = PooledRate(np.array([2.0, 2.0, 2.0]), np.ones(3))
    ci = bootstrap_ratio(base, new, resamples=4000, seed=1)
    assert (ci.low, ci.high) == pytest.approx((2 / 3, 2.0))
    assert new.statistic() / base.statistic() == pytest.approx(1.0)
    assert bootstrap_ratio(base, new, seed=3) == bootstrap_ratio(base, new, seed=3)  # seeded


@pytest.mark.parametrize("values", [[1.0, 2.0, 4.0, 8.0], [1.0, 2.0, 4.0, 8.0, 16.0], [3.0, 3.0, 5.0, 9.0]])
def test_median_resamples_follow_the_exact_bootstrap_distribution(values):
    # The exact bootstrap distribution: all n^n resamples, equally likely, each's np.median.
    exact = {}
    for pick in itertools.product(values, repeat=len(values)):
        med = float(np.median(pick))
        exact[med] = exact.get(med, 0) + 1 / len(values) ** len(values)
    drawn = Median.of(values).resampled(np.random.default_rng(0), 200_000)
    for med, p in exact.items():
        assert np.mean(drawn == med) == pytest.approx(p, abs=0.004), med
    assert set(np.unique(drawn)) <= set(exact)


def test_t_quantiles_match_the_table():
    for df, t in ((1, 12.7062), (2, 4.3027), (4, 2.7764), (10, 2.2281), (30, 2.0423)):
        assert t_quantile(0.975, df) == pytest.approx(t, abs=1e-4)
    assert t_quantile(0.95, 5) == pytest.approx(2.0150, abs=1e-4)


def test_between_run_interval_by_hand():
    # Baseline 100, 110, 121 (logs step by a = ln 1.1), one new run at 110: d = 0; pooled
    # s² = 2a² / 2 (df = 2), SE = a·sqrt(1/3 + 1) = 0.110055; t(0.975, 2) = 4.302653;
    # interval exp(±0.473526) = [0.622803, 1.605644].
    r = between_run_interval([100, 110, 121], [110])
    assert r.ratio == pytest.approx(1.0) and r.df == 2
    assert (r.interval.low, r.interval.high) == pytest.approx((0.622803, 1.605644), abs=1e-5)
    assert between_run_interval([100], [110]) is None  # no side has two runs: no spread between runs
    assert geometric_mean([1, 4]) == pytest.approx(2.0) and math.isclose(geometric_mean([3]), 3)
