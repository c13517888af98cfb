"""The HTML report's kernel section: stacked bars of time per step by category across the matrix, and its tables.

One small chart per context, a bar per concurrency along it, each bar stacked by category
(ms per step, one colour per category in every chart) with a tick at the step's own time,
so a person sees where attention overtakes the GEMMs as the context grows. Inline SVG,
written by hand like ``inproc.render.svg``: nothing fetched.
"""
from __future__ import annotations

import math

from inproc.kernels.categories import CATEGORIES
from inproc.record.schema import RunRecord
from inproc.render import kernels as k
from inproc.render.svg import PALETTE, nice_step, t, tick_label
from inproc.units import format_tokens

# The same colour for a category in every chart; other in grey, apart from the black tick of the step's own time.
COLOURS = {**dict(zip(CATEGORIES, PALETTE[:7])), "other": PALETTE[9]}
BAR, GAP, LEFT, TOP, BOTTOM, HEIGHT, MIN_WIDTH = 26, 18, 52, 26, 40, 200, 220


def _bar(x: float, c: k.CellKernels, cats: list[str], py) -> list[str]:
    """One stacked bar (a rect per category, its value in a tooltip) and the step's own time as a tick."""
    by, total = c.summary.ns_by_category(), c.summary.total_ns() or 1.0
    out, base = [], 0.0
    for cat in cats:
        ms = by[cat] / 1e6
        if ms <= 0:
            continue
        y0, y1 = py(base), py(base + ms)
        out.append(f'<rect x="{x:.1f}" y="{y1:.1f}" width="{BAR}" height="{max(y0 - y1, 0.5):.1f}" '
                   f'fill="{COLOURS[cat]}" data-category="{cat}" data-ms="{ms!r}"><title>{t(c.label)} · {cat} '
                   f'{ms:.3g} ms per step ({by[cat] / total * 100:.0f} %)</title></rect>')
        base += ms
    if c.summary.step_s:
        y = py(c.summary.step_s * 1e3)
        out.append(f'<line x1="{x - 4:.1f}" x2="{x + BAR + 4:.1f}" y1="{y:.1f}" y2="{y:.1f}" stroke="#000" '
                   f'stroke-width="2" data-step-ms="{c.summary.step_s * 1e3!r}"><title>{t(c.label)} · step '
                   f'{c.summary.step_s * 1e3:.3g} ms</title></line>')
    return out


def _tick(ms: float) -> str:
    return tick_label(ms) if ms >= 1 or ms == 0 else f"{ms:.3g}"  # below 1 ms: 0.05, 0.25


def context_chart(context: int, row: dict[int, k.CellKernels], concurrency: list[int], cats: list[str]) -> str:
    """One context's bars, a slot per concurrency (empty where the cell had no kernel pass)."""
    width = max(MIN_WIDTH, LEFT + len(concurrency) * (BAR + GAP) + GAP)
    top_ms = max([c.summary.total_ns() / 1e6 for c in row.values()]
                 + [c.summary.step_s * 1e3 for c in row.values() if c.summary.step_s] + [1e-6])
    step = nice_step(top_ms, 4)
    top = max(step, math.ceil(top_ms / step) * step)
    y0, y1 = HEIGHT - BOTTOM, TOP

    def py(ms: float) -> float:
        return y0 - min(ms, top) / top * (y0 - y1)

    title = f"{format_tokens(context)} context"
    out = [f'<svg class="chart" viewBox="0 0 {width} {HEIGHT}" width="{width}" height="{HEIGHT}" role="img" '
           f'aria-label="{t(title)}"><title>{t(title)}</title>',
           f'<text x="{width / 2}" y="16" text-anchor="middle" class="ct">{t(title)}</text>']
    v = 0.0
    while v <= top + 1e-12:
        out.append(f'<line class="grid" x1="{LEFT}" x2="{width - 4}" y1="{py(v):.1f}" y2="{py(v):.1f}"/>'
                   f'<text x="{LEFT - 4}" y="{py(v) + 4:.1f}" text-anchor="end">{_tick(v)}</text>')
        v += step
    for i, conc in enumerate(concurrency):
        x = LEFT + GAP + i * (BAR + GAP)
        out.append(f'<text x="{x + BAR / 2:.1f}" y="{y0 + 14}" text-anchor="middle">{conc}</text>')
        if conc in row:
            out += _bar(x, row[conc], cats, py)
    out.append(f'<text x="{(LEFT + width) / 2:.1f}" y="{y0 + 32}" text-anchor="middle">simultaneous requests</text>'
               f'<text transform="translate(14 {(y0 + y1) / 2}) rotate(-90)" text-anchor="middle">ms per step</text>')
    return "".join(out + ["</svg>"])


def _legend(cats: list[str]) -> str:
    items = "".join(f'<span style="margin-right:14px"><span style="display:inline-block;width:10px;height:10px;'
                    f'background:{COLOURS[c]};margin-right:4px"></span>{t(c)}</span>' for c in cats)
    return f'<p class="sub">{items}<span>▬ the step\'s own time</span></p>'


def html_section(rec: RunRecord, table, facts, code) -> str:
    """The HTML report's "Kernels" section ("" without a kernel pass); ``table``, ``facts`` and ``code`` are the
    report's own helpers (``inproc.render.html``)."""
    cs, without = k.cells(rec), "".join(f'<div class="warn">{t(x)}</div>' for x in k.missing(rec) + k.unfiled(rec))
    if not cs:
        return f"<h2>Kernels</h2>{without}" if without else ""
    cats = k.shown_categories(cs)
    concurrency = sorted({c.concurrency for c in cs})
    rows: dict[int, dict[int, k.CellKernels]] = {}
    for c in cs:
        rows.setdefault(c.context, {})[c.concurrency] = c
    charts = "".join(f'<div class="panel">{context_chart(L, rows[L], concurrency, cats)}</div>' for L in sorted(rows))
    v = k.kernels_view(cs)
    body = [[t(x) for x in row] for row in v.table.rows]
    notes = "".join(f'<div class="warn">{t(note)}</div>' for note in v.host_bound)
    top = "".join(f"<li>{t(label)}: {t(line)}</li>" for label, line in v.top)
    unmatched = "".join(f"<li>{t(label)}: {t(u)}</li>" for label, u in v.unmatched)
    return ("<h2>Kernels</h2>" + f"<p>{t(k.intro(cs))}</p>" + _legend(cats) + f'<div class="charts">{charts}</div>'
            + table(list(v.table.head), body, frozenset({0})) + notes + without
            + f"<p>Top kernels per step:</p><ul>{top}</ul>"
            + (f"<p>Names no rule matched (<code>other</code>), with their share, so the rule table can grow:</p>"
               f"<ul>{unmatched}</ul>" if unmatched else "")
            + facts([(d.label, code(d.text)) for d in v.definitions]))
