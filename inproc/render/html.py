"""The HTML report: one self-contained page (inline CSS and SVG, no URL of any kind).

It opens from disk with no network: no scripts, fonts, stylesheets or images are
fetched. Same header and tables as the Markdown report (one view, ``inproc.render.report_view``),
plus a heatmap of total tok/s, charts of per-request and prefill speed, and per-cell telemetry small multiples.
"""
from __future__ import annotations

import math
import re

from inproc import types as st
from inproc.measure.anatomy import OFF
from inproc.render import fmt
from inproc.render.charts import decode_chart, prefill_chart, step_panels, telemetry_panels
from inproc.render.curve import curve
from inproc.render.graphs.section import graphs_html
from inproc.render.header import Header
from inproc.render.matrix import MEDIANS_NOTE, Grid, headline
from inproc.render.kv_matrix import KV_NOTE
from inproc.render.measurements import Measurement
from inproc.render import kernel_bars, slow_steps
from inproc.render.report_view import DECODE_NOTE, PREFILL_NOTE, DecodeView, ReportView, report_view
from inproc.render.writers import Table
from inproc.render.css import CSS
from inproc.render.svg import line_chart, t
from inproc.record.schema import RunRecord
from inproc.units import format_tokens


def render_html(rec: RunRecord, graph_sizes: tuple[tuple[int, ...], ...] = ()) -> str:
    """The whole report as one HTML page; ``graph_sizes``: lists for its CUDA graphs section."""
    v = report_view(rec)
    # The matrix first: a person opens the page to read it; the setup is there to answer questions about it.
    body = [_title(v.header), _decode(rec, v), _kv(v.kv), _prefill(v), _steps(rec), graphs_html(rec, graph_sizes),
            kernel_bars.html_section(rec, _table, _facts, _code), _slow(rec), _telemetry(rec), _setup(v.header), _all(v)]
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{t('Speed test matrix · ' + v.header.title)}</title><style>{CSS}</style></head><body>\n"
            + "\n".join(b for b in body if b) + "\n</body></html>\n")


def _code(text: str) -> str:
    """Docstring markup in definitions: `code` and *emphasis*."""
    return re.sub(r"\*(\w+)\*", r"<em>\1</em>", re.sub(r"`([^`]+)`", r"<code>\1</code>", t(text)))


def _facts(items: list[tuple[str, str]]) -> str:
    """Label / value rows (values already HTML); a table lays out in every browser."""
    return '<table class="facts">' + "".join(f"<tr><td>{t(k)}</td><td>{v}</td></tr>" for k, v in items) + "</table>"


def _title(h: Header) -> str:
    """The page's title, the one-line summary and the warnings: what to know before reading the matrix."""
    out = ["<h1>Speed test matrix</h1>", f'<div><b>{t(h.title)}</b></div><div class="sub">{t(h.summary)}</div>']
    return "\n".join(out + [f'<div class="warn">{t(w)}</div>' for w in h.warnings])


def _setup(h: Header) -> str:
    """The header's sections (hardware, engine, run, launch, capacity, anatomy), after the figures."""
    return "\n".join(f"<h2>{t(s.title)}</h2>" + _facts([(f.label, f"<pre>{t(f.value)}</pre>" if f.code else t(f.value))
                                                         for f in s.facts]) for s in h.sections)


def _table(head: list[str], body: list[list[str]], left: frozenset[int] = frozenset(), cls: str = "") -> str:
    """Cells in ``body`` are already HTML; columns in ``left`` are left-aligned."""
    th = "".join(f'<th{" class=l" if i in left else ""}>{t(h)}</th>' for i, h in enumerate(head))
    trs = "".join("<tr>" + "".join(c if c.startswith("<td") else f'<td{" class=l" if i in left else ""}>{c}</td>'
                                   for i, c in enumerate(row)) + "</tr>" for row in body)
    return f'<div class="scroll"><table class="{cls}"><tr>{th}</tr>{trs}</table></div>'


def _escaped(table: Table) -> tuple[list[str], list[list[str]]]:
    """A view's table as ``_table`` takes it: the head, and each cell as HTML."""
    return list(table.head), [[t(x) for x in row] for row in table.rows]


def _prefill(v: ReportView) -> str:
    if v.prefill is None:
        return ""
    chart = prefill_chart(list(v.rows))
    return (f"<h2>Prefill</h2><p>{PREFILL_NOTE}</p>" + _table(*_escaped(v.prefill), frozenset({0, 3}))
            + (line_chart(chart) if chart else ""))


def _heat_cell(m: Measurement, lo: float, hi: float) -> str:
    if not headline(m) or m.total_tok_s is None:
        return f'<td class="na" title="{t(m.reason)}">{t(m.status)}</td>'
    share = 0.0 if hi <= lo else (math.log(m.total_tok_s) - math.log(lo)) / (math.log(hi) - math.log(lo))
    # Light to dark blue on a log scale: throughput spans orders of magnitude across the matrix.
    r, g, b = (int(a + (z - a) * share) for a, z in ((222, 8), (235, 69), (247, 148)))
    ink = "#fff" if share > 0.55 else "#111"
    flags = [st.QUEUED] if m.status == st.QUEUED else []
    flags += ["throttled"] if m.throttled else []
    flags += ["disturbed"] if m.disturbed else []
    extra = "".join(f'<div class="s"><b>{t(f)}</b></div>' for f in flags)
    return (f'<td class="{"q" if flags else ""}" style="background:rgb({r},{g},{b});color:{ink}" title="{t(m.reason)}">'
            f'<div class="v">{t(fmt.tok_s(m.total_tok_s))}</div>{extra}<div class="s">{t(fmt.ms(m.ttft_ms))} TTFT</div></td>')


def _decode(rec: RunRecord, v: ReportView) -> str:
    d: DecodeView | None = v.decode
    if d is None:
        return ""
    grid = d.grid
    cells = [grid.cell(L, C) for L in grid.contexts for C in grid.concurrency]
    vals = [x for c in cells if headline(c) and (x := c.total_tok_s) is not None and x > 0]
    lo, hi = (min(vals), max(vals)) if vals else (1.0, 1.0)
    body = [[t(format_tokens(L))] + [_heat_cell(grid.cell(L, C), lo, hi) for C in grid.concurrency]
            for L in grid.contexts]
    notes = [*d.legend, d.ttft]
    warns = "".join(f'<div class="warn">{t(w)}</div>' for w in d.warnings)
    charts = [decode_chart(grid, "total_tok_s", "Total tok/s by concurrency", "total tok/s"),
              decode_chart(grid, "per_request_tok_s", "Per request tok/s by concurrency", "per request tok/s")]
    return (f"<h2>Sustained decode</h2><p>{DECODE_NOTE}</p>"
            + '<div class="charts">' + _table(["Context", *map(str, grid.concurrency)], body, frozenset({0}), "heat")
            + _slow_matrix(rec, grid) + "</div>"
            + "".join(f"<p>{t(n)}</p>" for n in notes) + warns
            + '<div class="charts">' + "".join(line_chart(c) for c in charts if c) + "</div>" + _curve(rec, list(v.rows)))


def _curve(rec: RunRecord, rows: list[Measurement]) -> str:
    """The throughput–interactivity curve (render/curve.py) with its note on the cells left out."""
    c = curve([("", rec, rows)])
    if c is None:
        return ""
    return (f'<div class="charts curve">{line_chart(c.chart)}</div>'
            + (f'<p class="curve-note">{t(c.note)}</p>' if c.note else ""))


def _slow_matrix(rec: RunRecord, grid: Grid) -> str:
    """Slow steps per cell (their share of the window's time), on the same grid as tok/s."""
    entries = {(e.context, e.concurrency): e for e in rec.decode}
    if not any(e.figures is not None and e.figures.slow is not None for e in entries.values()):
        return ""
    body = [[t(format_tokens(L)), *(t(slow_steps.grid_text(entries.get((L, C)))) for C in grid.concurrency)]
            for L in grid.contexts]
    return ('<div><p class="sub">slow steps (share of the window\'s time)</p>'
            + _table(["Context", *map(str, grid.concurrency)], body, frozenset({0})) + "</div>")


def _slow(rec: RunRecord) -> str:
    v = slow_steps.summary_table(rec)
    if v is None:
        return ""
    table = _table(list(v.head), [[t(x) for x in row] for row in v.rows], frozenset({0, 4}))
    blocks = []
    for e in rec.decode:
        if e.figures is None:
            continue
        slow = slow_steps.cell_slow_steps(e)
        chart = slow_steps.timeline(e, slow)
        if chart is not None:
            worst = "".join(f"<div class=sub>{t(x)}</div>" for x in slow_steps.worst_lines(e, 3, slow))
            blocks.append(f'<div class="panel"><h3>{t(f"decode {format_tokens(e.context)} × {e.concurrency}")}</h3>'
                          f"{line_chart(chart)}{worst}</div>")
    return (f"<h2>Slow steps</h2><p>{t(slow_steps.NOTE)}</p>" + table
            + f'<div class="charts">{"".join(blocks)}</div>')


def _kv(kv: Table | None) -> str:
    if kv is None:
        return ""
    return f"<h2>KV cache usage</h2><p>{t(KV_NOTE)}</p>" + _table(*_escaped(kv))


def _steps(rec: RunRecord) -> str:
    if not rec.settings.anatomy:
        return f"<h2>Step anatomy</h2><p>{t(OFF[0].upper() + OFF[1:])}.</p>"
    panels = step_panels(rec)
    if not panels:
        return ""
    blocks = "".join(f'<div class="panel"><h3>{t(p.title)}</h3>{"".join(line_chart(c) for c in p.charts)}</div>'
                     for p in panels)
    return ("<h2>Step anatomy</h2><p>Every step of each decode window: its time against the requests in its batch, "
            "coloured by the CUDA-graph mode the batch ran in.</p>" + f'<div class="charts">{blocks}</div>')


def _telemetry(rec: RunRecord) -> str:
    panels, why = telemetry_panels(rec)
    if not panels:
        return f"<h2>Telemetry</h2><p>Absent: {t(why)}.</p>"
    blocks = []
    for p in panels:
        note = f"<div class=sub>{t(p.note)}</div>" if p.note else ""
        blocks.append(f'<div class="panel"><h3>{t(p.title)}</h3>{"".join(line_chart(c) for c in p.charts)}{note}</div>')
    return "<h2>Telemetry</h2><p>Raw samples per decode cell; the shaded span is the measurement window.</p>" \
           f'<div class="charts">{"".join(blocks)}</div>'


def _all(v: ReportView) -> str:
    if v.measurements is None:
        return "<h2>All measurements</h2><p>Nothing measured yet.</p>"
    head, body = _escaped(v.measurements)
    left = frozenset(i for i, name in enumerate(head) if name in ("Phase", "Status"))
    if v.reason_column is not None:  # the reason wraps
        for row in body:
            row[v.reason_column] = f'<td class="reason">{row[v.reason_column]}</td>'
    defs = _facts([(label, _code(text)) for label, text in v.definitions])
    return (f"<h2>All measurements</h2><p>{t(MEDIANS_NOTE)}</p>" + _table(head, body, left)
            + f"<h2>Definitions</h2>{defs}")
