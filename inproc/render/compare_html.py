"""A comparison as one HTML page (``inproc compare --html``): the verdict table and both runs' curves on one chart.

The table is the text report's (``inproc.render.compare``, or ``inproc.render.side_by_side``
for two engines), the chart is ``inproc.render.curve``'s throughput–interactivity curve with
a line per context and run, each labelled by its side, its file and its engine. Like the run
report it is self-contained: inline CSS and SVG, nothing fetched.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from inproc.compare.side_by_side import SideBySide
from inproc.compare.verdicts import FASTER, SLOWER, STATUS_CHANGED, Comparison
from inproc.record.schema import RunRecord
from inproc.render import compare as text
from inproc.render import compare_kernels
from inproc.render import side_by_side as sbs
from inproc.render.curve import curve
from inproc.render.html import CSS
from inproc.render.measurements import measurements
from inproc.render.svg import line_chart, t

STRONG = (SLOWER, STATUS_CHANGED)  # rows set in bold, as in the Markdown report


def run_labels(role: str, path: str, runs: Sequence[RunRecord]) -> list[str]:
    """A label per run of one side: "baseline run-1 (vllm 0.32.0)"; "… #2" for the second run of a baseline;
    without a role (two engines, whose names tell the sides apart) "engines-vllm (vllm 0.32.0)"."""
    name = Path(path).name.removesuffix(".json")
    out = []
    for i, rec in enumerate(runs):
        engine = f"{rec.engine.name} {rec.engine.version}"
        out.append(f"{role + ' ' if role else ''}{name}{f' #{i + 1}' if len(runs) > 1 else ''} ({engine})")
    return out


def _table(head: list[str], body: list[list[str]], strong: Sequence[bool] = ()) -> str:
    th = "".join(f"<th>{t(h)}</th>" for h in head)
    trs = "".join(f"<tr{' class=s' if i < len(strong) and strong[i] else ''}>"
                  + "".join(f"<td class=l>{t(v)}</td>" for v in row) + "</tr>" for i, row in enumerate(body))
    return f'<div class="scroll"><table class="verdicts"><tr>{th}</tr>{trs}</table></div>'


def _comparison(c: Comparison, explained) -> tuple[str, str]:
    title = f"inproc compare: {'regression' if c.regressions else 'not every row judged' if c.undecided else 'no regression'}"
    rows = [[text.MARKS[r.verdict].strip()] + text.row_cells(r) for r in c.rows]
    body = [f"<p><strong>{t(text.summary_line(c))}</strong></p>",
            "<ul>" + "".join(f"<li>{t(h)}</li>" for h in text.header_lines(c) + [text.geomeans_line(c)]) + "</ul>",
            _table([""] + text.COLUMNS, rows, [r.verdict in STRONG for r in c.rows])]
    if explained:
        body.append("<h2>What changed in the steps</h2><ul>" + "".join(
            f"<li>{t(e.row.key)} {t(e.row.metric)} ({'slower' if e.row.verdict == SLOWER else 'faster'}): "
            f"{t(e.diagnosis)}</li>" for e in explained if e.row.verdict in (SLOWER, FASTER)) + "</ul>")
    body.append(compare_kernels.html_section(c))
    return title, "\n".join(b for b in body if b)


def _side_by_side(c: SideBySide) -> tuple[str, str]:
    body = ["<ul>" + "".join(f"<li>{t(h)}</li>" for h in sbs.header_lines(c)) + "</ul>",
            _table(sbs.columns(c), sbs.table_rows(c))]
    return "inproc compare: two engines side by side", "\n".join(body)


def _curve(runs: Sequence[tuple[str, RunRecord]]) -> str:
    c = curve([(label, rec, measurements(rec)) for label, rec in runs])
    if c is None:
        return "<p>No decode cells: no curve.</p>"
    return (f'<h2>{t(c.chart.title)}</h2><div class="charts curve">{line_chart(c.chart)}</div>'
            + (f'<p class="curve-note">{t(c.note)}</p>' if c.note else ""))


def render_compare_html(result: Comparison | SideBySide, base: Sequence[RunRecord], new: Sequence[RunRecord],
                        base_path: str, new_path: str, explained: Sequence = ()) -> str:
    """The page: title, verdict line and header, the table, the diagnoses (a comparison), then the curve.

    ``explained``: ``inproc.history.explain``'s diagnoses of a comparison's slower and faster rows.
    """
    if isinstance(result, SideBySide):
        title, body = _side_by_side(result)
        roles = ("", "")
    else:
        title, body = _comparison(result, explained)
        roles = ("baseline", "new")
    labelled = [*zip(run_labels(roles[0], base_path, base), base), *zip(run_labels(roles[1], new_path, new), new)]
    css = CSS + "table.verdicts td{white-space:normal}tr.s td{font-weight:600}"
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{t(title)}</title><style>{css}</style></head><body>\n"
            f"<h1>{t(title)}</h1>\n{body}\n{_curve(labelled)}\n</body></html>\n")
