"""The history walk's two small rules (``inproc.history.levels``) on log figures whose answers are known by hand:
a night against a level (its p-value and direction, or "cannot judge"), the night after a departure confirming it
or not (the 99 % bound of two nights' difference, t·σ·√2), and the spread's residuals leaving outlier nights out."""
from __future__ import annotations

import math

import numpy as np
import pytest

from inproc.compare.spread import Spread
from inproc.history.levels import Departure, RowLevels, _confirms, _p, residuals

SPREAD = Spread(0.01, math.inf, "test")  # σ = 1 % known: the bound of two nights' difference is 2.5758 · 0.01 · √2


def test_a_night_against_its_level_has_a_p_value_and_a_direction_of_one_step():
    values = np.array([0.0, 0.0, 0.0, 0.05, -0.05])
    up, down = _p(values, [0, 1, 2], 3, SPREAD), _p(values, [0, 1, 2], 4, SPREAD)
    assert up[1] == 1 and down[1] == -1 and up[0] == down[0] < 1e-4  # z = 0.05 / (0.01 · √(4/3)) = 4.33
    # Nothing to judge against, or no spread: p 1, no direction.
    assert _p(values, [], 3, SPREAD) == (1.0, 0) and _p(values, [0, 1, 2], 3, None) == (1.0, 0)


def test_the_next_night_confirms_a_departure_only_within_the_bound_of_two_nights_difference():
    """A departure to +0.10: a next night at +0.09 sits with it (0.01 ≤ 0.0364) and confirms; one at +0.06 is away
    from the level too but 0.04 from the departed night, beyond the bound (√3 for √2 would take it): no."""
    departed = Departure(night=3, direction=1, p_change=1e-9)
    for nxt, confirms in ((0.09, True), (0.06, False), (-0.09, False)):
        values = np.array([0.0, 0.0, 0.0, 0.10, nxt])
        assert bool(_confirms(values, [0, 1, 2], 4, SPREAD, departed)) is confirms, nxt
    values = np.array([0.0, 0.0, 0.0, 0.10, 0.09])
    assert _confirms(values, [0, 1, 2], 4, None, departed) is False
    assert _confirms(values, [], 4, SPREAD, departed) is False


def test_the_residuals_leave_out_outliers_departed_and_pending_nights_and_the_newest():
    """Nights 0..6 of one level: 0.02 at night 2 is an outlier, night 6 is the newest. The rest, 0, 0.01, 0.01, 0,
    0.01 (mean 0.006), give 2 · 0.006² + 3 · 0.004² = 0.00012 on 4 df (the outlier kept would make it 0.00028)."""
    values = np.array([[0.0, 0.01, 0.02, 0.01, 0.0, 0.01, 0.5]])
    row = RowLevels(starts=[0], outliers=[Departure(2, 1, 1e-9)])
    (ss,), (df,) = residuals(values, [row])
    assert df == 4 and ss == pytest.approx(0.00012, rel=1e-9)
