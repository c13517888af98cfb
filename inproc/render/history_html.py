"""A history as one self-contained HTML page: a trend chart per metric, one line per cell, change points marked.

The report's offline rules hold: inline CSS and SVG, no script, font, image or URL of any
kind, so the page opens from disk with no network. A change point is a shaded stripe
just before the first night of its new level, and is listed under the chart.
"""
from __future__ import annotations

from inproc.compare.samples import METRICS
from inproc.history.build import History
from inproc.render.history import cell_text, change_line, night_text, notes, spread_lines, verdict_line
from inproc.render.html import CSS
from inproc.render.svg import Chart, Series, line_chart, t

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


def _nights(h: History) -> str:
    rows = "".join(f"<tr><td>{i + 1}</td><td class=\"l\">{t(night_text(n))}</td><td class=\"l\">{t(n.record.created)}</td>"
                   f"<td class=\"l\">{t(n.source)}</td></tr>" for i, n in enumerate(h.nights))
    return f"<table><tr><th>#</th><th class=\"l\">Night</th><th class=\"l\">Created</th><th class=\"l\">Run file</th></tr>{rows}</table>"


def render_history_html(h: History) -> str:
    """The whole trend page."""
    profile = h.nights[0].record.profile.name
    body = [f"<h1>inproc history · {t(profile)}</h1>", f"<p class=\"sub\">{len(h.nights)} nights, "
            f"{t(h.nights[0].label)} to {t(h.nights[-1].label)}</p>",
            f"<div class=\"{'warn' if h.regressions else 'sub'}\">{t(verdict_line(h))}</div>"]
    for metric in h.settings.compare.metrics:
        changes = [c for c in h.changes if c.metric == metric]
        body.append(f"<h2>{t(METRICS[metric].label)}</h2><div class=\"scroll\">{line_chart(trend_chart(h, metric))}</div>")
        body.append("<ul>" + "".join(f"<li>{t(change_line(h, c))}</li>" for c in changes) + "</ul>" if changes
                    else "<p class=\"sub\">No change point beyond the noise and the threshold.</p>")
    extra = notes(h)
    if extra:
        body.append("<h2>Outlier nights and notes</h2><ul>" + "".join(f"<li>{t(x)}</li>" for x in extra) + "</ul>")
    body.append("<h2>Spread learned from the nights</h2><ul>" + "".join(f"<li>{t(x)}</li>" for x in spread_lines(h))
                + "</ul>")
    body += ["<h2>Nights</h2>", _nights(h)]
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{t('inproc history · ' + profile)}</title><style>{CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")
