"""The spread learned across rows (``inproc.compare.spread``: ``prior``, ``_too_noisy``, ``moderated_spreads``) on
rows whose answer is derived by hand from the documented rule (Smyth 2004): digamma(1) = −γ, digamma(2) = 1 − γ,
trigamma(1) = π²/6, trigamma(2) = π²/6 − 1 (γ Euler's constant), and F quantiles from scipy's own distribution."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import digamma, polygamma

from inproc.compare.spread import RESOLUTION, Spread, _too_noisy, _trigamma_inverse, moderated_spreads, prior

G = float(np.euler_gamma)


def test_rows_of_equal_variance_give_the_log_means_bias_undone_and_an_infinite_weight():
    """Three rows of s² = 1 on 2 df: E log(χ²₂ ÷ 2) = digamma(1) − log 1 = −γ, so the common variance is e^γ
    (would fail: the bias term's sign, its log(d/2), the mean over rows)."""
    s0, d0 = prior(np.array([2.0, 2.0, 2.0]), np.array([2.0, 2.0, 2.0]))
    assert s0 == pytest.approx(math.exp(G), rel=1e-12) and d0 == math.inf


def test_rows_of_equal_variance_on_unequal_degrees_of_freedom():
    """s² = 1 on 2 df and on 4 df: e = log s² − digamma(d/2) + log(d/2) is γ and γ − 1 + log 2;
    their variance (n − 1 = 1) (1 − log 2)² ÷ 2 = 0.047 is below the mean trigamma (π²/6 − 1/2 = 1.14), so the rows
    agree: the common variance is exp(mean e) and its weight ∞."""
    s0, d0 = prior(np.array([2.0, 4.0]), np.array([2.0, 4.0]))
    assert s0 == pytest.approx(math.exp(G + (math.log(2) - 1) / 2), rel=1e-12) and d0 == math.inf  # would fail: d/2 for log(d/2)


def test_rows_that_differ_more_than_their_degrees_of_freedom_explain_get_a_finite_weight():
    """s² = 1 and 100 on 2 df: e = log s² + γ, so the excess variance is (log 100)² ÷ 2 − π²/6, and d0 ÷ 2 is
    where trigamma takes that value; the common variance is exp(mean e + digamma(d0/2) − log(d0/2))."""
    s0, d0 = prior(np.array([2.0, 200.0]), np.array([2.0, 2.0]))
    excess = math.log(100) ** 2 / 2 - math.pi ** 2 / 6
    assert 0 < d0 < math.inf and float(polygamma(1, d0 / 2)) == pytest.approx(excess, rel=1e-7)
    assert s0 == pytest.approx(math.exp(math.log(10) + G + float(digamma(d0 / 2)) - math.log(d0 / 2)), rel=1e-7)


def test_rows_without_spread_or_degrees_of_freedom_are_left_out_of_the_prior():
    """A row with no spread (s² = 0: its log is −∞) or no degrees of freedom says nothing of the common variance
    (would fail: ``>=`` for either ``>``); one row left is taken as it is, with no weight; none: no prior."""
    assert prior(np.array([0.0, 2.0]), np.array([2.0, 2.0])) == (1.0, 0.0)
    assert prior(np.array([5.0, 2.0]), np.array([0.0, 2.0])) == (1.0, 0.0)
    s0, d0 = prior(np.array([0.0, 1.0]), np.array([3.0, 0.0]))
    assert math.isnan(s0) and d0 == 0.0


@pytest.mark.parametrize("d0, denominator", [(10.0, 10.0), (math.inf, 1e6), (0.0, 1e6)])
def test_a_row_is_too_noisy_just_beyond_the_f_distributions_99th_percentile(d0, denominator):
    """Rows on 4 df against s0² = 2: s² ÷ s0² against F(4, d0)'s 99th percentile (d0 = ∞ or none: F(4, 10⁶), a
    χ²₄ ÷ 4); just under it is not, just over it is; a row with no degrees of freedom never is."""
    q = float(stats.f.ppf(0.99, 4, denominator))
    ss = np.array([4 * 2 * q * (1 - 1e-6), 4 * 2 * q * (1 + 1e-6), 50.0])
    assert _too_noisy(ss, np.array([4.0, 4.0, 0.0]), 2.0, d0).tolist() == [False, True, False]


def test_rows_that_agree_share_the_pooled_spread_and_all_their_degrees_of_freedom():
    """Three rows of s² = 1 on 2 df and a row with none: each gets √e^γ on 6 df (the pooled rows' df; the row
    without its own df too), said as pooled over the 3 rows that have some."""
    got = moderated_spreads([2.0, 2.0, 2.0, 0.0], [2, 2, 2, 0], "4 runs")
    want = Spread(math.sqrt(math.exp(G)), 6.0, "4 runs, pooled over 3 rows (df 6)")
    assert got == [want] * 4


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_a_lone_row_keeps_its_own_spread_and_a_row_with_nothing_to_learn_from_has_none():
    """One row: s² = 0.18 ÷ 2 = 0.09, σ 0.3 on its own 2 df; beside it a row with no df has no spread, found without
    computing its own variance 0 ÷ 0 (fails on a rule that reaches the division first)."""
    assert moderated_spreads([0.18, 0.0], [2, 0], "2 runs") == [Spread(0.3, 2.0, "2 runs, its own (df 2)"), None]


def test_rows_of_no_spread_at_all_get_the_resolution_on_their_own_degrees_of_freedom():
    """Figures that repeat exactly: no prior (every s² is 0), so a row keeps its own 0, raised to the resolution
    (0.1 %); a row with no degrees of freedom gets none."""
    got = moderated_spreads([0.0, 0.0], [3, 0], "2 runs")
    assert got == [Spread(RESOLUTION, 3.0, "2 runs, its own (df 3)"), None]


def test_a_moderated_row_is_its_weighted_mean_with_the_prior_and_its_df_are_capped_at_the_pooled_ones():
    """Rows of s² = e^−x, 1, e^x on 2 df with x² = π²/6 + 0.1: an excess of 0.1 over trigamma(1), so d0 ÷ 2 has
    trigamma 0.1 (about 21 df). Each row's variance is (d0·s0² + ss) ÷ (d0 + 2), strictly between its own and s0²,
    on min(d0 + 2, 6) = 6 df: the three rows' (would fail: ``max``, or d0 alone)."""
    x = math.sqrt(math.pi ** 2 / 6 + 0.1)
    ss = [2 * math.exp(-x), 2.0, 2 * math.exp(x)]
    s0, d0 = prior(np.array(ss), np.full(3, 2.0))
    assert float(polygamma(1, d0 / 2)) == pytest.approx(0.1, rel=1e-7) and d0 > 4
    got = moderated_spreads(ss, [2, 2, 2], "3 runs")
    for row, s in zip(got, ss):
        assert row.log_sd ** 2 == pytest.approx((d0 * s0 + s) / (d0 + 2), rel=1e-12)
        assert min(s / 2, s0) < row.log_sd ** 2 < max(s / 2, s0)
        assert row.df == 6.0 and row.source == "3 runs, moderated over 3 rows (df 6)"


def test_a_row_on_one_degree_of_freedom_is_tested_for_noise_too():
    """s² = 5,000 on 1 df against s0² = 1 with d0 = 10: F(1, 10)'s 99th percentile is 10.04 (would fail: rows of
    1 df left out of the test)."""
    assert _too_noisy(np.array([5000.0, 1.0]), np.array([1.0, 1.0]), 1.0, 10.0).tolist() == [True, False]


def test_a_row_exactly_at_the_99th_percentile_is_not_too_noisy():
    """s² ÷ s0² equal to the quantile itself is within what the common variance allows (would fail: ``>=``)."""
    q = float(stats.f.ppf(0.99, 1, 10))
    assert _too_noisy(np.array([q]), np.array([1.0]), 1.0, 10.0).tolist() == [False]


def test_a_small_finite_weight_is_used_as_it_is_in_the_noise_test():
    """d0 = 0.5: F(4, 0.5)'s 99th percentile is far above F(4, ∞)'s (3.3), so a row 100 times the common variance
    is not too noisy (would fail: d0 up to 1 read as ∞)."""
    assert float(stats.f.ppf(0.99, 4, 0.5)) > 100 > float(stats.f.ppf(0.99, 4, 1e6))
    assert _too_noisy(np.array([400.0]), np.array([4.0]), 1.0, 0.5).tolist() == [False]
    assert _too_noisy(np.array([400.0]), np.array([4.0]), 1.0, math.inf).tolist() == [True]


@pytest.mark.parametrize("x", [1e4, 1e5])
def test_trigammas_inverse_converges_for_rows_that_differ_enormously(x):
    """y near 1 ÷ x: the stopping rule is on the step relative to y (would fail: the step times y, which stops
    after one step when y is small)."""
    y = _trigamma_inverse(x)
    assert float(polygamma(1, y)) == pytest.approx(x, rel=1e-9)


def test_a_moderated_rows_degrees_of_freedom_are_its_own_plus_the_priors_when_under_the_pool():
    """s² = 1 and 100 on 2 df: d0 = 0.712 (under 1), so each row rests on d0 + 2 = 2.71 df, under the 4 pooled."""
    s0, d0 = prior(np.array([2.0, 200.0]), np.array([2.0, 2.0]))
    got = moderated_spreads([2.0, 200.0], [2, 2], "2 rows")
    assert 0 < d0 < 2 and [g.df for g in got] == [pytest.approx(d0 + 2, rel=1e-12)] * 2
    assert got[0].source == "2 rows, moderated over 2 rows (df 3)"


def test_rows_of_one_degree_of_freedom_are_rows_and_a_spread_on_one_df_is_a_spread():
    """Three rows of s² = 0.5 on 1 df each agree: pooled over 3 rows on 3 df. A lone row of no spread on 1 df:
    the resolution on its 1 df (would fail: rows of 1 df not counted, a spread on 1 df dropped)."""
    got = moderated_spreads([0.5, 0.5, 0.5], [1, 1, 1], "3 runs")
    assert [g.source for g in got] == ["3 runs, pooled over 3 rows (df 3)"] * 3 and got[0].df == 3.0
    assert moderated_spreads([0.0], [1], "2 runs") == [Spread(RESOLUTION, 1.0, "2 runs, its own (df 1)")]


def test_a_row_with_nothing_to_learn_from_does_not_end_the_list():
    """The rows after one with no spread still get theirs (would fail: the loop stopped at it)."""
    got = moderated_spreads([0.0, 0.0], [0, 3], "2 runs")
    assert got == [None, Spread(RESOLUTION, 3.0, "2 runs, its own (df 3)")]
