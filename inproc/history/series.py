"""Per cell and metric, the figure of every night, and where the series changes level.

A night's figure is the statistic of compare's sample of the cell
(``inproc.compare.samples.sample``), in the metric's display unit: exactly the figure a
report of that night shows. Only Valid cells, neither throttled nor disturbed, give a figure; others are gaps.

Where a series changes level is ``inproc.history.levels``'s business, on the logs of these figures.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


from inproc import types as st
from inproc.compare.samples import METRICS, SubWindowing, sample
from inproc.history.nights import Night
from inproc.record.schema import DecodeEntry


@dataclass(frozen=True)
class Point:
    """One night of a series: its figure (None: not Valid or not measured) and the cell's status."""

    night: int  # index into the history's nights
    figure: float | None
    status: str


def entry_of(night: Night, cell: tuple[int, int]) -> DecodeEntry | None:
    return next((e for e in night.record.decode if (e.context, e.concurrency) == cell), None)


def left_out_reason(entry: DecodeEntry) -> str:
    """Why a Valid cell gives no figure although it was measured: the machine disturbed or throttled it ("" none)."""
    return (entry.disturbed or entry.throttled) if entry.status == st.VALID else ""


def figure(entry: DecodeEntry | None, metric: str, cutting: SubWindowing = SubWindowing()) -> float | None:
    """The night's figure of ``metric`` in the cell (None unless the cell is Valid, neither throttled nor
    disturbed, and has samples)."""
    if entry is None or entry.status != st.VALID or entry.throttled or entry.disturbed:
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
