"""The statistics against values worked out by hand (or by exact enumeration), not against themselves."""
from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest

from inproc.compare.stats import (Interval, PooledMedian, PooledRate, RunSpread, between_run_interval, block_counts,
                                  block_length, bootstrap_ratio, geometric_mean, t_quantile, widen)


def test_block_length_grows_as_the_cube_root():
    assert [block_length(n) for n in (1, 2, 3, 4, 10, 27, 60, 64, 1000)] == [1, 1, 1, 2, 2, 3, 4, 4, 10]


def test_circular_blocks_match_exact_enumeration():
    # n = 3 units, blocks of 2: two starts s1, s2 in 0..2 (9 equally likely pairs); the resample is
    # units s1, s1+1 (mod 3), s2, cut to 3. E.g. (2, 0) draws units 2, 0, 0: counts (2, 0, 1).
    exact = Counter()
    for s1, s2 in itertools.product(range(3), repeat=2):
        exact[tuple(np.bincount([s1, (s1 + 1) % 3, s2], minlength=3))] += 1 / 9
    drawn = block_counts(np.random.default_rng(0), 3, 2, 90_000)
    assert (drawn.sum(axis=1) == 3).all()
    seen = Counter(map(tuple, drawn))
    assert set(seen) == set(exact)
    for counts, p in exact.items():
        assert seen[counts] / 90_000 == pytest.approx(p, abs=0.006), counts
    # One block as long as the run: every resample is the run itself, rotated (each unit once).
    assert (block_counts(np.random.default_rng(1), 5, 5, 50) == 1).all()


def test_bootstrap_of_pooled_rate_matches_exact_enumeration():
    # Baseline 1, 2, 3 tokens in 1 s each (3 units: blocks of 1, an ordinary bootstrap): a resample's
    # rate is (sum of 3 draws) / 3; sums 3..9 with chances 1, 3, 6, 7, 6, 3, 1 in 27. New is a constant
    # 2 tok/s, so ratio = 6 / sum. Each end atom (sum 9: 2/3, sum 3: 2) holds 1/27 = 3.7 % > 2.5 %:
    # the 95 % interval is exactly [2/3, 2].
    base = PooledRate(np.array([1.0, 2.0, 3.0]), np.ones(3))
    new = PooledRate(np.array([2.0, 2.0, 2.0]), np.ones(3))
    ci = bootstrap_ratio(base, new, resamples=4000, seed=1)
    assert (ci.low, ci.high) == pytest.approx((2 / 3, 2.0))
    assert new.statistic() / base.statistic() == pytest.approx(1.0)
    assert bootstrap_ratio(base, new, seed=3) == bootstrap_ratio(base, new, seed=3)  # seeded


def test_pooled_median_of_a_resample_is_numpys_median_of_the_pooled_values():
    units = [np.array([5.0, 1.0]), np.array([]), np.array([2.0, 2.0, 9.0]), np.array([4.0]), np.array([7.0, 3.0])]
    s = PooledMedian.of(units)
    assert s.n == 5 and s.statistic() == np.median(np.concatenate(units)) == 3.5
    rng = np.random.default_rng(2)
    counts = block_counts(rng, 5, 2, 300)
    weights = np.cumsum(counts[:, s.unit_of], axis=1)
    from inproc.compare.stats import _weighted_median

    got = _weighted_median(s.values, weights)
    for row, value in zip(counts, got):
        pooled = np.concatenate([np.tile(u, k) for u, k in zip(units, row)])
        assert value == (np.median(pooled) if pooled.size else value), row  # empty: nan
    assert np.isfinite(s.resampled(np.random.default_rng(3), 500)).mean() > 0.95


def test_t_quantiles_match_the_table():
    for df, t in ((1, 12.7062), (2, 4.3027), (4, 2.7764), (8, 2.3060), (10, 2.2281), (30, 2.0423)):
        assert t_quantile(0.975, df) == pytest.approx(t, abs=1e-4)
    assert t_quantile(0.95, 5) == pytest.approx(2.0150, abs=1e-4)


def test_widen_adds_the_run_spread_in_quadrature():
    # σ = 0.05: the difference of two runs has half-width z(0.975)·√2·σ = 1.959964·0.070711 = 0.138590.
    # A within-run interval exp(±0.1) around 1 becomes exp(±√(0.1² + 0.138590²)) = exp(±0.170901).
    w = widen(1.0, Interval(math.exp(-0.1), math.exp(0.1)), RunSpread(0.05, 8, "by hand"))
    assert (w.low, w.high) == pytest.approx((0.842905, 1.186374), abs=1e-5)
    # Lopsided, σ = 0.07 (h = 0.194026): ratio 1.2 within [1.1, 1.25]: below ln(1.2/1.1) = 0.087011 →
    # √(0.087011² + h²) = 0.212644, above ln(1.25/1.2) = 0.040822 → 0.198274;
    # exp(ln 1.2 − 0.212644) = 0.970133, exp(ln 1.2 + 0.198274) = 1.463156.
    lop = widen(1.2, Interval(1.1, 1.25), RunSpread(0.07, 8, "by hand"))
    assert (lop.low, lop.high) == pytest.approx((0.970133, 1.463156), abs=1e-5)
    assert not lop.excludes(1.0) and Interval(1.1, 1.25).excludes(1.0)  # within-run alone would have called it


def test_between_run_interval_by_hand():
    # Baseline 100, 110, 121 (logs step by a = ln 1.1), one new run at 110: d = 0; pooled
    # s² = 2a² / 2 (df = 2), SE = a·sqrt(1/3 + 1) = 0.110055; t(0.975, 2) = 4.302653;
    # interval exp(±0.473526) = [0.622803, 1.605644].
    r = between_run_interval([100, 110, 121], [110])
    assert r.ratio == pytest.approx(1.0) and r.df == 2
    assert (r.interval.low, r.interval.high) == pytest.approx((0.622803, 1.605644), abs=1e-5)
    assert between_run_interval([100], [110]) is None  # no side has two runs: no spread between runs
    assert geometric_mean([1, 4]) == pytest.approx(2.0) and math.isclose(geometric_mean([3]), 3)
