"""The compact medians and resamples against the expanded multiset, taken the plain way (np.median, Σ ÷ Σ)."""
from __future__ import annotations

import numpy as np
import pytest

from inproc.compare import stats
from inproc.compare import wmedian as wm
from inproc.compare.stats import PooledMedian, PooledRate, block_counts, block_length
from inproc.measure import metrics as m
from inproc.measure.trace import CellTrace, RequestTrace, StepTrace
from inproc.record.summarize import gap_counts


def _pool(rng: np.random.Generator, n_units: int, n_values: int, distinct: int):
    """Random (values, counts, units) with ties inside and across units, and some empty units."""
    values = rng.integers(0, distinct, n_values) / 8  # few distinct values: many ties
    counts = rng.integers(1, 6, n_values)
    units = rng.integers(0, n_units, n_values)
    units[units == 1] = 0  # unit 1 stays empty
    return values, counts, units


def _expanded(values, counts, units, draws):
    """The pooled resample itself: each unit's values, each repeated by its count, the unit by its draws."""
    return np.concatenate([np.repeat(values[units == u], counts[units == u] * k) for u, k in enumerate(draws)])


@pytest.mark.parametrize("seed", range(6))
def test_median_of_counts_is_numpys_median_of_the_expanded_values(seed):
    rng = np.random.default_rng(seed)
    for size in (1, 2, 3, 10, 101):
        values = np.sort(rng.integers(0, 7, size) / 4)
        counts = rng.integers(0, 4, size)
        counts[0] = max(counts[0], 1)
        for c in (counts, counts + (counts.sum() % 2)):  # odd and even totals
            assert wm.median_of_counts(values, c) == np.median(np.repeat(values, c))
    assert np.isnan(wm.median_of_counts(np.array([1.0]), np.array([0])))


@pytest.mark.parametrize("seed", range(4))
def test_resampled_medians_match_numpys_median_of_each_pooled_resample(seed):
    rng = np.random.default_rng(seed)
    values, counts, units = _pool(rng, 6, 40, 9)
    s = PooledMedian.of_counts(values, counts, units, 6)
    assert s.statistic() == np.median(np.repeat(values, counts))
    distinct, table = wm.rank_table(s.values, s.unit_of, s.weights, s.n_units)
    draws = rng.integers(0, 3, (300, 6))
    draws[0] = 0  # nothing drawn: no median
    draws[1] = [0, 5, 0, 0, 0, 0]  # the empty unit only
    got = wm.resampled_medians(distinct, table, draws)
    assert np.isnan(got[:2]).all()
    for row, value in zip(draws[2:], got[2:]):
        pooled = _expanded(values, counts, units, row)
        assert value == np.median(pooled) if pooled.size else np.isnan(value), row
    assert {p.size % 2 for p in (_expanded(values, counts, units, r) for r in draws[2:])} == {0, 1}


def test_both_ways_of_resampling_a_median_agree_exactly(monkeypatch):
    rng = np.random.default_rng(7)
    values, counts, units = _pool(rng, 12, 500, 40)
    s = PooledMedian.of_counts(values, counts, units, 12)
    assert s._rank_table() is not None
    with_table = s.resampled(np.random.default_rng(3), 700)
    monkeypatch.setattr(stats, "RANK_TABLE_CELLS", 0)  # weigh every value instead
    assert s._rank_table() is None
    weighed = s.resampled(np.random.default_rng(3), 700)
    assert np.array_equal(with_table, weighed, equal_nan=True)
    draws = block_counts(np.random.default_rng(3), 12, block_length(12), 700)
    expected = [np.median(p) if (p := _expanded(values, counts, units, row)).size else np.nan for row in draws]
    assert np.array_equal(weighed, expected, equal_nan=True)


def test_resampled_rate_is_tokens_over_seconds_of_the_drawn_units():
    rng = np.random.default_rng(5)
    tokens, seconds = rng.integers(50, 200, 30).astype(float), rng.uniform(0.9, 1.1, 30)
    got = PooledRate(tokens, seconds).resampled(np.random.default_rng(11), 500)
    draws = block_counts(np.random.default_rng(11), 30, block_length(30), 500)
    for row, value in zip(draws, got):
        picked = np.repeat(np.arange(30), row)
        assert value == pytest.approx(tokens[picked].sum() / seconds[picked].sum(), rel=1e-13)


def test_draws_do_not_depend_on_how_resamples_are_chunked():
    # The resamples are drawn in chunks that bound memory; the seed alone fixes them.
    whole = block_counts(np.random.default_rng(2), 30, 3, 1000)
    rng = np.random.default_rng(2)
    parts = np.concatenate([block_counts(rng, 30, 3, k) for k in (1, 499, 500)])
    assert np.array_equal(whole, parts)


def test_gap_counts_are_the_per_token_gaps_by_sub_window():
    # Arrivals that skip steps and speculative arrivals of several tokens, beside the usual one per step.
    ends = np.cumsum(np.random.default_rng(1).uniform(0.01, 0.02, 40))
    reqs = [RequestTrace("a", 10, 100, 0.0, True, list(range(40)), [1] * 40),
            RequestTrace("b", 10, 100, 0.0, True, [0, 2, 3, 4, 7, 8, 9, 15, 20, 21, 22],
                         [1, 2, 1, 3, 1, 1, 2, 1, 4, 1, 1]),
            RequestTrace("c", 10, 100, 0.0, True, list(range(5, 35)), [1, 2] * 15),
            RequestTrace("d", 10, 100, 0.0, True, [30], [1])]
    steps = StepTrace.of(t_start_s=ends - 0.005, t_end_s=ends, num_running=np.full(40, 3))
    trace = CellTrace(steps, reqs, float(ends[1]), float(ends[36] - ends[1]))
    w = m.window(trace)
    subs = m.subwindows(trace, w, every_steps=6)
    values, counts, units = gap_counts(trace, w, subs)
    assert np.array_equal(np.sort(np.repeat(values, counts)), np.sort(m.tbt_intervals_s(trace, w)))
    assert np.all(np.diff(units) >= 0) and np.all((np.diff(values) > 0) | (np.diff(units) > 0))  # each pair once
    for k, sub in enumerate(subs):  # a gap belongs to the sub-window of its arrival
        arrivals = [(s, c, prev) for r in reqs for prev, s, c in zip(r.token_steps, r.token_steps[1:], r.token_counts[1:])
                    if w.first_step <= prev and sub.first_step <= s <= sub.last_step]
        expected = np.sort(np.concatenate([np.full(c, (ends[s] - ends[p]) / c) for s, c, p in arrivals]))
        assert np.array_equal(np.sort(np.repeat(values[units == k], counts[units == k])), expected), k
    assert m.output_tokens_each(trace, subs).tolist() == [m.output_tokens(trace, s) for s in subs]
    once = CellTrace(steps, [RequestTrace(str(i), 10, 100, 0.0, True, [i], [1]) for i in range(40)], trace.window_open_s,
                     trace.window_target_s)  # every request arrives once: no gap
    assert [a.size for a in gap_counts(once, w, subs)] == [0, 0, 0]

