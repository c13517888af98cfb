"""A bisect's sitting: the reference checked and the regression measured, then targets tried until the first bad one
is pinned down.

Measurements alternate: every candidate run is followed by a run of the good revision,
so each candidate sits between good runs measured just before and after it, and a drift
of the machine over the sitting moves both sides alike. At every look the oracle first
checks its own reference (:mod:`inproc.bisect.agree`): which runs are off their revision's
level, and which spread the calls use. A candidate is judged on its runs that agree with
its level, each against the good runs next to it, and only where those agree with the good
revision's level (:func:`kept_pairs`). Nothing measured is thrown away: every run is in the
log, and ``--resume`` reads them back instead of measuring again.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from inproc import types as st
from inproc.bisect.agree import SpreadInUse, clusters_text, in_use
from inproc.bisect.child import CellSpec, measure
from inproc.bisect.log import Log, LogWriter, RunLine, VerdictLine
from inproc.bisect.oracle import OracleSettings, Reference
from inproc.bisect.runs import DISTURBED, RunSample, read_outcome
from inproc.errors import UsageError

#: A measurer in place of a child: (target index, run number from 1) -> (its sample or None, wall seconds).
Measurer = Callable[[int, int], "tuple[RunSample | None, float]"]


@dataclass(frozen=True)
class Levels:
    """The oracle's check at one look: the spread the calls use, the runs off their revision's level, and the runs
    of other revisions measured beside a good run that is off the good level (what the machine did then is unknown)."""

    spread: SpreadInUse | None
    off: frozenset[int]  # positions in the sitting's runs
    beside: frozenset[int] = frozenset()


@dataclass
class Sitting:
    """The targets, the cell, where runs go, and every run and verdict so far."""

    targets: object  # targets.GitRevisions or targets.BuildList
    spec: CellSpec
    out: Path
    oracle: OracleSettings
    writer: LogWriter
    echo: Callable[[str], None]
    env: dict[str, str] | None = None
    measurer: Measurer | None = None  # None: a child process per run
    lines: list[RunLine] = field(default_factory=list)
    samples: list[RunSample | None] = field(default_factory=list)  # one per line, None: nothing measured
    verdicts: dict[int, VerdictLine] = field(default_factory=dict)
    ref: Reference | None = None

    @property
    def last(self) -> int:
        return len(self.targets.ids) - 1

    def resume(self, log: Log) -> None:
        """Take the log's runs (read back from their results files) and verdicts."""
        for line in log.runs:
            run = read_outcome(line.results, self.spec.context, self.spec.concurrency).run if line.results else None
            self.lines.append(line)
            self.samples.append(run)
        self.verdicts = dict(log.verdicts)
        self.echo(f"bisect: resumed {len(log.runs)} runs and {len(log.verdicts)} verdicts from the log")

    def positions(self, i: int) -> list[int]:
        """Positions of target ``i``'s runs that measured the cell."""
        return [p for p, line in enumerate(self.lines) if line.index == i and self.samples[p] is not None]

    def runs_of(self, i: int) -> list[RunSample]:
        return [self.samples[p] for p in self.positions(i)]

    def too_disturbed(self) -> str:
        """Why the reference cannot be measured on this machine now: as many disturbed runs as the pairs allowed
        ("" while fewer)."""
        hit = [line for line in self.lines if line.status == DISTURBED]
        if len(hit) < 2 * self.oracle.max_pairs:
            return ""
        return (f"insufficient data: {len(hit)} runs disturbed by other work on the machine (last: {hit[-1].reason}); "
                "measure on a quieter machine")

    def spent_s(self) -> float:
        """Seconds of child runs so far (the log's wall times)."""
        return sum(line.wall_s for line in self.lines)

    def over_budget(self) -> bool:
        return self.oracle.budget_s is not None and self.spent_s() >= self.oracle.budget_s

    def run(self, i: int, role: str) -> RunLine:
        """Measure target ``i`` (:meth:`run_once`), and again while the run is disturbed, up to the oracle's
        ``retry_disturbed`` more times; every run is logged, a disturbed one never counted."""
        line = self.run_once(i, role)
        for _ in range(self.oracle.retry_disturbed):
            if line.status != DISTURBED:
                break
            line = self.run_once(i, role)
        return line

    def run_once(self, i: int, role: str) -> RunLine:
        """Prepare target ``i``, measure the cell (in a child, or by the measurer), log the run."""
        n = len(self.lines) + 1
        if self.measurer is not None:
            sample, wall_s = self.measurer(i, n)
            line = RunLine(i, self.targets.ids[i], role, "", 0, st.VALID if sample else "failed",
                           "" if sample else "measured nothing", sample.tok_s if sample else None, "", round(wall_s, 2))
        else:
            line, sample = self._child(i, role, n)
        self.lines.append(line)
        self.samples.append(sample)
        self.writer.run(line)
        figure = f"{line.tok_s:.1f} tok/s" if line.tok_s is not None else f"{line.status}: {line.reason}"
        self.echo(f"bisect: run {n} {role} {self.targets.label(i)}: {figure}"
                  + (f" ({line.wall_s:.0f} s)" if line.wall_s else ""))
        return line

    def _child(self, i: int, role: str, n: int) -> tuple[RunLine, RunSample | None]:
        prepared = self.targets.prepare(i)
        if prepared.python is None:
            return RunLine(i, self.targets.ids[i], role, "", -1, "failed", prepared.failure, None, prepared.failure), None
        label = self.targets.label(i)
        path = self.out / "runs" / f"{n:03d}-{label.replace('/', '_').replace(' ', '_')}.json"
        m = measure(self.spec, prepared.python, path, self.env)
        sample = m.outcome.run
        return RunLine(i, self.targets.ids[i], role, str(path), m.returncode, m.outcome.status, m.outcome.reason,
                       sample.tok_s if sample else None, "", round(m.wall_s, 2)), sample

    def levels(self) -> Levels:
        """The check of the reference at this look: the good revision's runs against its level, then each other
        revision's runs measured beside good runs on that level, against their level; the spread of both."""
        first = self._check([self.positions(0)])
        beside = frozenset(p for i in {line.index for line in self.lines} - {0} for p in self.positions(i)
                           if not (around := self.good_next_to(p)) or any(q in first.off for q in around))
        where = [self.positions(0)] + [[p for p in self.positions(i) if p not in beside]
                                       for i in sorted({line.index for line in self.lines} - {0})]
        lv = self._check(where)
        return Levels(lv.spread, lv.off, beside)

    def _check(self, where: list[list[int]]) -> Levels:
        where = [ps for ps in where if ps]
        groups = [[float(np.log(self.samples[p].tok_s)) for p in ps] for ps in where]
        spread, flags = in_use(groups, self.oracle.given())
        return Levels(spread, frozenset(p for ps, fs in zip(where, flags) for p, f in zip(ps, fs) if f))

    def good_next_to(self, p: int) -> list[int]:
        """Positions of the good runs measured right before and right after run ``p``."""
        return [q for q in (p - 1, p + 1) if 0 <= q < len(self.lines) and self.lines[q].index == 0
                and self.samples[q] is not None]

    def good_varied(self) -> str:
        """'the good revision's runs varied from A to B tok/s' (its lowest and highest run)."""
        good = [s.tok_s for s in self.runs_of(0)]
        return f"the good revision's runs varied from {min(good):.1f} to {max(good):.1f} tok/s" if good else \
            "the good revision measured nothing"

    def clusters(self) -> str:
        """Why no call can stand on this machine: the good (or the bad) revision's runs in two clusters; or ""."""
        for i, what in ((0, "the good revision's"), (self.last, "the bad revision's")):
            if text := clusters_text([float(np.log(r.tok_s)) for r in self.runs_of(i)], what):
                return text
        return ""

    def settle(self, i: int, verdict: str, note: str, change=None) -> None:
        iv = change.interval if change else None
        v = VerdictLine(i, self.targets.ids[i], verdict, note, change.ratio if change else None,
                        iv.low if iv else None, iv.high if iv else None, len(self.runs_of(i)))
        self.verdicts[i] = v
        self.writer.verdict(v)
        self.echo(f"bisect: {self.targets.label(i)} is {verdict}: {note}")


def good_around(s: Sitting, i: int, off: frozenset[int] = frozenset()) -> list[RunSample]:
    """The good revision's runs measured right before or right after a run of target ``i`` (none of them ``off``)."""
    out: dict[int, RunSample] = {}
    for p in s.positions(i):
        for q in (p - 1, p + 1):
            if 0 <= q < len(s.lines) and s.lines[q].index == 0 and s.samples[q] is not None and q not in off:
                out[q] = s.samples[q]
    return [out[q] for q in sorted(out)]


def kept_pairs(s: Sitting, lv: Levels, i: int) -> tuple[list[RunSample], list[RunSample]]:
    """(target ``i``'s runs, the good runs around them) that a call may use: a run on its revision's level whose
    good neighbours are all on the good revision's level (a pair measured while the machine moved is no verdict)."""
    cand, good = [], {}
    for p in s.positions(i):
        around = s.good_next_to(p)
        if p in lv.off or p in lv.beside or not around or any(q in lv.off for q in around):
            continue
        cand.append(s.samples[p])
        good.update({q: s.samples[q] for q in around})
    return cand, [good[q] for q in sorted(good)]


def good_level_runs(s: Sitting, lv: Levels) -> list[RunSample]:
    """The good revision's runs on its level: the reference every call is made against."""
    return [s.samples[p] for p in s.positions(0) if p not in lv.off]


def level_holds(s: Sitting, lv: Levels, i: int = 0, runs: int = 2) -> bool:
    """Target ``i`` has a level: at least ``runs`` runs on it, and they are most of its runs (those measured beside
    good runs on the good level)."""
    ps = [p for p in s.positions(i) if p not in lv.beside]
    kept = [p for p in ps if p not in lv.off]
    return len(kept) >= runs and 2 * len(kept) > len(ps)


def refuse(s: Sitting, line: RunLine, which: str) -> None:
    if line.status == st.OVER_CAPACITY:
        raise UsageError(f"Cell {s.spec.key} is Over capacity at the {which} revision ({line.reason}); give a cell "
                         "that runs (inproc profile check shows the pool).")
    raise UsageError(f"The {which} revision {s.targets.label(line.index)} does not measure cell {s.spec.key}: "
                     f"{line.status}: {line.reason}")
