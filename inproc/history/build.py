"""A history: per cell and metric the series over nights, its levels, and the newest night's verdict.

- **Levels.** ``inproc.history.levels.walk`` goes through the nights oldest first and judges
  each against the current level of each row, with one alarm rate per night; a change is
  confirmed by the night after it, and a night that departs alone is an outlier night
  that does not move the level.
- **The spread** of each row is learned from its own nights: the residuals around the
  levels of a first walk (made with a robust spread of the night-to-night steps),
  moderated across the metric's rows (``inproc.compare.spread.moderated_spreads``). The
  walk is then made again with it. Nothing measured on another machine enters.
- **The newest night** is judged against the nights of its row's current level, all rows
  of the night under one alarm rate (``night_alarms``). A row is slower when it is an
  alarm and its change lies beyond the threshold at the threshold confidence; a cell
  that was Valid and is not any more is a regression too. With too little to learn a
  spread from, the row is "insufficient data", with the interval it could show.
- **Cells not judged.** A newest-night cell left out of its series (Valid, but disturbed or
  throttled) is named (``History.unjudged``), never called not slower: with no regression
  found, the history exits 3, as compare does. (Rows with too few nights for a spread say
  "insufficient data" and keep exit 0: every history starts with them.)
- **Diagnosis.** Every confirmed change and every slower or faster newest-night row gets
  the diagnosis of ``inproc.history.diagnose`` from the two sides' step anatomy, and the
  record keys that differ across it (an engine version, an environment variable).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from inproc import types as st
from inproc.compare.estimate import Estimate, StatSettings, estimate_of
from inproc.compare.rows import shown
from inproc.compare.keys import differing
from inproc.compare.spread import Spread
from inproc.compare.verdicts import FASTER, INSUFFICIENT, SLOWER, STATUS_CHANGED, CompareSettings, check_comparable
from inproc.history.diagnose import diagnose
from inproc.history.judged import Judged, judge_values, lasting
from inproc.history.nights import Night, Unreadable
from inproc.history.series import Point, entry_of, left_out_reason, series
from inproc.record.compact import CellAnatomy
from inproc.record.summarize import anatomy_of

#: Keys a history lets differ between nights: a nightly builds a new engine, and a changed
#: profile is a change to find, not a reason to stop.
HISTORY_ALLOWS = ("engine.version", "profile.engine_args", "profile.env")

Row = tuple[tuple[int, int], str]  # (cell, metric)


@dataclass(frozen=True)
class HistorySettings:
    """What ``inproc history`` judges and how; every field is a flag, these are its defaults."""

    compare: CompareSettings = field(default_factory=lambda: CompareSettings(allow_different=HISTORY_ALLOWS))
    window: int = 10  # a night is judged against at most this many nights of its level


@dataclass(frozen=True)
class Change:
    """A judged change in one cell's series: where it starts, how large, and why (the diagnosis)."""

    cell: tuple[int, int]
    metric: str
    night: int  # the first night of the new level (index into History.nights)
    verdict: str  # slower, faster, status changed (newest night: also not significant, insufficient data)
    reason: str
    estimate: Estimate | None
    before: tuple[int, ...]  # nights judged as the baseline
    after: tuple[int, ...]  # nights judged as new
    diagnosis: str
    record_changes: tuple[str, ...]  # record keys that differ across the change
    newest: bool  # the newest night's verdict (not a confirmed change inside the series)
    base_status: str = ""
    new_status: str = ""
    confirmed_by: int | None = None  # the night after it that confirmed the change (None: the newest night)

    @property
    def regression(self) -> bool:
        """The newest night is slower, or a cell that was Valid is not any more."""
        return self.newest and (self.verdict == SLOWER or (self.verdict == STATUS_CHANGED and
                                                           self.base_status == st.VALID))


@dataclass(frozen=True)
class Outlier:
    """A night that departed from its row's level alone: the next night came back, and the level held."""

    cell: tuple[int, int]
    metric: str
    night: int
    ratio: float  # the night's figure ÷ the level's geometric mean


@dataclass(frozen=True)
class History:
    nights: tuple[Night, ...]
    settings: HistorySettings
    series: dict[Row, tuple[Point, ...]]
    changes: tuple[Change, ...]  # confirmed changes, then the newest night's slower, faster and lost rows
    newest: tuple[Change, ...] = ()  # every newest-night row judged, whatever its verdict
    outliers: tuple[Outlier, ...] = ()
    spreads: dict[Row, Spread] = field(default_factory=dict)  # each row's learned spread
    unreadable: tuple[Unreadable, ...] = ()

    @property
    def regressions(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.regression)

    @property
    def insufficient(self) -> tuple[Change, ...]:
        return tuple(c for c in self.newest if c.verdict == INSUFFICIENT)

    @property
    def unjudged(self) -> tuple[tuple[tuple[int, int], str], ...]:
        """The newest night's cells left out of their series, each with why (disturbed, throttled)."""
        return tuple(sorted(((e.context, e.concurrency), why) for e in self.nights[-1].record.decode
                            if (why := left_out_reason(e))))

    @property
    def exit_code(self) -> int:
        """1 the newest night starts a regression; 3 none found, but a cell of it was left out; else 0."""
        return 1 if self.regressions else 3 if self.unjudged else 0


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


def _status_change(nights: Sequence[Night], cell: tuple[int, int], metric: str) -> Change | None:
    """The newest night's cell against the last night before it that had the cell, when their statuses differ."""
    last = len(nights) - 1
    new = entry_of(nights[last], cell)
    prev = next(((i, e) for i in range(last - 1, -1, -1) if (e := entry_of(nights[i], cell)) is not None), None)
    if new is None or prev is None or prev[1].status == new.status:
        return None
    why = new.reason if new.status != st.VALID else prev[1].reason
    return Change(cell, metric, last, STATUS_CHANGED, f"{prev[1].status} → {new.status}" + (f": {why}" if why else ""),
                  None, (prev[0],), (last,), "", _record_changes(nights, (prev[0],), (last,)), True,
                  prev[1].status, new.status)


def _figure(points: Sequence[Point], idx: Sequence[int]) -> float | None:
    values = [points[i].figure for i in idx if points[i].figure is not None]
    return float(np.exp(np.mean(np.log(values)))) if values else None


def build_history(nights: Sequence[Night], s: HistorySettings = HistorySettings(),
                  unreadable: Sequence[Unreadable] = ()) -> History:
    """Every row's series, levels, confirmed changes and the newest night's verdicts (nights oldest first)."""
    for a, b in zip(nights, nights[1:]):  # one line naming a difference the history may not span
        check_comparable([a.record], [b.record], s.compare, a.path, b.path)
    cells = sorted({(e.context, e.concurrency) for n in nights for e in n.record.decode})
    rows: list[Row] = [(cell, metric) for metric in s.compare.metrics for cell in cells]
    all_series = {row: series(nights, row[0], row[1]) for row in rows}
    values = np.array([[math.log(p.figure) if p.figure else math.nan for p in all_series[row]] for row in rows],
                      dtype=float).reshape(len(rows), len(nights))
    j = judge_values(values, [m for _, m in rows], s.window, s.compare.threshold,
                     threshold_confidence=s.compare.tests.threshold_confidence)
    anat = _Anatomies(nights)
    changes: list[Change] = []
    for c in lasting(j):
        (cell, metric), points = rows[c.row], all_series[rows[c.row]]
        est = estimate_of(c.test, _figure(points, c.before), _figure(points, c.after), len(c.before), len(c.after),
                          j.spreads[c.row])
        changes.append(Change(cell, metric, c.departure.night, c.verdict, c.reason, est, c.before, c.after,
                              diagnose(anat.of(c.before, cell), anat.of(c.after, cell), metric, est.ratio),
                              _record_changes(nights, c.before, c.after), False, confirmed_by=c.confirmed_by))
    outliers = []
    for k, lv in enumerate(j.levels):
        for d in lv.outliers:
            base = [i for i in range(d.night) if i not in {o.night for o in lv.outliers}
                    and not math.isnan(values[k, i])][-s.window:]
            if base:
                outliers.append(Outlier(*rows[k], d.night, math.exp(values[k, d.night] - values[k, base].mean())))
    newest = _newest(nights, rows, all_series, j, anat)
    changes += [c for c in newest if c.verdict in (SLOWER, FASTER, STATUS_CHANGED)]
    learned = {row: sp for row, sp in zip(rows, j.spreads) if sp is not None}
    return History(tuple(nights), s, all_series, tuple(changes), tuple(newest), tuple(outliers), learned,
                   tuple(unreadable))


def _newest(nights, rows, all_series, j: Judged, anat: _Anatomies) -> list[Change]:
    """Every row of the newest night as a change: the lost-Valid cells first, then each judged row."""
    last = len(nights) - 1
    lost = {cell: c for cell in dict.fromkeys(cell for cell, _ in rows) if (c := _status_change(nights, cell, rows[0][1]))}
    out = list(lost.values())
    for r in j.newest:
        (cell, metric), points = rows[r.row], all_series[rows[r.row]]
        if cell in lost:
            continue
        est = None
        if r.test is not None:
            est = estimate_of(r.test, _figure(points, r.before), points[last].figure, len(r.before), 1,
                              j.spreads[r.row], significant=r.alarm)
        elif len(r.before) == 1:  # no spread yet: the within-run interval of the two nights, as compare shows it
            base, new = entry_of(nights[r.before[0]], cell), entry_of(nights[last], cell)
            est = shown([base], [new], metric, StatSettings()) if base and new else None
        moved = r.verdict in (SLOWER, FASTER)
        diagnosis = diagnose(anat.of(r.before, cell), anat.of([last], cell), metric, est.ratio) if moved else ""
        out.append(Change(cell, metric, last, r.verdict, r.reason, est, r.before, (last,), diagnosis,
                          _record_changes(nights, r.before, [last]) if moved else (), True))
    return out
