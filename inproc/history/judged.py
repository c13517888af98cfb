"""A history judged on numbers alone: rows × nights of log figures in, levels, changes and the newest night's verdicts out.

``inproc.history.build`` feeds it a history's figures and turns what it finds into
changes with diagnoses; a simulation feeds it figures whose truth is known. The steps:

1. a first walk (``levels.walk``) with a robust spread of the night-to-night steps;
2. each row's spread from the residuals around that walk's levels, moderated across the
   metric's rows (``compare.spread.moderated_spreads``);
3. the walk again with those spreads: levels, confirmed changes, outlier nights;
4. each confirmed change tested (the new level's nights against the old level's), and the
   newest night tested against its row's level, all rows of the newest night under one
   alarm rate; verdicts by ``compare.verdicts.judge_test``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from inproc.compare.spread import MIN_SPREAD_DF, NIGHT_ALPHA, THRESHOLD_CONFIDENCE, ChangeTest, Spread, moderated_spreads, night_alarms, change_test
from inproc.compare.verdicts import FASTER, INSUFFICIENT, SLOWER, judge_test
from inproc.history.levels import Departure, RowLevels, residuals, robust_spreads, walk


@dataclass(frozen=True)
class LevelChange:
    """A confirmed change of one row: its first night, the night that confirmed it, both levels and the test.

    ``after`` holds the new level's nights from the confirming one on: the departure night
    itself was chosen by the alarm, and is left out of the measured change.
    """

    row: int
    departure: Departure
    confirmed_by: int
    before: tuple[int, ...]
    after: tuple[int, ...]
    test: ChangeTest
    verdict: str  # slower, faster, or not significant (a new level within the threshold)
    reason: str


@dataclass(frozen=True)
class NewestRow:
    """The newest night on one row: against which nights, the test (None: insufficient data), the verdict."""

    row: int
    before: tuple[int, ...]
    test: ChangeTest | None
    alarm: bool
    verdict: str
    reason: str


@dataclass(frozen=True)
class Judged:
    spreads: tuple[Spread | None, ...]
    levels: tuple[RowLevels, ...]
    changes: tuple[LevelChange, ...]
    newest: tuple[NewestRow, ...]


def learn_spreads(metrics: Sequence[str], values: np.ndarray, window: int) -> list[Spread | None]:
    """Each row's spread from its own nights' residuals about a first walk's levels, moderated per metric."""
    first: list[Spread | None] = [None] * len(metrics)
    for metric in dict.fromkeys(metrics):
        idx = [k for k, m in enumerate(metrics) if m == metric]
        for k, s in zip(idx, robust_spreads(values[idx])):
            first[k] = s
    ss, df = residuals(values, walk(values, first, window))
    spreads: list[Spread | None] = [None] * len(metrics)
    for metric in dict.fromkeys(metrics):
        idx = [k for k, m in enumerate(metrics) if m == metric]
        found = moderated_spreads([ss[k] for k in idx], [df[k] for k in idx], "learned from the nights' levels")
        for k, s in zip(idx, found):
            spreads[k] = s
    return spreads


def _present(values: np.ndarray, k: int, nights: range, dropped: set[int]) -> list[int]:
    return [i for i in nights if i not in dropped and not math.isnan(values[k, i])]


def _changes(values, metrics, spreads, levels, window, threshold, tc) -> list[LevelChange]:
    out = []
    nights = values.shape[1]
    for k, lv in enumerate(levels):
        starts = sorted(set(lv.starts)) + [nights]
        dropped = {d.night for d in lv.outliers}
        for d, confirmed_by in lv.confirmed:
            at = starts.index(d.night)
            before = _present(values, k, range(starts[at - 1], d.night), dropped)[-window:]
            after = _present(values, k, range(d.night, starts[at + 1]), dropped)
            # The night that raised the alarm was chosen for being far out: the change is measured on the nights
            # after it (the confirming night on), so the choice does not inflate it.
            after = after[1:] if len(after) > 1 else after
            t = change_test(values[k, before], values[k, after], spreads[k])
            verdict, reason = judge_test(t, metrics[k], threshold, True, tc)
            out.append(LevelChange(k, d, confirmed_by, tuple(before), tuple(after), t, verdict, reason))
    return out


def _newest(values, metrics, spreads, levels, threshold, alpha, tc) -> list[NewestRow]:
    last = values.shape[1] - 1
    out: list[NewestRow] = []
    tested: list[tuple[int, tuple[int, ...], ChangeTest]] = []
    for k, lv in enumerate(levels):
        before = lv.newest_level
        if math.isnan(values[k, last]) or not before:
            continue
        sp = spreads[k]
        if sp is None or sp.df < MIN_SPREAD_DF:
            df = 0 if sp is None else sp.df
            t = change_test(values[k, list(before)], [values[k, last]], sp) if sp is not None else None
            out.append(NewestRow(k, before, t, False, INSUFFICIENT,
                                 f"{len(before)} night{'s' if len(before) != 1 else ''} in the level, "
                                 f"a spread on {df:.0f} degrees of freedom; need {MIN_SPREAD_DF}"))
            continue
        tested.append((k, before, change_test(values[k, list(before)], [values[k, last]], sp)))
    for (k, before, t), alarm in zip(tested, night_alarms([t.p_change for *_, t in tested], alpha)):
        verdict, reason = judge_test(t, metrics[k], threshold, bool(alarm), tc)
        out.append(NewestRow(k, before, t, bool(alarm), verdict, reason))
    return sorted(out, key=lambda r: r.row)


def judge_values(values: np.ndarray, metrics: Sequence[str], window: int, threshold: float,
                 alpha: float = NIGHT_ALPHA, threshold_confidence: float = THRESHOLD_CONFIDENCE) -> Judged:
    """The whole judgement of rows × nights of log figures (NaN: no figure); ``metrics[k]`` names row k's metric."""
    spreads = learn_spreads(metrics, values, window)
    levels = walk(values, spreads, window, alpha)
    tc = threshold_confidence
    return Judged(tuple(spreads), tuple(levels), tuple(_changes(values, metrics, spreads, levels, window, threshold, tc)),
                  tuple(_newest(values, metrics, spreads, levels, threshold, alpha, tc)))


def slower_rows(j: Judged) -> list[int]:
    """Rows the newest night is slower on."""
    return [r.row for r in j.newest if r.verdict == SLOWER]


def lasting(j: Judged, kinds: tuple[str, ...] = (SLOWER, FASTER)) -> list[LevelChange]:
    """Confirmed changes called slower or faster."""
    return [c for c in j.changes if c.verdict in kinds]
