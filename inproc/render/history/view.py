"""The history subject's view: the verdict, one line per change, the notes, the spread learned, a trend chart per
metric and the nights (:class:`HistoryView`), built once from a :class:`~inproc.history.build.History`; the text,
Markdown and HTML arrangements (``formats``, ``page``) place these, so a line or column added here shows in each.
"""
from __future__ import annotations

from dataclasses import dataclass

from inproc.compare.samples import METRICS
from inproc.history.build import History
from inproc.render.history.lines import cell_text, change_line, night_text, notes, spread_lines, verdict_line
from inproc.render.svg import Chart, Series
from inproc.render.writers import Table

STRIPE = 0.08  # half-width of a change point's stripe, in nights


def trend_chart(h: History, metric: str) -> Chart:
    """Nights on x (1-based), the metric's figure on y, a line per cell; stripes at its change points."""
    series, stripes = [], set()
    for (cell, m), points in sorted(h.series.items()):
        if m != metric:
            continue
        series.append(Series(cell_text(cell), [p.night + 1 for p in points], [p.figure for p in points]))
    for c in h.changes:
        if c.metric == metric:
            stripes.add((c.night + 0.5 - STRIPE, c.night + 0.5 + STRIPE))
    ticks = tuple((i + 1, str(i + 1)) for i in range(len(h.nights))) if len(h.nights) <= 31 else ()
    m = METRICS[metric]
    return Chart(f"{m.label} per night", "night", m.unit, tuple(series), x_ticks=ticks, bands=tuple(sorted(stripes)),
                 markers=True, x_range=(1, len(h.nights)), width=720, height=300)


def figures_table(h: History) -> Table:
    """One row per night: its date, engine and commit, and each cell's first metric (— where not Valid)."""
    metric = h.settings.compare.metrics[0]
    cells = sorted({cell for cell, m in h.series if m == metric})
    head = ("#", "Night", "Created", "Engine", "Commit", *(f"{cell_text(c)} {METRICS[metric].unit}" for c in cells))
    rows = []
    for i, n in enumerate(h.nights):
        figures = [h.series[(c, metric)][i].figure for c in cells]
        rows.append((str(i + 1), n.label, f"{n.record.created}", f"{n.record.engine.name} {n.version}",
                     n.commit or "—", *("—" if f is None else f"{f:.4g}" for f in figures)))
    return Table(head, tuple(rows), right=(0, *range(5, len(head))))


def files_table(h: History) -> Table:
    """One row per night: its name, engine and commit, its date and the file it was read from."""
    rows = tuple((str(i + 1), night_text(n), f"{n.record.created}", f"{n.source}") for i, n in enumerate(h.nights))
    return Table(("#", "Night", "Created", "Run file"), rows, right=(0,))


@dataclass(frozen=True)
class MetricTrend:
    """One metric over the nights: its chart and its changes."""

    label: str
    chart: Chart
    changes: tuple[str, ...]


@dataclass(frozen=True)
class HistoryView:
    """What every format of a history shows, built once (:func:`history_view`)."""

    profile: str
    nights: int
    first: str  # the first night's label
    newest: str
    verdict: str  # the newest night's verdict, one line
    regression: bool
    changes: tuple[str, ...]  # one line per change, every metric
    trends: tuple[MetricTrend, ...]  # per metric: its chart and changes
    notes: tuple[str, ...]  # outlier nights, rows without enough data, unreadable nights, cells left out
    spreads: tuple[str, ...]  # per metric, the run-to-run spread learned
    figures: Table  # the nights, each cell's first metric
    files: Table  # the nights, the file each was read from


def history_view(h: History) -> HistoryView:
    trends = tuple(MetricTrend(METRICS[m].label, trend_chart(h, m),
                               tuple(change_line(h, c) for c in h.changes if c.metric == m))
                   for m in h.settings.compare.metrics)
    return HistoryView(h.nights[0].record.profile.name, len(h.nights), h.nights[0].label, h.nights[-1].label,
                       verdict_line(h), bool(h.regressions), tuple(change_line(h, c) for c in h.changes), trends,
                       tuple(notes(h)), tuple(spread_lines(h)), figures_table(h), files_table(h))
