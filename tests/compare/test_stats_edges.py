"""The statistics' edges (``inproc.compare.stats``) against answers known by hand or from numpy's own median: how
resamples are cut into chunks, the weighted median of rows that drew nothing, one value or two, the between-run
interval on one degree of freedom and with runs on both sides, an interval's own ends, and the seeded bootstrap."""
from __future__ import annotations

import math

import numpy as np
import pytest

from inproc.compare import stats
from inproc.compare.stats import Interval, PooledMedian, PooledRate, _chunks, _weighted_median, between_run_interval


@pytest.mark.parametrize("count, width, sizes", [
    (5, 1_500_000, [2, 2, 1]),  # 4,000,000 values a chunk: 2 resamples of 1.5 M values, and the 1 left
    (3, 10_000_000, [1, 1, 1]),  # a resample wider than a chunk: still one at a time, never none
    (3, 1, [3]),  # narrow: all at once
    (3, 0, [3]),  # no values (an empty sample): all at once
    (3_000_001, 1, [3_000_001]),  # 3,000,001 resamples of 1 value fit one chunk of 4 M
])
def test_resamples_are_drawn_in_chunks_of_at_most_four_million_values_that_add_up_to_the_count(count, width, sizes):
    """Would fail: the last chunk's remainder counted from the wrong end, at least 2 resamples a chunk, a width
    of 1 read as 2."""
    assert stats.CHUNK_VALUES == 4_000_000
    assert list(_chunks(count, width)) == sizes


def test_the_weighted_median_of_each_row_is_numpys_median_of_its_values_repeated():
    """Rows of draws over 5 values, with rows that drew nothing (no median: NaN), one value, two values (their
    mean), and many: each row against ``np.median`` of the values repeated by its draws (would fail: rows lifted
    too little to keep apart, the two-draw row's mean, the NaN of an empty row, a row of one draw)."""
    values = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    rng = np.random.default_rng(5)
    draws = np.vstack([np.zeros(5, int), [0, 0, 1, 0, 0], [1, 0, 0, 1, 0], [0, 3, 0, 0, 0], [0, 0, 0, 0, 2],
                       rng.integers(0, 4, size=(200, 5)), np.zeros(5, int)])
    got = _weighted_median(values, np.cumsum(draws, axis=1))
    for row, value in zip(draws, got):
        if row.sum() == 0:
            assert math.isnan(value), row
        else:
            assert value == np.median(np.repeat(values, row)), row
    assert got[1:5].tolist() == [4.0, 4.5, 2.0, 16.0]
    # The row with the most draws (6) is followed by one whose first value is drawn: were each row lifted by less
    # than the most draws plus one, the rows' running sums would overlap and the second row read the first's.
    assert _weighted_median(values, np.cumsum([[0, 1, 1, 2, 2], [2, 0, 0, 0, 0]], axis=1)).tolist() == [8.0, 1.0]


def test_the_between_run_interval_on_one_degree_of_freedom():
    """Baseline 1 and e^0.2, one new run at e^0.5: d = 0.4, s² = 0.02 on 1 df, SE = √0.02·√(1/2 + 1) = 0.173205;
    t(0.975, 1) = 12.706205: exp(0.4 ± 2.200779) (would fail: 1 df refused)."""
    r = between_run_interval([1.0, math.exp(0.2)], [math.exp(0.5)])
    assert r.df == 1 and r.ratio == pytest.approx(math.exp(0.4))
    half = 12.706204736174698 * math.sqrt(0.02) * math.sqrt(1.5)
    assert (r.interval.low, r.interval.high) == pytest.approx((math.exp(0.4 - half), math.exp(0.4 + half)), rel=1e-9)


def test_the_between_run_interval_pools_both_sides_runs():
    """Baseline 1 and e^0.2, new e^0.5 and e^0.7: d = 0.5, s² = (0.02 + 0.02) ÷ 2 on 2 df, SE = √0.02·√(1/2 + 1/2);
    t(0.975, 2) = 4.302653 (would fail: the new side's squares subtracted, doubled or cubed, 1/R_new as R_new)."""
    r = between_run_interval([1.0, math.exp(0.2)], [math.exp(0.5), math.exp(0.7)])
    half = 4.302652729911275 * math.sqrt(0.02)
    assert r.df == 2 and r.ratio == pytest.approx(math.exp(0.5))
    assert (r.interval.low, r.interval.high) == pytest.approx((math.exp(0.5 - half), math.exp(0.5 + half)), rel=1e-9)


def test_one_baseline_run_against_three_new_runs_has_an_interval_and_a_side_of_none_has_not():
    """Baseline 1, new e^0.1, e^0.2, e^0.3: d = 0.2, s² = 0.02 ÷ 2, SE = 0.1·√(1 + 1/3) (would fail: a one-run
    baseline refused). No baseline run at all, or no new run: no interval, though 3 runs give 1 df."""
    r = between_run_interval([1.0], [math.exp(0.1), math.exp(0.2), math.exp(0.3)])
    half = 4.302652729911275 * 0.1 * math.sqrt(4 / 3)
    assert r.df == 2 and (r.interval.low, r.interval.high) == pytest.approx(
        (math.exp(0.2 - half), math.exp(0.2 + half)), rel=1e-9)
    assert between_run_interval([], [1.0, 2.0, 3.0]) is None
    assert between_run_interval([1.0, 2.0, 3.0], []) is None


def test_an_interval_holds_its_own_ends():
    i = Interval(0.9, 1.1)
    assert not i.excludes(0.9) and not i.excludes(1.1) and not i.excludes(1.0)
    assert i.excludes(0.8999) and i.excludes(1.1001)


def test_the_bootstrap_is_the_same_for_the_same_seed_and_another_for_another():
    """Twenty units of distinct rates: resamples drawn from the seed given (would fail: an unseeded generator)."""
    rng = np.random.default_rng(0)
    base = PooledRate(rng.uniform(50, 150, 20), np.ones(20))
    new = PooledRate(rng.uniform(50, 150, 20), np.ones(20))
    first = stats.bootstrap_ratio(base, new, resamples=500, seed=4)
    assert stats.bootstrap_ratio(base, new, resamples=500, seed=4) == first
    assert stats.bootstrap_ratio(base, new, resamples=500, seed=5) != first
    assert stats.bootstrap_ratio(base, new) == stats.bootstrap_ratio(base, new)  # the default seed


def test_a_sample_of_no_units_has_no_values():
    s = PooledMedian.of([])
    assert s.values.size == 0 and s.unit_of.size == 0 and s.n == 0
