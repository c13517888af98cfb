"""The levels of a history: each row's nights, walked oldest first, split where the level changes.

A row is one cell and metric; its value on a night is the log of that night's figure (NaN:
no figure). Each night is judged as the nightly job judged it when it was the newest:
against the row's current level (its nights since the last confirmed change, at most
``window`` of them, outliers left out), with the row's spread, and with one alarm rate
over all the rows of that night (``inproc.compare.spread.night_alarms``). Then hindsight:

- a night that raised an alarm on a row is **pending**. When the row's next night also
  departs from the old level in the same direction (one-sided, at ``CONFIRM_ALPHA``) and
  is not shown to differ from the pending night, the change is **confirmed**: a new
  level starts at the pending night (its mean taken from the confirming night on: the
  pending night was chosen for being far out). Otherwise the pending night was an **outlier**: it is
  left out of the level, which holds;
- a level of fewer than ``MIN_LEVEL`` nights is not left: a departure from it joins it;
- the newest night has no night after it: its alarms are the verdict of the night.

Nothing here chose a split and then tested it on the same data: a night is tested against
nights before it only, and confirmed by a night after it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from inproc.compare.spread import (NIGHT_ALPHA, RESOLUTION, Spread, change_test, night_alarms, residual_ss, t_quantile,
                                   t_sf)

#: A departure is confirmed when the next night departs the same way at this one-sided level.
CONFIRM_ALPHA = 0.05
#: A level of fewer nights cannot be left: with one night, a change after it and an odd first
#: night look the same, so a departure from it joins it instead.
MIN_LEVEL = 2


@dataclass(frozen=True)
class Departure:
    """A night that raised an alarm on a row: the change against the level before it."""

    night: int
    direction: int  # +1: the log figure went up, −1: down
    p_change: float


@dataclass
class RowLevels:
    """What the walk found in one row: level starts, outlier nights, and the level the newest night met."""

    starts: list[int] = field(default_factory=list)  # the first night of each level (the first level: its first night)
    confirmed: list[tuple[Departure, int]] = field(default_factory=list)  # (the change, the night that confirmed it)
    outliers: list[Departure] = field(default_factory=list)
    level: list[int] = field(default_factory=list)  # nights of the current level, outliers and a change's departed night left out
    newest_level: tuple[int, ...] = ()  # the level the newest night was judged against
    pending: Departure | None = None


def _against(values: np.ndarray, level: Sequence[int], window: int) -> list[int]:
    return [i for i in level if not math.isnan(values[i])][-window:]


def _p(values: np.ndarray, level: Sequence[int], night: int, spread: Spread | None) -> tuple[float, int]:
    """(two-sided p-value of night against the level, direction); p 1 when it cannot be judged."""
    if spread is None or not level:
        return 1.0, 0
    t = change_test(values[list(level)], [values[night]], spread)
    return t.p_change, (1 if t.log_ratio > 0 else -1)


def _confirms(values, level, night, spread: Spread | None, d: Departure) -> bool:
    """The night after a departure confirms it: away from the old level the same way, and not shown to differ from it.

    The second condition (the two nights differ by less than their two-sided 99 % bound,
    t·σ·√2) tells a change from an outlier of any size: after a change the next night sits
    with the departed one; after an outlier it comes back towards the level. It does not
    ask the next night to sit nearer the departed night than the level: the departed night
    was chosen for being far out, and a real change's next night often sits between.
    """
    if spread is None or not level:
        return False
    t = change_test(values[list(level)], [values[night]], spread)
    away = t.log_ratio * d.direction > 0 and t_sf(abs(t.log_ratio) / t.se, t.df) <= CONFIRM_ALPHA
    together = abs(values[night] - values[d.night]) <= t_quantile(0.995, t.df) * spread.log_sd * math.sqrt(2)
    return away and together


def walk(values: np.ndarray, spreads: Sequence[Spread | None], window: int,
         alpha: float = NIGHT_ALPHA) -> list[RowLevels]:
    """The levels of every row of ``values`` (rows × nights, log figures, NaN for none), nights oldest first."""
    rows, nights = values.shape
    out = [RowLevels() for _ in range(rows)]
    for i in range(nights):
        judged: list[tuple[int, float, int]] = []  # (row, p, direction)
        for r in range(rows):
            v, s = values[r], out[r]
            if math.isnan(v[i]):
                continue
            base = _against(v, s.level, window)
            if i == nights - 1:
                s.newest_level = tuple(base)
            if s.pending is not None:
                d, s.pending = s.pending, None
                if _confirms(v, base, i, spreads[r], d):
                    s.confirmed.append((d, i))
                    s.starts.append(d.night)
                    s.level = [i]  # the departed night was chosen for being far out: the level is measured without it
                    if i == nights - 1:
                        s.newest_level = (d.night,)
                    continue
                s.outliers.append(d)
            if not s.level:
                s.starts.append(i)
                s.level = [i]
                continue
            p, direction = _p(v, base, i, spreads[r])
            judged.append((r, p, direction))
        alarms = night_alarms([p for _, p, _ in judged], alpha)
        for (r, p, direction), alarm in zip(judged, alarms):
            s = out[r]
            if alarm and i < nights - 1 and len(s.level) >= MIN_LEVEL:
                s.pending = Departure(i, direction, p)
            elif not alarm or len(s.level) < MIN_LEVEL:
                s.level.append(i)
    return out


def residuals(values: np.ndarray, levels: Sequence[RowLevels]) -> tuple[list[float], list[int]]:
    """Per row, (Σ squared deviations from each level's mean, degrees of freedom), the newest night left out.

    Outlier nights, the departed night of each confirmed change (chosen for being far out)
    and a pending night are left out: the spread is that of the levels.
    """
    nights = values.shape[1]
    ss, df = [], []
    for v, s in zip(values, levels):
        dropped = {d.night for d in s.outliers} | {d.night for d, _ in s.confirmed} | {nights - 1}
        if s.pending is not None:
            dropped.add(s.pending.night)
        bounds = sorted(set(s.starts)) + [nights]
        row_ss, row_df = residual_ss([[v[i] for i in range(a, b) if i not in dropped and not math.isnan(v[i])]
                                      for a, b in zip(bounds, bounds[1:])])
        ss.append(row_ss)
        df.append(row_df)
    return ss, df


def robust_spreads(values: np.ndarray) -> list[Spread | None]:
    """A first spread for the walk, before any level is known: night-to-night steps, robustly, pooled over the rows.

    σ = 1.4826 · median |Δ − median Δ| / √2 over every row's consecutive differences (a level
    change or an outlier moves one or two of them, and the median does not follow them).
    Its degrees of freedom are those of the differences times the median's efficiency, 0.37;
    it is at least ``RESOLUTION`` (figures that mostly repeat exactly have a MAD of 0).
    """
    diffs = [np.diff(v[~np.isnan(v)]) for v in values]
    d = np.concatenate(diffs) if diffs else np.zeros(0)
    if d.size < 2:
        return [None] * values.shape[0]
    sigma = max(1.4826 * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2), RESOLUTION)
    spread = Spread(sigma, max(1.0, 0.37 * d.size), "night-to-night steps, robustly")
    return [spread] * values.shape[0]
