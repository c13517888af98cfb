"""A comparison as one HTML page (``inproc compare --html``): the verdict table and both runs' curves on one chart.

The page places the compare subject's view (:class:`~inproc.render.compare.view.CompareView`, or two engines'
:class:`~inproc.render.compare.side_by_side.SideBySideView`) with the shared writers and adds what only a page
shows: ``inproc.render.curve``'s throughput–interactivity curve with a line per context and run, each labelled by
its side, its file and its engine. Like the run report it is self-contained: inline CSS and SVG, nothing fetched.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from inproc.compare.side_by_side import SideBySide
from inproc.compare.verdicts import Comparison
from inproc.history.explain import Explained
from inproc.record.schema import RunRecord
from inproc.render.compare.side_by_side import SideBySideView, side_by_side_view
from inproc.render.compare.view import CompareView, compare_view
from inproc.render.css import CSS
from inproc.render.curve import curve
from inproc.render.measurements import measurements
from inproc.render.svg import line_chart, t
from inproc.render.writers import Table, html_table

PAGE_CSS = CSS + "table.verdicts td{white-space:normal}tr.s td{font-weight:600}"


def run_labels(role: str, path: str, runs: Sequence[RunRecord]) -> list[str]:
    """A label per run of one side: "baseline run-1 (vllm 0.32.0)"; "… #2" for the second run of a baseline;
    without a role (two engines, whose names tell the sides apart) "engines-vllm (vllm 0.32.0)"."""
    name = Path(path).name.removesuffix(".json")
    out = []
    for i, rec in enumerate(runs):
        engine = f"{rec.engine.name} {rec.engine.version}"
        out.append(f"{role + ' ' if role else ''}{name}{f' #{i + 1}' if len(runs) > 1 else ''} ({engine})")
    return out


def _list(lines: Sequence[str]) -> str:
    return "<ul>" + "".join(f"<li>{t(x)}</li>" for x in lines) + "</ul>"


def _comparison(v: CompareView) -> str:
    table = Table(("", *v.columns), tuple((r.mark.strip(), *r.cells) for r in v.rows))
    body = [f"<p><strong>{t(v.summary)}</strong></p>", _list((*v.header, v.geomeans)),
            html_table(table, marked=[r.strong for r in v.rows], mark_class="s", table_class="verdicts", head_class="")]
    if v.diagnoses:
        body.append("<h2>What changed in the steps</h2>" + _list(v.page_diagnoses))
    if v.kernels:
        k = v.kernels
        body.append(f"<h2>{t(k.title)}</h2><p>{t(k.rule)}</p>" + _list(k.lines))
    return "\n".join(body)


def _side_by_side(v: SideBySideView) -> str:
    return _list(v.header) + "\n" + html_table(v.table, table_class="verdicts", head_class="")


def _curve(runs: Sequence[tuple[str, RunRecord]]) -> str:
    c = curve([(label, rec, measurements(rec)) for label, rec in runs])
    if c is None:
        return "<p>No decode cells: no curve.</p>"
    return (f'<h2>{t(c.chart.title)}</h2><div class="charts curve">{line_chart(c.chart)}</div>'
            + (f'<p class="curve-note">{t(c.note)}</p>' if c.note else ""))


def html(v: CompareView | SideBySideView, base: Sequence[RunRecord], new: Sequence[RunRecord],
         base_path: str, new_path: str) -> str:
    """The page: title, verdict line and header, the table, the diagnoses and kernels (a comparison), then the curve."""
    two = isinstance(v, SideBySideView)
    roles = ("", "") if two else ("baseline", "new")
    body = _side_by_side(v) if two else _comparison(v)
    labelled = [*zip(run_labels(roles[0], base_path, base), base), *zip(run_labels(roles[1], new_path, new), new)]
    title = f"inproc compare: {v.title}"
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{t(title)}</title><style>{PAGE_CSS}</style></head><body>\n"
            f"<h1>{t(title)}</h1>\n{body}\n{_curve(labelled)}\n</body></html>\n")


def render_compare_html(result: Comparison | SideBySide, base: Sequence[RunRecord], new: Sequence[RunRecord],
                        base_path: str, new_path: str, explained: Sequence[Explained] = ()) -> str:
    """The page of a comparison (with ``explained``: its diagnoses) or of two engines side by side."""
    v = side_by_side_view(result) if isinstance(result, SideBySide) else compare_view(result, explained)
    return html(v, base, new, base_path, new_path)
