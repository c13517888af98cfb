"""Slow steps in the reports: a summary per cell, a step-time timeline per cell, a matrix beside tok/s.

The summary's view is one table (:func:`summary_table`, a row per cell from :class:`SummaryRow`, whose fields
are the columns in :data:`HEAD`'s order); the Markdown and HTML sections place it, so a column is a field
and a head here.

Everything here reads ``inproc.measure.slow`` (the rule, the causes, ``SlowFigures``); nothing is
decided here.
"""
from __future__ import annotations

from dataclasses import astuple, dataclass

import numpy as np

from inproc.measure import metrics as m
from inproc.measure.slow import CAUSES, SlowStep, slow_steps
from inproc.record.schema import DecodeEntry, RunRecord
from inproc.render import fmt
from inproc.render.svg import Chart, Series
from inproc.render.writers import Table
from inproc.units import format_tokens

MAX_DOTS = 400  # ordinary steps per timeline (a long window is thinned evenly); slow steps are all shown
NOTE = ("A slow step takes far longer than the window's steps of its kind (same decode requests, scheduled tokens and "
        "CUDA-graph mode); the rule and the causes are under Definitions.")


def _cells(rec: RunRecord) -> list[DecodeEntry]:
    return [e for e in rec.decode if e.figures is not None and e.figures.slow is not None]


def causes_text(causes) -> str:
    """``gc 3 · unexplained 1``, in the order causes are tried; a dash when there are none."""
    return " · ".join(f"{c} {causes[c]}" for c in CAUSES if causes.get(c)) or fmt.DASH


@dataclass(frozen=True)
class SummaryRow:
    """One cell's line of the slow-step summary (texts, ready for a table)."""

    cell: str
    steps: str
    slow: str
    share: str
    causes: str
    tail: str  # median / p99 / max step time
    gc: str  # GC inside the window's steps, and in the gaps between them


HEAD = ["Cell", "Window steps", "Slow steps", "Their time", "Causes", "Step time median / p99 / max", "GC in steps / between"]


def summary_rows(rec: RunRecord) -> list[SummaryRow]:
    """One row per decode cell with figures."""
    rows = []
    for e in _cells(rec):
        s, w = e.figures.slow, m.window(e.trace)
        gc = (f"{s.gc_ms:.1f} / {s.gc_between_ms:.1f} ms" if s.gc_ms is not None and s.gc_between_ms is not None
              else "not recorded")
        rows.append(SummaryRow(f"{format_tokens(e.context)} × {e.concurrency}", fmt.num(w.last_step - w.first_step + 1),
                               fmt.num(s.count), fmt.pct(s.time_share), causes_text(s.causes),
                               f"{s.median_ms:.2f} / {s.p99_ms:.2f} / {s.max_ms:.2f} ms "
                               f"(max {s.max_ms / s.median_ms:.1f}× median)" if s.median_ms > 0 else fmt.DASH, gc))
    return rows


def summary_table(rec: RunRecord) -> Table | None:
    """The summary as a table, a row per decode cell with figures (None: no such cell)."""
    rows = summary_rows(rec)
    return Table(tuple(HEAD), tuple(astuple(r) for r in rows)) if rows else None


def cell_slow_steps(e: DecodeEntry) -> list[SlowStep]:
    """The cell's slow window steps (none without a trace or a window)."""
    w = m.window(e.trace) if e.trace is not None else None
    return slow_steps(e.trace.steps, w) if w is not None else []


def worst_lines(e: DecodeEntry, limit: int = 5, slow: list[SlowStep] | None = None) -> list[str]:
    """The cell's slowest flagged steps, one line each: row, time against its reference's median, cause
    (``slow``: the cell's slow steps, when the caller has them already)."""
    slow = sorted(cell_slow_steps(e) if slow is None else slow, key=lambda s: -s.time_s)[:limit]
    return [f"step {s.row}: {s.time_s * 1e3:.1f} ms ({s.time_s / s.median_s:.0f}× the {s.reference} median "
            f"{s.median_s * 1e3:.2f} ms): {s.cause}, {s.detail}" for s in slow if s.median_s > 0]


def markdown_section(rec: RunRecord, table) -> str:
    """The Markdown report's "Slow steps" section; ``table(head, body)`` makes a table."""
    v = summary_table(rec)
    if v is None:
        return ""
    lines = ["## Slow steps", "", NOTE, "", table(list(v.head), [list(r) for r in v.rows])]
    for e in _cells(rec):
        worst = worst_lines(e)
        if worst:
            lines += ["", f"{format_tokens(e.context)} × {e.concurrency}, slowest:", ""] + [f"- {x}" for x in worst]
    return "\n".join(lines)


def grid_text(e: DecodeEntry | None) -> str:
    """A cell of the slow-steps matrix: ``3 (1.2%)``, or a dash."""
    if e is None or e.figures is None or e.figures.slow is None:
        return fmt.DASH
    s = e.figures.slow
    return f"{s.count} ({fmt.pct(s.time_share)})" if s.count else "0"


def timeline(e: DecodeEntry, slow: list[SlowStep] | None = None) -> Chart | None:
    """Each window step's time against its time from the window's opening; slow steps as a series per cause
    (``slow``: the cell's slow steps, when the caller has them already)."""
    w = m.window(e.trace) if e.trace is not None else None
    if w is None:
        return None
    s = e.trace.steps
    rows = np.arange(w.first_step, w.last_step + 1)
    x = s.t_end_s[rows] - w.open_s
    ms = (s.t_end_s[rows] - s.t_start_s[rows]) * 1e3
    slow = slow_steps(s, w) if slow is None else slow
    flagged = np.isin(rows, [z.row for z in slow])
    keep = np.flatnonzero(~flagged)
    keep = keep[np.linspace(0, keep.size - 1, min(keep.size, MAX_DOTS)).astype(int)] if keep.size else keep
    series = [Series("step", x[keep].tolist(), ms[keep].tolist())]
    for cause in CAUSES:
        mine = [z.row - w.first_step for z in slow if z.cause == cause]
        if mine:
            series.append(Series(f"slow: {cause}", x[mine].tolist(), ms[mine].tolist()))
    return Chart("Window steps: step time over the window", "seconds from the window's opening", "step time (ms)",
                 tuple(series), scatter=True, width=420, height=200)
