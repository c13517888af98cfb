"""A history: per cell and metric the series over nights, its judged change points, the newest night's verdict.

- **Change points.** Each proposal of ``inproc.history.series.change_points`` is judged as
  ``inproc compare`` judges a baseline of several runs against new runs: the nights of the
  segment before it against those of the segment after it (``compare_cell``: the spread
  between runs, significant and beyond the threshold). Only slower or faster ones are kept.
- **The newest night** is judged against the nights since the last kept change point
  before it (at most ``window`` of them), as compare judges one run against a baseline.
  A slower row, or a cell that was Valid and is not, there is a regression (exit 1).
- **Diagnosis.** Every kept change and every slower or faster newest-night row gets the
  diagnosis of ``inproc.history.diagnose`` from the two sides' step anatomy, and the
  record keys that differ between the nights on either side of it (an engine version, an
  environment variable).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from inproc import types as st
from inproc.compare.estimate import Estimate
from inproc.compare.keys import differing
from inproc.compare.verdicts import FASTER, SLOWER, STATUS_CHANGED, CompareSettings, check_comparable, compare_cell
from inproc.history.diagnose import diagnose
from inproc.history.nights import Night
from inproc.history.series import Point, change_points, entry_of, series
from inproc.record.compact import CellAnatomy
from inproc.record.summarize import anatomy_of

#: Keys a history lets differ between nights: a nightly builds a new engine, and a changed
#: profile is a change to find, not a reason to stop.
HISTORY_ALLOWS = ("engine.version", "profile.engine_args", "profile.env")


@dataclass(frozen=True)
class HistorySettings:
    """What ``inproc history`` judges and how; every field is a flag, these are its defaults."""

    compare: CompareSettings = field(default_factory=lambda: CompareSettings(allow_different=HISTORY_ALLOWS))
    window: int = 10  # a change or the newest night is judged against at most this many nights before it


@dataclass(frozen=True)
class Change:
    """A judged change in one cell's series: where it starts, how large, and why (the diagnosis)."""

    cell: tuple[int, int]
    metric: str
    night: int  # the first night of the new level (index into History.nights)
    verdict: str  # slower, faster, status changed
    reason: str
    estimate: Estimate | None
    before: tuple[int, ...]  # nights judged as the baseline
    after: tuple[int, ...]  # nights judged as new
    diagnosis: str
    record_changes: tuple[str, ...]  # record keys that differ across the change
    newest: bool  # the newest night's verdict (not a change point inside the series)


@dataclass(frozen=True)
class History:
    nights: tuple[Night, ...]
    settings: HistorySettings
    series: dict[tuple[tuple[int, int], str], tuple[Point, ...]]
    changes: tuple[Change, ...]

    @property
    def regressions(self) -> tuple[Change, ...]:
        """Newest-night changes that are regressions: slower, or a cell that was Valid and is no longer."""
        return tuple(c for c in self.changes if c.newest and (c.verdict == SLOWER or (
            c.verdict == STATUS_CHANGED and c.reason.startswith(st.VALID + " →"))))

    @property
    def exit_code(self) -> int:
        return 1 if self.regressions else 0


class _Anatomies:
    """Each night's anatomy of a cell, made once (a compact night has it stored)."""

    def __init__(self, nights: Sequence[Night]) -> None:
        self.nights, self.cache = nights, {}

    def of(self, idx: Sequence[int], cell: tuple[int, int]) -> list[CellAnatomy]:
        out = []
        for i in idx:
            if (i, cell) not in self.cache:
                e = entry_of(self.nights[i], cell)
                self.cache[(i, cell)] = anatomy_of(e, self.nights[i].record.capacity) if e is not None else None
            if self.cache[(i, cell)] is not None:
                out.append(self.cache[(i, cell)])
        return out


def _record_changes(nights: Sequence[Night], before: Sequence[int], after: Sequence[int]) -> tuple[str, ...]:
    diffs = differing([nights[before[-1]].record], [nights[after[0]].record])
    return tuple(d.describe() for d in diffs)


def _judge(nights, anat: _Anatomies, cell, metric, before, after, s: HistorySettings, newest: bool) -> Change | None:
    entries = lambda idx: [e for e in (entry_of(nights[i], cell) for i in idx) if e is not None]
    b, n = entries(before), entries(after)
    if not b or not n:
        return None
    row = next(r for r in compare_cell(b, n, CompareSettings(s.compare.threshold, (metric,), s.compare.allow_different,
                                                             s.compare.tests)))
    if row.verdict not in (SLOWER, FASTER, STATUS_CHANGED):
        return None
    diagnosis = diagnose(anat.of(before, cell), anat.of(after, cell), metric, row.estimate.ratio) if row.estimate else ""
    return Change(cell, metric, after[0], row.verdict, row.reason, row.estimate, tuple(before), tuple(after),
                  diagnosis, _record_changes(nights, before, after), newest)


def _series_changes(nights, anat, cell, metric, points, s: HistorySettings) -> list[Change]:
    """The kept change points of one series, then the newest night's verdict."""
    last = len(nights) - 1
    bounds = [0] + change_points(points) + [len(nights)]
    kept: list[Change] = []
    start = 0
    for cp, hi in zip(bounds[1:], bounds[2:]):  # before: back to the last kept change (a rejected one is no level)
        change = _judge(nights, anat, cell, metric, range(max(start, cp - s.window), cp), range(cp, hi), s, False)
        if change is not None and change.verdict != STATUS_CHANGED:
            kept.append(change)
            start = cp
    base_from = max(kept[-1].night if kept else 0, last - s.window)
    if base_from < last:
        newest = _judge(nights, anat, cell, metric, range(base_from, last), range(last, last + 1), s, True)
        kept += [newest] if newest is not None else []
    return kept


def build_history(nights: Sequence[Night], s: HistorySettings = HistorySettings()) -> History:
    """Every cell's series, judged change points and newest-night verdicts (nights oldest first)."""
    for a, b in zip(nights, nights[1:]):  # one line naming a difference the history may not span
        check_comparable([a.record], [b.record], s.compare, a.path, b.path)
    cells = sorted({(e.context, e.concurrency) for n in nights for e in n.record.decode})
    anat = _Anatomies(nights)
    all_series, changes = {}, []
    for cell in cells:
        for metric in s.compare.metrics:
            points = series(nights, cell, metric)
            all_series[(cell, metric)] = points
            changes += _series_changes(nights, anat, cell, metric, points, s)
    return History(tuple(nights), s, all_series, tuple(changes))
