"""A cell's tok/s standard error from its sub-windows, and a cell's curve from its points.

Wrong code each test catches: a standard error from a fixed spread (the same for steady and uneven
windows), one from the whole window (zero sub-windows apart), a base counted as a speculative point.
"""
from __future__ import annotations

import numpy as np
import pytest

from inproc.sweep.breakeven import PAYS_ABOVE, UNDETERMINED
from inproc.sweep.pays import SpecPoint, cell_pays, tok_s_error, tpot_ms
from tests.measure.test_metrics import make_trace, req


def _trace(step_s):
    ends = np.cumsum(step_s)
    n = len(ends)
    return make_trace(ends, [1] * n, [req("a", list(range(n)))], open_s=0.0, window_s=float(ends[-1]) + 1)


def test_a_steady_window_has_a_tiny_error_and_an_uneven_one_a_larger_one():
    steady = tok_s_error(_trace([0.01] * 64))
    rng = np.random.default_rng(0)
    uneven = tok_s_error(_trace(list(0.01 * (1 + 0.5 * rng.standard_normal(64)).clip(0.2))))
    assert steady.n == 8 and uneven.n == 8
    assert steady.se < 1e-6 * 100 and uneven.se > 1.0  # tok/s about 100: one token per ~10 ms step
    assert tok_s_error(_trace([0.01])) is None


def test_tpot_is_the_inverse_of_per_request_rate():
    assert tpot_ms(50.0) == pytest.approx(20.0) and tpot_ms(None) is None


def test_a_cell_curve_uses_the_speculative_points_with_acceptance_and_names_the_others():
    base = SpecPoint(1, "no speculation", None, 1000.0, 5.0, 8, 10.0)
    spec = [SpecPoint(2, "k=1", 1.8, 700.0, 5.0, 8, 14.0), SpecPoint(3, "k=3", 3.6, 1400.0, 5.0, 8, 7.0),
            SpecPoint(4, "k=5", None, 300.0, 5.0, 8, 30.0)]
    c = cell_pays(256, 4, base, spec, ("k=7: Error",), 3.0)
    assert [p.name for p in c.points] == ["k=1", "k=3"]
    assert c.break_even.verdict == PAYS_ABOVE and c.break_even.length == pytest.approx(1.8 + 300 / (700 / 1.8), abs=0.01)
    assert c.left_out == ("k=7: Error", "k=5: no drafts in the window, no acceptance measured")
    assert c.speedup.ratio == pytest.approx((700 + (1400 - 700) / 1.8 * 1.2) / 1000, rel=1e-6)
    assert cell_pays(256, 4, None, spec, (), None).break_even.verdict == UNDETERMINED
