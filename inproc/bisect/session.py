"""A bisect's sitting: the regression measured, then targets tried until the first bad one is pinned down.

Measurements alternate: every candidate run is followed by a run of the good revision,
so each candidate sits between good runs measured just before and after it, and a drift
of the machine over the sitting moves both sides alike. A candidate is judged against
the good runs next to its own runs (:func:`good_around`). Nothing measured is thrown
away: every run is in the log, and ``--resume`` reads them back instead of measuring again.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from inproc import types as st
from inproc.bisect import search
from inproc.bisect.child import CellSpec, measure
from inproc.bisect.log import Log, LogWriter, RunLine, VerdictLine
from inproc.bisect.oracle import (BAD, GOOD, INSUFFICIENT, SKIPPED, UNDECIDED, OracleSettings, Reference, decide,
                                  learned_spread, reference, regressed)
from inproc.bisect.runs import RunSample, read_outcome
from inproc.errors import UsageError


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

    def runs_of(self, i: int) -> list[RunSample]:
        return [s for line, s in zip(self.lines, self.samples) if line.index == i and s is not None]

    def run(self, i: int, role: str) -> RunLine:
        """Prepare target ``i``, measure the cell in a child, log the run."""
        prepared = self.targets.prepare(i)
        label = self.targets.label(i)
        n = len(self.lines) + 1
        if prepared.python is None:
            line = RunLine(i, self.targets.ids[i], role, "", -1, "failed", prepared.failure, None, prepared.failure)
            sample = None
        else:
            path = self.out / "runs" / f"{n:03d}-{label.replace('/', '_').replace(' ', '_')}.json"
            m = measure(self.spec, prepared.python, path, self.env)
            sample = m.outcome.run
            line = RunLine(i, self.targets.ids[i], role, str(path), m.returncode, m.outcome.status, m.outcome.reason,
                           sample.tok_s if sample else None, "", round(m.wall_s, 2))
        self.lines.append(line)
        self.samples.append(sample)
        self.writer.run(line)
        figure = f"{line.tok_s:.1f} tok/s" if line.tok_s is not None else f"{line.status}: {line.reason}"
        self.echo(f"bisect: run {n} {role} {label}: {figure}" + (f" ({line.wall_s:.0f} s)" if line.wall_s else ""))
        return line

    def spread(self) -> tuple[float, str]:
        """The spread between runs of one revision: each pair of good runs measured one after the other is a
        group (a candidate is judged against its neighbours, so the sitting's slow drift is not noise to it),
        and each other revision's runs are one."""
        good = [s.tok_s for s in self.runs_of(0)]
        groups = [good[k:k + 2] for k in range(len(good) - 1)]
        groups += [[s.tok_s for s in self.runs_of(i)] for i in range(1, self.last + 1)]
        return learned_spread([g for g in groups if g], self.oracle.run_spread, self.oracle.learn)

    def settle(self, i: int, verdict: str, note: str, change=None) -> None:
        v = VerdictLine(i, self.targets.ids[i], verdict, note, change.ratio if change else None,
                        change.interval.low if change else None, change.interval.high if change else None,
                        len(self.runs_of(i)))
        self.verdicts[i] = v
        self.writer.verdict(v)
        self.echo(f"bisect: {self.targets.label(i)} is {verdict}: {note}")


def good_around(s: Sitting, i: int) -> list[RunSample]:
    """The good revision's runs measured right before or right after a run of target ``i``."""
    out: dict[int, RunSample] = {}
    for p, line in enumerate(s.lines):
        if line.index != i or s.samples[p] is None:
            continue
        for q in (p - 1, p + 1):
            if 0 <= q < len(s.lines) and s.lines[q].index == 0 and s.samples[q] is not None:
                out[q] = s.samples[q]
    return [out[q] for q in sorted(out)]


def _refuse_good(s: Sitting, line: RunLine, which: str) -> None:
    if line.status == st.OVER_CAPACITY:
        raise UsageError(f"Cell {s.spec.key} is Over capacity at the {which} revision ({line.reason}); give a cell "
                         "that runs (inproc profile check shows the pool).")
    raise UsageError(f"The {which} revision {s.targets.label(line.index)} does not measure cell {s.spec.key}: "
                     f"{line.status}: {line.reason}")


def measure_regression(s: Sitting) -> Reference:
    """Bad, then good, until compare calls bad slower than good, or the cap (then the range holds no regression)."""
    while True:
        bad, good = s.runs_of(s.last), good_around(s, s.last)
        if bad and good:
            sd, source = s.spread()
            ref = reference(good, bad, sd, source, s.oracle)
            s.echo(f"bisect: bad against good: tok/s {ref.change.ratio:.3f}x ({ref.change.interval.low:.3f}–"
                   f"{ref.change.interval.high:.3f}), {ref.verdict}: {ref.reason}")
            if regressed(ref) or len(bad) >= s.oracle.max_pairs or ref.change.ratio > 1:
                return ref
        for i, role in ((s.last, "bad"), (0, "good")):
            line = s.run(i, role)
            if line.tok_s is None:
                _refuse_good(s, line, role)


def judge(s: Sitting, i: int) -> None:
    """Pairs (candidate, good) until the oracle decides, the cap, or the candidate fails to run."""
    while i not in s.verdicts:
        cand, good = s.runs_of(i), good_around(s, i)
        if cand and good:
            sd, source = s.spread()
            d = decide(s.ref, good, cand, sd, source, s.oracle)
            if d.verdict != UNDECIDED:
                s.settle(i, d.verdict, d.note, d.change)
                return
            if len(cand) >= s.oracle.max_pairs:
                s.settle(i, INSUFFICIENT, f"{d.note}; still undecided after {len(cand)} pairs", d.change)
                return
        line = s.run(i, "candidate")
        if line.tok_s is None:
            s.settle(i, SKIPPED, line.build or f"{line.status}: {line.reason}")
            return
        s.run(0, "good")


def walk(s: Sitting, map_count: int) -> None:
    """The regression, the map's points (if any), then the bisection of the last change from good to bad."""
    s.ref = measure_regression(s)
    if not regressed(s.ref):
        return
    for i, verdict in ((0, GOOD), (s.last, BAD)):
        if i not in s.verdicts:
            s.settle(i, verdict, s.ref.reason if i else "the good revision", s.ref.change if i else None)
    for i in search.map_points(s.last, map_count):
        judge(s, i)
    while (i := search.next_target({k: v.verdict for k, v in s.verdicts.items()}, s.last)) is not None:
        judge(s, i)
