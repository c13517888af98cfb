"""The walk through a history's nights on figures whose truth is set by hand: levels, confirmed changes, outliers."""
from __future__ import annotations

import math

import numpy as np

from inproc.compare.verdicts import INSUFFICIENT, NOT_SIGNIFICANT, SLOWER
from inproc.history.judged import judge_values, lasting, slower_rows
from inproc.history.levels import MIN_LEVEL

# Night-to-night noise of about 2 % (fixed draws, so each case is exact), around a figure of 100.
NOISE = [0.0, 0.018, -0.021, 0.007, -0.012, 0.015, -0.004, 0.011, -0.017, 0.006, -0.009, 0.013]


def rows(*series: list[float]) -> np.ndarray:
    return np.log(np.array(series, dtype=float))


def noisy(n: int, level: float = 100.0, start: int = 0) -> list[float]:
    return [level * math.exp(NOISE[(start + i) % len(NOISE)]) for i in range(n)]


def test_a_flat_series_has_one_level_and_no_alarm():
    j = judge_values(rows(noisy(12)), ["tok_s"], 10, 0.05)
    assert j.changes == () and j.levels[0].starts == [0] and j.levels[0].outliers == []
    (newest,) = j.newest
    assert newest.verdict == NOT_SIGNIFICANT and not newest.alarm
    assert newest.before == tuple(range(1, 11))  # at most 10 nights of the level


def test_a_step_is_a_change_at_its_first_night_confirmed_by_the_next():
    series = noisy(6) + noisy(6, 80.0, 6)  # tok/s down 20 % from night 6
    j = judge_values(rows(series), ["tok_s"], 10, 0.05)
    (c,) = lasting(j)
    assert c.departure.night == 6 and c.confirmed_by == 7 and c.verdict == SLOWER
    assert c.before == (0, 1, 2, 3, 4, 5) and c.after == tuple(range(7, 12))  # measured from the confirming night on
    assert 0.76 < c.test.ratio < 0.84
    assert j.levels[0].starts == [0, 6]
    # The new level holds; its mean is taken from the confirming night on (night 6 raised the alarm: chosen).
    assert j.newest[0].before == (7, 8, 9, 10) and j.newest[0].verdict == NOT_SIGNIFICANT


def test_a_night_that_departs_alone_is_an_outlier_and_the_level_holds():
    series = noisy(12)
    series[7] *= 1.25  # a time 25 % up on night 7 only
    j = judge_values(rows(series), ["tbt"], 10, 0.05)
    assert j.changes == ()
    assert [d.night for d in j.levels[0].outliers] == [7]
    assert 7 not in j.newest[0].before and j.newest[0].verdict == NOT_SIGNIFICANT


def test_the_newest_night_alone_is_judged_on_that_night_and_nothing_before_it_is_blamed():
    series = noisy(12)
    series[11] *= 1.2  # the newest night's time 20 % up
    j = judge_values(rows(series), ["tbt"], 10, 0.05)
    assert j.changes == () and j.levels[0].outliers == []
    (newest,) = j.newest
    assert newest.alarm and newest.verdict == SLOWER and newest.before == tuple(range(1, 11))
    assert slower_rows(j) == [0]


def test_a_regression_then_its_fix_are_two_changes():
    series = noisy(5) + noisy(4, 115.0, 5) + noisy(5, 100.0, 9)
    j = judge_values(rows(series), ["ttft"], 10, 0.05)
    assert [(c.departure.night, c.verdict) for c in lasting(j)] == [(5, SLOWER), (9, "faster")]


def test_nights_without_a_figure_are_skipped_and_a_level_of_one_night_is_not_left():
    series = noisy(8)
    series[3] = math.nan
    series[6:] = [v * 0.8 for v in series[6:]]
    j = judge_values(rows(series), ["tok_s"], 10, 0.05)
    (c,) = lasting(j)
    assert c.departure.night == 6 and 3 not in c.before
    # One night is no level to leave: a departure from it joins it.
    short = judge_values(rows([100.0, 80.0, 81.0, 79.5]), ["tok_s"], 10, 0.05)
    assert MIN_LEVEL == 2 and short.levels[0].starts == [0]


def test_rows_of_one_night_are_judged_together_and_too_few_nights_are_insufficient():
    twelve = np.array([rows(noisy(12, 100.0, k))[0] for k in range(12)])
    twelve[:6, 11] += math.log(1.10)  # six rows 10 % up on the newest night
    j = judge_values(twelve, ["tbt"] * 12, 10, 0.05)
    assert set(slower_rows(j)) <= set(range(6)) and len(slower_rows(j)) >= 4
    assert all(sp.df > 100 for sp in j.spreads)  # pooled over the twelve rows
    few = judge_values(rows([100.0, 101.0]), ["tbt"], 10, 0.05)
    assert [r.verdict for r in few.newest] == [INSUFFICIENT] and few.newest[0].reason == "1 night in the level, a spread on 0 degrees of freedom; need 3"
