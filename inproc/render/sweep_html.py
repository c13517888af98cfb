"""The sweep report as one self-contained HTML page: the variants, then per decode cell a
chart with the variants on the x axis and the cell's table. No URL of any kind."""
from __future__ import annotations

import re

from inproc import types as st
from inproc.render.html import CSS
from inproc.render.sweep import (
    CELL_HEAD,
    VARIANT_HEAD,
    cell_title,
    cell_values,
    cell_verdict,
    failure_lines,
    headline,
    sweep_definitions,
    variant_values,
)
from inproc.render.svg import Chart, Series, line_chart, t
from inproc.render import breakeven_html
from inproc.render.graphs.sweep_lists import html_section
from inproc.sweep.summary import CellSummary, SweepSummary

_EXTRA_CSS = "tr.best td{background:#eaf4ea;font-weight:600}"


def cell_chart(c: CellSummary, keys: str) -> Chart:
    """Total tok/s of each variant (x: the variants in order, labelled by their values); Valid and
    Requests queued variants as two series, so a queued point is never read as a Valid one."""
    xs = [r.index for r in c.rows]
    series = tuple(Series(status, xs, [r.total_tok_s if r.status == status else None for r in c.rows])
                   for status in (st.VALID, st.QUEUED) if any(r.status == status for r in c.rows))
    ticks = tuple((r.index, r.label) for r in c.rows)
    width = max(360, 90 * len(c.rows))
    return Chart(f"{cell_title(c)}: total tok/s by variant", keys, "total tok/s", series, x_ticks=ticks,
                 markers=True, width=width, x_range=(min(xs), max(xs)))  # failed variants keep their place


def _code(text: str) -> str:
    """Definitions mark code in backticks, as the run report's do."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", t(text))


def _table(head: list[str], rows: list[list[str]], best: list[bool] | None = None) -> str:
    th = "".join(f"<th class=l>{t(h)}</th>" for h in head)
    trs = "".join(f'<tr{" class=best" if best and best[i] else ""}>' + "".join(f"<td class=l>{t(v)}</td>" for v in row)
                  + "</tr>" for i, row in enumerate(rows))
    return f'<div class="scroll"><table><tr>{th}</tr>{trs}</table></div>'


def _cell(c: CellSummary, keys: str) -> str:
    table = _table(CELL_HEAD, [cell_values(r) for r in c.rows], [r.best for r in c.rows])
    return (f'<div class="panel"><h3>{t(cell_title(c))}</h3>{line_chart(cell_chart(c, keys))}{table}'
            f"<p>{t(cell_verdict(c))}</p></div>")


def render_sweep_html(s: SweepSummary) -> str:
    """The whole sweep report as one HTML page."""
    keys = " · ".join(v.key for v in s.sweep.plan.varies)
    body = [f"<h1>Sweep: {t(s.sweep.plan.profile_name)}</h1>", f'<div class="sub">{t(headline(s))}</div>',
            "<h2>Variants</h2>", _table(VARIANT_HEAD, [variant_values(v) for v in s.variants])]
    body += [f'<div class="warn">{t(line)}</div>' for line in failure_lines(s)]
    body += html_section(s.graphs)
    if s.cells:
        body += ["<h2>Decode cells</h2>", '<div class="charts">' + "".join(_cell(c, keys) for c in s.cells) + "</div>"]
    else:
        body.append("<h2>Decode cells</h2><p>Nothing measured yet.</p>")
    body += breakeven_html.section(s.pays)
    defs = "".join(f"<tr><td>{t(d.label)}</td><td>{_code(d.text)}</td></tr>" for d in sweep_definitions(bool(s.pays)))
    body.append(f'<h2>Definitions</h2><table class="facts">{defs}</table>')
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{t('Sweep · ' + s.sweep.plan.profile_name)}</title><style>{CSS}{_EXTRA_CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")
