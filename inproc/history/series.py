"""Per cell and metric, the figure of every night, and where the series changes level.

A night's figure is the statistic of compare's sample of the cell
(``inproc.compare.samples.sample``), in the metric's display unit: exactly the figure a
report of that night shows. Only Valid, unthrottled cells give a figure; others are gaps.

Change points: ``ruptures`` (PELT, least-squares cost) on the log figures, segments of at
least two nights, penalty 2·σ²·ln n with σ the noise of the series estimated robustly
(the median absolute deviation of night-to-night steps, ÷ √2, floored at 1 %). A
candidate is only a proposal: ``inproc.history.build`` judges each with compare's tests.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from inproc import types as st
from inproc.compare.samples import METRICS, SubWindowing, sample
from inproc.history.nights import Night
from inproc.record.schema import DecodeEntry

MIN_SEGMENT = 2  # nights on each side of a change point
NOISE_FLOOR = 0.01  # σ of the log figure is taken as at least 1 %


@dataclass(frozen=True)
class Point:
    """One night of a series: its figure (None: not Valid or not measured) and the cell's status."""

    night: int  # index into the history's nights
    figure: float | None
    status: str


def entry_of(night: Night, cell: tuple[int, int]) -> DecodeEntry | None:
    return next((e for e in night.record.decode if (e.context, e.concurrency) == cell), None)


def figure(entry: DecodeEntry | None, metric: str, cutting: SubWindowing = SubWindowing()) -> float | None:
    """The night's figure of ``metric`` in the cell (None unless the cell is Valid, unthrottled and has samples)."""
    if entry is None or entry.status != st.VALID or entry.throttled:
        return None
    s = sample(entry, metric, cutting)
    if s is None or not s.n:
        return None
    value = s.statistic()
    return value * METRICS[metric].scale if value > 0 else None


def series(nights: Sequence[Night], cell: tuple[int, int], metric: str) -> tuple[Point, ...]:
    """The cell's points over the nights (a night without the cell: status "")."""
    out = []
    for i, n in enumerate(nights):
        e = entry_of(n, cell)
        out.append(Point(i, figure(e, metric), e.status if e is not None else ""))
    return tuple(out)


def noise_sigma(log_values: np.ndarray) -> float:
    """σ of one night's log figure: MAD of consecutive differences × 1.4826 ÷ √2, at least NOISE_FLOOR."""
    d = np.diff(log_values)
    if d.size == 0:
        return NOISE_FLOOR
    mad = float(np.median(np.abs(d - np.median(d))))
    return max(mad * 1.4826 / math.sqrt(2), NOISE_FLOOR)


def change_points(points: Sequence[Point]) -> list[int]:
    """Night indices where a new level starts (each a proposal), from the points that have a figure."""
    known = [p for p in points if p.figure is not None]
    if len(known) < 2 * MIN_SEGMENT:
        return []
    import ruptures  # lazily: only a history needs it

    values = np.log([p.figure for p in known])
    sigma = noise_sigma(values)
    algo = ruptures.Pelt(model="l2", min_size=MIN_SEGMENT, jump=1).fit(values.reshape(-1, 1))
    ends = algo.predict(pen=2 * sigma**2 * math.log(len(values)))
    return [known[b].night for b in ends[:-1]]
