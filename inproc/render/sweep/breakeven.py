"""Where speculation pays, the sweep's section: its view (:class:`PaysView`: the summary per cell, each cell's
points, a chart per context), built once from :class:`~inproc.sweep.pays.CellPays` for the report's Markdown and
HTML; ``data`` writes the same rows to ``break-even.json`` and ``break-even.csv``.

A chart's y is each speculative variant's total tok/s ÷ the same cell's tok/s without speculation, x its
measured acceptance length; the line at 1× is speculation's break-even, and each cell's break-even
interval is a shaded band.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from inproc.render import fmt
from inproc.render.definitions import Definition, doc
from inproc.render.svg import Chart, Series
from inproc.render.writers import Table
from inproc.sweep import breakeven as be
from inproc.sweep import pays as sp
from inproc.sweep.pays import CellPays
from inproc.units import format_tokens

SUMMARY_HEAD = ["Context", "Requests at once", "Verdict", "Break-even length", "95 % interval", "Measured range",
                "Speedup", "Left out"]
POINT_HEAD = ["Variant", "Acceptance length", "Total tok/s", "± (std. error)", "Time per output token"]
NOTE = ("x: each variant's measured mean acceptance length; the break-even is where the fitted speculative "
        "tok/s meets the variant without speculation.")


def _num(v: float | None, digits: int = 2) -> str:
    return fmt.DASH if v is None or not math.isfinite(v) else f"{v:.{digits}f}"


def speedup_text(p: CellPays) -> str:
    s = p.speedup
    if s is None:
        return fmt.DASH
    where = "" if s.inside else ", extrapolated"
    return f"{s.ratio:.2f}× at {s.at:g} [{s.low:.2f}, {s.high:.2f}]{where}"


def verdict_text(p: CellPays) -> str:
    """``pays above 2.71 [2.55, 2.90]``, ``never pays (2.00-3.50)``, ``undetermined: why``."""
    b = p.break_even
    if b.verdict in (be.PAYS_ABOVE, be.PAYS_BELOW):
        return f"{b.verdict} {b.length:.2f} [{b.low:.2f}, {b.high:.2f}]"
    if b.verdict in (be.ALWAYS, be.NEVER):
        return f"{b.verdict} over {b.lowest:.2f}-{b.highest:.2f}"
    return f"{b.verdict}: {b.reason}"


def summary_values(p: CellPays) -> list[str]:
    b = p.break_even
    measured = f"{b.lowest:.2f}-{b.highest:.2f}" if b.lowest is not None else fmt.DASH
    interval = f"[{b.low:.2f}, {b.high:.2f}]" if b.low is not None else fmt.DASH
    return [format_tokens(p.context), str(p.concurrency), b.verdict if b.verdict != be.UNDETERMINED else verdict_text(p),
            _num(b.length), interval, measured, speedup_text(p), "; ".join(p.left_out)]


def point_values(q: sp.SpecPoint) -> list[str]:
    return [q.name, _num(q.acceptance), fmt.tok_s(q.tok_s), fmt.tok_s(q.tok_s_se), fmt.ms(q.tpot_ms, 1)]


def cell_points(p: CellPays) -> list[sp.SpecPoint]:
    """The base first, then the speculative points by acceptance length."""
    return ([p.base] if p.base else []) + list(p.points)


def context_chart(context: int, pays: list[CellPays]) -> Chart:
    """Speedup against measured acceptance length, one series per concurrency, break-even bands shaded."""
    series, xs_all, bands = [], [], []
    for p in sorted(pays, key=lambda p: p.concurrency):
        if p.base is None or not p.points or p.base.tok_s <= 0:
            continue
        xs = [q.acceptance for q in p.points]
        series.append(Series(f"C = {p.concurrency}", xs, [q.tok_s / p.base.tok_s for q in p.points]))
        xs_all += xs
        b = p.break_even
        if b.low is not None and math.isfinite(b.low) and math.isfinite(b.high):
            bands.append((b.low, b.high))
    if xs_all:
        lo, hi = min(xs_all + [b for band in bands for b in band]), max(xs_all + [b for band in bands for b in band])
        series.append(Series("no speculation (1×)", [lo, hi], [1.0, 1.0]))
    return Chart(f"Decode {format_tokens(context)}: speculative ÷ no-speculation tok/s", "measured mean acceptance length",
                 "speedup (×)", tuple(series), markers=True, bands=tuple(bands))


def definitions() -> list[Definition]:
    return [Definition("Break-even length", doc(be, full=True)),
            Definition("Total tok/s std. error", doc(sp.tok_s_error)),
            Definition("Time per output token", doc(sp.tpot_ms))]


@dataclass(frozen=True)
class PaysCell:
    """One cell: "256 × 4: pays above 2.71 [2.55, 2.90]" and its points (the base first)."""

    title: str
    points: Table


@dataclass(frozen=True)
class PaysView:
    """The section: what x is, a chart per context, a summary row per cell, each cell's points."""

    note: str
    charts: tuple[Chart, ...]
    summary: Table
    cells: tuple[PaysCell, ...]


def pays_view(pays: tuple[CellPays, ...]) -> PaysView | None:
    """The section's view; None without the analysis."""
    if not pays:
        return None
    charts = tuple(context_chart(L, [p for p in pays if p.context == L]) for L in sorted({p.context for p in pays}))
    cells = tuple(PaysCell(f"{format_tokens(p.context)} × {p.concurrency}: {verdict_text(p)}",
                           Table(tuple(POINT_HEAD), tuple(tuple(point_values(q)) for q in cell_points(p))))
                  for p in pays)
    return PaysView(NOTE, charts, Table(tuple(SUMMARY_HEAD), tuple(tuple(summary_values(p)) for p in pays)), cells)
