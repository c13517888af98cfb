"""The spread's pieces (``inproc.compare.spread``) on numbers whose answers are known by hand or from scipy's own
distributions: the within-group sums, the Benjamini–Hochberg step-up at its exact boundaries and its adjusted
p-values, the change test's standard error and its zero-spread cases, and trigamma's inverse."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import polygamma

from inproc.compare.spread import Spread, _trigamma_inverse, adjusted, change_test, night_alarms, residual_ss

ROWS = np.array(["a", "b", "c", "d"])


def test_the_within_group_sums_add_over_groups_and_a_lone_figure_adds_nothing():
    # [1, 3]: 1 + 1 = 2 on 1 df; [5]: nothing; [2, 4, 6]: 4 + 0 + 4 = 8 on 2 df.
    assert residual_ss([[1, 3], [5], [2, 4, 6]]) == (10.0, 3)
    assert residual_ss([[7]]) == (0.0, 0)


def test_the_step_up_rejects_up_to_the_last_p_value_under_its_line_including_one_on_it():
    """alpha = 1/4 over 4 rows: lines at 1/16, 2/16, 3/16, 4/16. 0.0625 and 0.25 lie exactly on theirs (``<`` for
    ``<=`` loses them); 0.1875 and 0.2 lie above theirs but below 0.25's rank, so the step-up takes them too."""
    assert ROWS[night_alarms([0.2, 0.1875, 0.0625, 0.25], 0.25)].tolist() == ["a", "b", "c", "d"]
    assert ROWS[night_alarms([0.2, 0.1875, 0.0625, 0.3], 0.25)].tolist() == ["c"]
    assert ROWS[night_alarms([0.3, 0.3, 0.3, 0.3], 0.25)].tolist() == []
    assert night_alarms([0.01]).tolist() == [True] and night_alarms([0.06]).tolist() == [False]
    assert night_alarms([]).size == 0 and ROWS[:0][night_alarms([])].size == 0


def test_adjusted_p_values_are_the_least_alpha_at_which_each_row_is_an_alarm():
    """Sorted 0.01, 0.03, 0.04, 0.5 scale to 0.04, 0.06, 0.0533, 0.5; each takes the least from its rank on."""
    got = adjusted([0.01, 0.04, 0.03, 0.5])
    assert got == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.5], rel=1e-12)
    for alpha in (0.04, 0.05, 0.06):
        assert (got <= alpha).tolist() == night_alarms([0.01, 0.04, 0.03, 0.5], alpha).tolist()
    assert adjusted([0.3]).tolist() == [0.3] and adjusted([]).size == 0


def test_the_change_test_uses_both_sides_counts_and_the_t_distribution():
    """Logs 0 and 0.1 against 0.3, σ = 0.1 on 4 df: d = 0.25, se = 0.1 · √(1/2 + 1/1), p from scipy's t."""
    got = change_test([0.0, 0.1], [0.3], Spread(0.1, 4, "test"))
    assert got.log_ratio == pytest.approx(0.25, rel=1e-12) and got.se == pytest.approx(0.1 * math.sqrt(1.5), rel=1e-12)
    assert got.p_change == pytest.approx(2 * stats.t.sf(0.25 / (0.1 * math.sqrt(1.5)), 4), rel=1e-9)
    assert got.df == 4 and got.confidence == 0.95


def test_with_no_spread_any_change_is_certain_and_none_is_not():
    assert change_test([0.0, 0.0], [0.1], Spread(0.0, 4, "test")).p_change == 0.0
    assert change_test([0.1, 0.1], [0.1], Spread(0.0, 4, "test")).p_change == 1.0


@pytest.mark.parametrize("x", [0.01, 0.5, 3.0, 50.0])
def test_trigammas_inverse_gives_back_its_argument(x):
    y = _trigamma_inverse(x)
    assert float(polygamma(1, y)) == pytest.approx(x, rel=1e-9)
