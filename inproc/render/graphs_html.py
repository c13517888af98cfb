"""``inproc graphs --format html``: one self-contained page, the waste-versus-K curve first,
then the lists, the suggested list, the per-cell table, the capture cost. No URL of any kind."""
from __future__ import annotations

from inproc.graphs.analysis import GraphsAnalysis
from inproc.render.graphs import (
    CURVE_NOTE,
    curve_chart,
    DEFINITIONS,
    LIST_HEAD,
    captured_line,
    cell_head,
    cell_rows,
    check_line,
    cost_lines,
    list_row,
    read_lines,
    speculative_lines,
    suggestion_lines,
)
from inproc.render.html import CSS
from inproc.render.svg import line_chart, t


def _table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th class=l>{t(h)}</th>" for h in head)
    trs = "".join("<tr>" + "".join(f"<td class=l>{t(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f'<div class="scroll"><table><tr>{th}</tr>{trs}</table></div>'


def _p(lines: list[str]) -> str:
    return "".join(f"<p>{t(line)}</p>" for line in lines)


def graphs_html_body(a: GraphsAnalysis, set_line: str = "", level: int = 2) -> str:
    """The analysis's sections (the report's "CUDA graphs" section reuses them)."""
    h = f"h{level}"
    parts = [_p(read_lines(a) + [captured_line(a)] + speculative_lines(a))]
    parts.append(f"<{h}>Waste against the number of sizes</{h}><p>{t('K: ' + CURVE_NOTE)}.</p>" + line_chart(curve_chart(a)))
    parts.append(f"<{h}>The lists over the matrix</{h}>" + _table(LIST_HEAD, [list_row(r, a.options.weight) for r in a.lists]))
    parts.append(f"<{h}>Suggested list</{h}>" + _p(suggestion_lines(a, set_line)))
    parts.append(f"<{h}>Per cell</{h}>" + _table(cell_head(a), cell_rows(a)))
    parts.append(f"<{h}>Capture cost</{h}>" + _p(cost_lines(a) + [check_line(a)]))
    return "\n".join(parts)


def render_graphs_html(a: GraphsAnalysis, set_line: str = "") -> str:
    """The whole page."""
    defs = "".join(f"<tr><td>{t(k)}</td><td>{t(v)}</td></tr>" for k, v in DEFINITIONS)
    body = (f"<h1>CUDA-graph capture sizes</h1>\n{graphs_html_body(a, set_line)}\n"
            f'<h2>Definitions</h2><table class="facts">{defs}</table>')
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>CUDA-graph capture sizes</title><style>{CSS}</style></head><body>\n{body}\n</body></html>\n")
