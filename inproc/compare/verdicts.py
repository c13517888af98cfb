"""The comparison of two sets of runs: one row per decode cell and metric, each with its verdict.

Verdicts (``VERDICTS``):

- **faster** / **slower** — the row is an alarm under the comparison's one alarm rate
  (every tested row in one Benjamini–Hochberg step-up at ``spread.NIGHT_ALPHA``, see
  ``inproc.compare.rows``) *and* the change itself lies beyond the threshold with the
  threshold confidence: its one-sided bound at ``StatSettings.threshold_confidence``
  (80 %) is past 1 + ``threshold`` in the better or worse direction (tok/s: up is
  faster; TBT and TTFT: down is faster).
- **not significant** — no alarm, or an alarm whose change is not beyond the threshold
  with that confidence.
- **insufficient data** — the run-to-run spread cannot be learned: one run each side
  with neither ``--run-spread`` nor ``--max-spread`` (the within-run interval is shown), or too few runs
  for a spread on ``spread.MIN_SPREAD_DF`` degrees of freedom. Never slower.
- **not run in either** — Over capacity (or Exceeds max model length) in both, decided from the
  engine's capacity before measuring: nothing to judge and nothing left unjudged.
- **not comparable** — the cell is not Valid in both (Looped, Error), or Requests queued with a
  different number running or waiting, or throttled or disturbed in either run, or the metric has
  too few samples; never called slower or faster.

A cell Requests queued in both is judged like a Valid one when every run had the same
number of requests running and waiting (the medians over the window's steps): tok/s and
TBT are then the rates of the same batch, and TTFT holds the same queue ahead of each
request. Its rows say so ("queued in both: 2 running, 2 waiting").

- **status changed** — the cell's status differs (Valid → Requests queued); never called slower.
- **new** / **missing** — the cell is only in the new run / only in the baseline.

A run regresses when a row is slower, or a cell that was Valid is no longer Valid: exit 1.
Else exit 3 when a row could not be judged (``Comparison.undecided``), 0 only when every row
was. One run each side with no stated spread: :mod:`inproc.compare.bound` (``--max-spread``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Sequence

from inproc import types as st
from inproc.compare.bound import needed_text
from inproc.compare.estimate import Estimate, StatSettings
from inproc.compare.keys import KeyDiff, check_allow_keys, differing, split_allowed
from inproc.compare.kernels import KernelChange, compare_kernels
from inproc.compare.queues import disagree, queue_shape, queues_differ, shape_text, status_of
from inproc.compare.rows import INSUFFICIENT, Candidate, Tested, alarms, shown, tested_rows
from inproc.compare.samples import METRICS
from inproc.compare.spread import THRESHOLD_CONFIDENCE, ChangeTest
from inproc.compare.stats import geometric_mean
from inproc.errors import UsageError
from inproc.record.schema import DecodeEntry, RunRecord
from inproc.units import cell_key

FASTER, SLOWER, NOT_SIGNIFICANT = "faster", "slower", "not significant"
NOT_COMPARABLE, STATUS_CHANGED, NEW, MISSING, NOT_RUN_BOTH = ("not comparable", "status changed", "new", "missing",
                                                               "not run in either")
VERDICTS = (SLOWER, FASTER, NOT_SIGNIFICANT, INSUFFICIENT, NOT_COMPARABLE, STATUS_CHANGED, NEW, MISSING, NOT_RUN_BOTH)
NOT_RUN = (st.OVER_CAPACITY, st.EXCEEDS_MAX_LEN)  # a cell's status when the plan ran it not (``CellPlan.pre_status``)
INDICATIVE = " (one run each side, against the stated --run-spread)"  # a change of one run against one run
JUDGED = (SLOWER, FASTER, NOT_SIGNIFICANT, INSUFFICIENT)  # rows whose cells were comparable (the geometric mean's)
UNDECIDED = (INSUFFICIENT, NOT_COMPARABLE, MISSING)  # rows on which no verdict could be reached
#: compare's exit codes (2 is bad input, raised as a UsageError): every row judged and none regressed; a regression;
#: no regression found, but some rows could not be judged (``Comparison.undecided``).
EXIT_CLEAN, EXIT_REGRESSION, EXIT_UNDECIDED = 0, 1, 3


@dataclass(frozen=True)
class CompareSettings:
    """What ``inproc compare`` judges and how; every field is a flag, these are its defaults."""

    threshold: float = 0.05  # a change counts beyond this factor (5 %: 1.05x slower or faster)
    metrics: tuple[str, ...] = tuple(METRICS)
    allow_different: tuple[str, ...] = ()
    tests: StatSettings = field(default_factory=StatSettings)

    def __post_init__(self) -> None:
        if not 0 <= self.threshold < 1:
            raise UsageError(f"Bad threshold {self.threshold * 100:g}%: give a percentage from 0% to below 100%, e.g. 5%.")
        for name in self.metrics:
            if name not in METRICS:
                raise UsageError(f"Unknown metric {name!r}. Metrics: {', '.join(METRICS)}.")
        if not self.metrics:
            raise UsageError(f"No metric given. Metrics: {', '.join(METRICS)}.")
        check_allow_keys(self.allow_different)


@dataclass(frozen=True)
class Row:
    """One cell and metric: the verdict, why, and the estimate when both sides had one."""

    context: int
    concurrency: int
    metric: str
    verdict: str
    reason: str = ""
    estimate: Estimate | None = None
    base_status: str = ""
    new_status: str = ""

    @property
    def key(self) -> str:
        return cell_key(self.context, self.concurrency)


@dataclass(frozen=True)
class Side:
    """One side of the comparison, for the header: where it came from and what it holds."""

    label: str
    runs: int
    profile: str
    engine: str
    created: tuple[str, ...]
    window_s: float  # the plan's decode window (the first run's)


@dataclass(frozen=True)
class GeoMean:
    metric: str
    ratio: float | None  # geometric mean of new ÷ baseline over the comparable cells
    cells: int


@dataclass(frozen=True)
class Comparison:
    base: Side
    new: Side
    settings: CompareSettings
    rows: tuple[Row, ...]
    allowed: tuple[KeyDiff, ...]  # differences the user allowed
    geomeans: tuple[GeoMean, ...]
    kernels: tuple[KernelChange, ...] = ()  # comparable cells with a kernel pass in every run (inproc.compare.kernels)

    @property
    def regressions(self) -> tuple[Row, ...]:
        """Slower rows, and one row per cell that was Valid in the baseline and is not any more."""
        lost_valid: set[str] = set()
        out = []
        for r in self.rows:
            if r.verdict == SLOWER:
                out.append(r)
            elif r.verdict == STATUS_CHANGED and r.base_status == st.VALID and r.key not in lost_valid:
                lost_valid.add(r.key)
                out.append(r)
        return tuple(out)

    @property
    def undecided(self) -> tuple[Row, ...]:
        """Rows no verdict could be reached on: insufficient data, not comparable (throttled, disturbed, too few
        samples, not Valid in both), or a cell only in the baseline."""
        return tuple(r for r in self.rows if r.verdict in UNDECIDED)

    @property
    def exit_code(self) -> int:
        """``EXIT_REGRESSION`` a regression; ``EXIT_UNDECIDED`` none found, but rows could not be judged;
        ``EXIT_CLEAN`` every row judged and none regressed."""
        if self.regressions:
            return EXIT_REGRESSION
        return EXIT_UNDECIDED if self.undecided else EXIT_CLEAN


def judge_test(t: ChangeTest, metric: str, threshold: float, alarm: bool,
               threshold_confidence: float = THRESHOLD_CONFIDENCE) -> tuple[str, str]:
    """(verdict, reason) of a tested row: an alarm whose change lies beyond the threshold with its confidence.

    ``alarm``: the row is among the comparison's (or the night's) alarms. The change must
    then exceed 1 + ``threshold`` at its one-sided ``threshold_confidence`` bound, so a
    change whose point estimate is past the threshold by noise alone is not called.
    """
    slow = 1 / t.ratio if METRICS[metric].higher_is_better else t.ratio
    change = f"{slow:.2f}x slower" if slow > 1 else f"{1 / slow:.2f}x faster"
    least = t.at_least(threshold_confidence)
    conf = f"{threshold_confidence * 100:g} %"
    if alarm and least > 1 + threshold:
        return (SLOWER if slow > 1 else FASTER), f"{change}, at least {least:.3f}x with {conf} confidence"
    if alarm:
        return NOT_SIGNIFICANT, (f"{change}, not beyond the {threshold * 100:g}% threshold with {conf} confidence "
                                 f"(at least {least:.3f}x)")
    return NOT_SIGNIFICANT, "within the noise"


def _throttled(base: Sequence[DecodeEntry], new: Sequence[DecodeEntry]) -> str:
    for side, entries in (("baseline", base), ("new", new)):
        for e in entries:
            if e.throttled:  # the machine's doing: left out of the verdict
                return f"throttled in the {side} run: {e.throttled}"
    return ""


def _disturbed(base: Sequence[DecodeEntry], new: Sequence[DecodeEntry]) -> str:
    """Other work on the machine during a run's window (``DecodeEntry.disturbed``): left out of the verdict."""
    for side, entries in (("baseline", base), ("new", new)):
        for e in entries:
            if e.disturbed:
                return f"disturbed in the {side} run: {e.disturbed.removeprefix('disturbed: ')}"
    return ""


def _cell_problem(base: Sequence[DecodeEntry], new: Sequence[DecodeEntry]) -> tuple[str, str] | None:
    """(verdict, reason) that holds for every metric of the cell, or None when it is comparable."""
    if not base:
        return NEW, f"only in the new run ({new[0].status})"
    if not new:
        return MISSING, f"only in the baseline ({base[0].status})"
    sb, sn = status_of(base), status_of(new)
    if sb is None or sn is None:
        which, entries = ("baseline", base) if sb is None else ("new", new)
        return NOT_COMPARABLE, f"the {which} runs disagree: {disagree(entries)}"
    if sb != sn:
        why = new[0].reason if sn != st.VALID else base[0].reason
        return STATUS_CHANGED, f"{sb} → {sn}" + (f": {why}" if why else "")
    if sb == st.QUEUED and (why := queues_differ(base, new)):
        return NOT_COMPARABLE, f"{sb} in both, {why}"
    if sb in NOT_RUN and all(e.trace is None and e.summary is None and e.figures is None for e in (*base, *new)):
        return NOT_RUN_BOTH, f"{sb} in both: the plan ran it in neither"
    if sb not in (st.VALID, st.QUEUED):
        return NOT_COMPARABLE, f"{sb} in both; only Valid and Requests queued cells are judged"
    if why := _throttled(base, new) or _disturbed(base, new):
        return NOT_COMPARABLE, why
    return None


def _problem_rows(cell: tuple[int, int], base: Sequence[DecodeEntry], new: Sequence[DecodeEntry],
                  problem: tuple[str, str], s: CompareSettings) -> list[Row]:
    """The rows of a cell that is not comparable: the same verdict and reason for every metric."""
    sb, sn = (status_of(base) or "") if base else "", (status_of(new) or "") if new else ""
    return [Row(cell[0], cell[1], metric, problem[0], problem[1], shown(base, new, metric, s.tests), sb, sn)
            for metric in s.metrics]


def _judged_row(cell, c: Candidate, x: Tested, alarm: bool, s: CompareSettings) -> Row:
    sb, sn = status_of(c.base) or "", status_of(c.new) or ""
    if x.test is None:
        verdict = INSUFFICIENT if x.insufficient else NOT_COMPARABLE
        return Row(cell[0], cell[1], c.metric, verdict, x.reason, x.estimate, sb, sn)
    verdict, reason = judge_test(x.test, c.metric, s.threshold, alarm, s.tests.threshold_confidence)
    need = x.estimate.needed_spread if x.estimate is not None else None
    if need is not None:
        reason = needed_text(need, s.tests.max_spread) if reason == "within the noise" else \
            f"{reason}; {needed_text(need, s.tests.max_spread)}"
    elif x.estimate is not None and x.estimate.indicative and verdict in (SLOWER, FASTER):
        reason += INDICATIVE
    if sb == st.QUEUED:
        reason += f"; queued in both: {shape_text(queue_shape(c.base[0]))}"
    est = dataclasses.replace(x.estimate, significant=alarm) if x.estimate is not None else None
    return Row(cell[0], cell[1], c.metric, verdict, reason, est, sb, sn)


def _entries(runs: Sequence[RunRecord], cell: tuple[int, int]) -> list[DecodeEntry]:
    """The cell's entry from each run that has it."""
    return [e for r in runs for e in r.decode if (e.context, e.concurrency) == cell]


def _side(label: str, runs: Sequence[RunRecord]) -> Side:
    first = runs[0]
    return Side(label, len(runs), first.profile.name, f"{first.engine.name} {first.engine.version}",
                tuple(r.created for r in runs), first.plan.settings.window_s)


def check_comparable(base: Sequence[RunRecord], new: Sequence[RunRecord], s: CompareSettings,
                     base_label: str = "baseline", new_label: str = "new") -> tuple[KeyDiff, ...]:
    """The allowed differences; raises a one-line :class:`UsageError` naming every other one."""
    ok, refused = split_allowed(differing(base, new), s.allow_different)
    if refused:
        raise UsageError(f"{base_label} and {new_label} are not comparable: "
                         f"{'; '.join(d.describe() for d in refused)} differ. "
                         f"Pass --allow-different KEY for each difference you accept "
                         f"(e.g. --allow-different {refused[0].key}).")
    return tuple(ok)


def compare_runs(base: Sequence[RunRecord], new: Sequence[RunRecord], s: CompareSettings = CompareSettings(),
                 base_label: str = "baseline", new_label: str = "new") -> Comparison:
    """Every decode cell of either side, compared metric by metric (see the module's verdicts).

    The comparable rows are tested together (``inproc.compare.rows``): one alarm rate for the comparison.
    """
    allowed = check_comparable(base, new, s, base_label, new_label)
    cells = sorted({(e.context, e.concurrency) for r in (*base, *new) for e in r.decode})
    fixed: dict[tuple[int, int], list[Row]] = {}
    cands: list[tuple[tuple[int, int], Candidate]] = []
    comparable = []
    for cell in cells:
        b, n = _entries(base, cell), _entries(new, cell)
        problem = _cell_problem(b, n)
        if problem is not None:
            fixed[cell] = _problem_rows(cell, b, n, problem, s)
        else:
            cands += [(cell, Candidate(metric, b, n)) for metric in s.metrics]
            comparable.append((cell, b, n))
    tested = tested_rows([c for _, c in cands], s.tests, len(base) > 1 or len(new) > 1)
    judged: dict[tuple[int, int], list[Row]] = {}
    for (cell, c), x, alarm in zip(cands, tested, alarms(tested)):
        judged.setdefault(cell, []).append(_judged_row(cell, c, x, alarm, s))
    rows = [r for cell in cells for r in fixed.get(cell, judged.get(cell, []))]
    ratios = {m: [r.estimate.ratio for r in rows if r.metric == m and r.verdict in JUDGED and r.estimate] for m in s.metrics}
    geomeans = [GeoMean(m, geometric_mean(x) if x else None, len(x)) for m, x in ratios.items()]
    return Comparison(_side(base_label, base), _side(new_label, new), s, tuple(rows), allowed, tuple(geomeans),
                      compare_kernels(comparable, s.tests))
