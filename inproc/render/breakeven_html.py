"""Where speculation pays, in the sweep's HTML page: per context one chart, one curve per concurrency.

y is each speculative variant's total tok/s ÷ the same cell's tok/s without speculation, x its
measured acceptance length; the line at 1× is speculation's break-even, and each cell's break-even
interval is a shaded band.
"""
from __future__ import annotations

import math

from inproc.render.breakeven import POINT_HEAD, SUMMARY_HEAD, point_values, summary_values, verdict_text
from inproc.render.svg import Chart, Series, line_chart, t
from inproc.sweep.pays import CellPays
from inproc.units import format_tokens


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


def _table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th class=l>{t(h)}</th>" for h in head)
    trs = "".join("<tr>" + "".join(f"<td class=l>{t(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f'<div class="scroll"><table><tr>{th}</tr>{trs}</table></div>'


def section(pays: tuple[CellPays, ...]) -> list[str]:
    """The page's section (empty without the analysis)."""
    if not pays:
        return []
    contexts = sorted({p.context for p in pays})
    charts = "".join(f'<div class="panel">{line_chart(context_chart(L, [p for p in pays if p.context == L]))}</div>'
                     for L in contexts)
    body = ["<h2>Where speculation pays</h2>",
            "<p>x: each variant's measured mean acceptance length; shaded: each cell's 95 % break-even interval.</p>",
            f'<div class="charts">{charts}</div>', _table(SUMMARY_HEAD, [summary_values(p) for p in pays])]
    for p in pays:
        body += [f"<h3>{t(format_tokens(p.context))} × {p.concurrency}: {t(verdict_text(p))}</h3>",
                 _table(POINT_HEAD, [point_values(q) for q in ([p.base] if p.base else []) + list(p.points)])]
    return body
