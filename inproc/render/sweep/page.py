"""The sweep report as one self-contained HTML page: the variants, then per decode cell a chart with the variants
on the x axis and the cell's table, then where speculation pays with a chart per context. It places the one view
(:class:`~inproc.render.sweep.view.SweepView`) with the shared writers. No URL of any kind."""
from __future__ import annotations

from inproc.render.css import CSS
from inproc.render.graphs.sweep_lists import html_section
from inproc.render.svg import line_chart, t
from inproc.render.sweep.breakeven import PaysView
from inproc.render.sweep.view import CellView, SweepView, sweep_view
from inproc.render.writers import html_definitions, html_table
from inproc.sweep.summary import SweepSummary

_EXTRA_CSS = "tr.best td{background:#eaf4ea;font-weight:600}"
PAYS_NOTE = "x: each variant's measured mean acceptance length; shaded: each cell's 95 % break-even interval."


def _cell(c: CellView) -> str:
    table = html_table(c.table, marked=c.best, mark_class="best")
    return (f'<div class="panel"><h3>{t(c.title)}</h3>{line_chart(c.chart)}{table}'
            f"<p>{t(c.verdict)}</p></div>")


def pays_section(v: PaysView | None) -> list[str]:
    """Where speculation pays: the charts, the summary, each cell's points (empty without the analysis)."""
    if v is None:
        return []
    charts = "".join(f'<div class="panel">{line_chart(chart)}</div>' for chart in v.charts)
    body = ["<h2>Where speculation pays</h2>", f"<p>{PAYS_NOTE}</p>", f'<div class="charts">{charts}</div>',
            html_table(v.summary)]
    for c in v.cells:
        body += [f"<h3>{t(c.title)}</h3>", html_table(c.points)]
    return body


def html(v: SweepView) -> str:
    """The whole sweep report as one HTML page."""
    body = [f"<h1>Sweep: {t(v.profile)}</h1>", f'<div class="sub">{t(v.headline)}</div>',
            "<h2>Variants</h2>", html_table(v.variants)]
    body += [f'<div class="warn">{t(line)}</div>' for line in v.failures]
    body += html_section(v.lists)
    if v.cells:
        body += ["<h2>Decode cells</h2>", '<div class="charts">' + "".join(map(_cell, v.cells)) + "</div>"]
    else:
        body.append("<h2>Decode cells</h2><p>Nothing measured yet.</p>")
    body += pays_section(v.pays)
    body.append(f"<h2>Definitions</h2>{html_definitions(v.definitions, code=True)}")
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{t('Sweep · ' + v.profile)}</title><style>{CSS}{_EXTRA_CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def render_sweep_html(s: SweepSummary) -> str:
    return html(sweep_view(s))
