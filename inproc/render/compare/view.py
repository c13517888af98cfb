"""The compare subject's view: one row per cell and metric with its mark, the sentences around them, the kernel
section, the diagnoses and the definitions (:class:`CompareView`), built once from a comparison; the text,
Markdown and HTML arrangements (``formats``, ``page``) place these, so a column added here shows in each of them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from inproc.compare.samples import METRICS
from inproc.compare.verdicts import (FASTER, INSUFFICIENT, MISSING, NEW, NOT_COMPARABLE, NOT_RUN_BOTH,
                                     NOT_SIGNIFICANT, SLOWER, STATUS_CHANGED, Comparison, Row)
from inproc.history.explain import Explained
from inproc.render.compare import kernels
from inproc.render.compare.lines import cell_text, geomeans_line, header_lines, summary_line
from inproc.render.definitions import definitions
from inproc.render.fmt import DASH, ms, tok_s
from inproc.render.history.lines import step_text

#: One character per verdict, asv's way: + worse, - better, blank for no change.
MARKS = {SLOWER: "+", FASTER: "-", NOT_SIGNIFICANT: " ", INSUFFICIENT: "~", NOT_COMPARABLE: "?", STATUS_CHANGED: "!",
         NEW: ">", MISSING: "<", NOT_RUN_BOTH: "="}
COLUMNS = ["Cell", "Metric", "Baseline", "New", "Ratio", "Interval", "Verdict"]
STRONG = (SLOWER, STATUS_CHANGED)  # rows set apart (bold in Markdown and HTML)
QUIET = (NOT_SIGNIFICANT, NOT_COMPARABLE, INSUFFICIENT, NOT_RUN_BOTH)  # rows left out of the Markdown's "Changes"


def _value(metric: str, v: float | None) -> str:
    if v is None:
        return DASH
    return tok_s(v) + " tok/s" if METRICS[metric].unit == "tok/s" else ms(v, 1)


def _factor(x: float) -> str:
    """A ratio: three decimals near 1, three significant digits far from it (a 2-run interval can span 10^6)."""
    return f"{x:.3f}" if 0.001 <= x < 1000 else f"{x:.3g}"


def _ratio(r: Row) -> tuple[str, str]:
    e = r.estimate
    if e is None:
        return DASH, DASH
    return _factor(e.ratio), f"[{_factor(e.interval.low)}, {_factor(e.interval.high)}]"


def row_cells(r: Row) -> list[str]:
    """The row's cells under COLUMNS, as text."""
    e = r.estimate
    ratio, interval = _ratio(r)
    verdict = r.reason if r.verdict in (SLOWER, FASTER) else r.verdict + (f": {r.reason}" if r.reason else "")
    return [cell_text(r), r.metric, _value(r.metric, e.base_figure if e else None),
            _value(r.metric, e.new_figure if e else None), ratio, interval, verdict]


@dataclass(frozen=True)
class VerdictRow:
    """One cell and metric: its mark, its values under :data:`COLUMNS`, and how the formats set it apart."""

    mark: str  # the verdict's character (MARKS)
    cells: tuple[str, ...]
    strong: bool  # slower or status changed
    change: bool  # listed among the changes (not "not significant", "not comparable", ...)


@dataclass(frozen=True)
class CompareView:
    """What every format of a comparison shows, built once (:func:`compare_view`)."""

    title: str  # "regression", "not every row judged" or "no regression"
    summary: str  # the verdict in one line
    header: tuple[str, ...]  # the sides, the threshold, the tests, what was allowed to differ
    geomeans: str
    columns: tuple[str, ...]
    rows: tuple[VerdictRow, ...]
    legend: str  # each mark and its verdict
    kernels: kernels.KernelsSection | None  # where the step's device time moved (None: no kernel pass on both sides)
    diagnoses: tuple[str, ...]  # what changed in the steps, per slower or faster row, with its step
    page_diagnoses: tuple[str, ...]  # the same, named by the row's key and direction (the HTML page)
    definitions: tuple[tuple[str, str], ...]  # the metrics compared


def diagnosis_lines(explained: Sequence[Explained]) -> tuple[str, ...]:
    """"256 x 4 Total tok/s −12 % [−15 %, −9 %]: <what changed in the steps>.", a line per explained row."""
    return tuple(f"{cell_text(e.row)} {step_text(e.row.metric, e.row.estimate)}: {e.diagnosis}." for e in explained)


def _page_diagnoses(explained: Sequence[Explained]) -> tuple[str, ...]:
    return tuple(f"{e.row.key} {e.row.metric} ({'slower' if e.row.verdict == SLOWER else 'faster'}): {e.diagnosis}"
                 for e in explained if e.row.verdict in (SLOWER, FASTER))


def _definitions(c: Comparison) -> tuple[tuple[str, str], ...]:
    labels = [METRICS[m].label for m in c.settings.metrics] + (["Sub-window"] if "tok_s" in c.settings.metrics else [])
    return tuple((d.label, d.text) for d in definitions() if d.label in labels)


def compare_view(c: Comparison, explained: Sequence[Explained] = ()) -> CompareView:
    """The comparison's view (``explained``: ``inproc.history.explain``'s diagnoses of its slower and faster rows)."""
    title = "regression" if c.regressions else "not every row judged" if c.undecided else "no regression"
    rows = tuple(VerdictRow(MARKS[r.verdict], tuple(row_cells(r)), r.verdict in STRONG, r.verdict not in QUIET)
                 for r in c.rows)
    legend = ", ".join(f"{m.strip() or 'blank'} {v}" for v, m in MARKS.items())
    return CompareView(title, summary_line(c), tuple(header_lines(c)), geomeans_line(c), tuple(COLUMNS), rows, legend,
                       kernels.section(c), diagnosis_lines(explained), _page_diagnoses(explained), _definitions(c))
