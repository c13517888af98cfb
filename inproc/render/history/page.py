"""A history as one self-contained HTML page: a trend chart per metric, one line per cell, change points marked.

The page places the history's view (:class:`~inproc.render.history.view.HistoryView`): per metric its chart and
its changes, then the notes, the spread learned and the nights. The report's offline rules hold: inline CSS and
SVG, no script, font, image or URL of any kind, so the page opens from disk with no network. A change point is a
shaded stripe just before the first night of its new level, and is listed under the chart.
"""
from __future__ import annotations

from inproc.history.build import History
from inproc.render.css import CSS
from inproc.render.history.view import HistoryView, history_view
from inproc.render.svg import line_chart, t
from inproc.render.writers import Table


def _list(lines: tuple[str, ...]) -> str:
    return "<ul>" + "".join(f"<li>{t(x)}</li>" for x in lines) + "</ul>"


def _nights(table: Table) -> str:
    """The nights' table, its numbers right-aligned (the page's tables are so unless classed ``l``)."""
    cls = lambda i: "" if i in table.right else ' class="l"'  # noqa: E731
    th = "".join(f"<th{cls(i)}>{t(h)}</th>" for i, h in enumerate(table.head))
    rows = "".join("<tr>" + "".join(f"<td{cls(i)}>{t(v)}</td>" for i, v in enumerate(row)) + "</tr>"
                   for row in table.rows)
    return f"<table><tr>{th}</tr>{rows}</table>"


def html(v: HistoryView) -> str:
    """The whole trend page."""
    body = [f"<h1>inproc history · {t(v.profile)}</h1>",
            f"<p class=\"sub\">{v.nights} nights, {t(v.first)} to {t(v.newest)}</p>",
            f"<div class=\"{'warn' if v.regression else 'sub'}\">{t(v.verdict)}</div>"]
    for trend in v.trends:
        body.append(f"<h2>{t(trend.label)}</h2><div class=\"scroll\">{line_chart(trend.chart)}</div>")
        body.append(_list(trend.changes) if trend.changes
                    else "<p class=\"sub\">No change point beyond the noise and the threshold.</p>")
    if v.notes:
        body.append("<h2>Outlier nights and notes</h2>" + _list(v.notes))
    body.append("<h2>Spread learned from the nights</h2>" + _list(v.spreads))
    body += ["<h2>Nights</h2>", _nights(v.files)]
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{t('inproc history · ' + v.profile)}</title><style>{CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def render_history_html(h: History) -> str:
    return html(history_view(h))
