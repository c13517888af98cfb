"""The HTML report's "CUDA graphs" section: the same rows and lines as the Markdown one, and the
waste-versus-K curve (``inproc.render.graphs_html``)."""
from __future__ import annotations

from inproc.record.schema import RunRecord
from inproc.render.graphs import LIST_HEAD, curve_chart, list_row
from inproc.render.graphs_section import section_analysis, section_lines
from inproc.render.svg import line_chart, t


def graphs_html(rec: RunRecord, graph_sizes: tuple[tuple[int, ...], ...] = ()) -> str:
    a = section_analysis(rec, graph_sizes)
    if a is None:
        return ""
    th = "".join(f"<th class=l>{t(h)}</th>" for h in LIST_HEAD)
    trs = "".join("<tr>" + "".join(f"<td class=l>{t(v)}</td>" for v in list_row(r, a.options.weight)) + "</tr>"
                  for r in a.lists)
    paras = "".join(f"<p>{t(line)}</p>" for line in section_lines(a))
    return (f'<h2>CUDA graphs</h2><div class="scroll"><table><tr>{th}</tr>{trs}</table></div>{paras}'
            f'<div class="charts"><div class="panel">{line_chart(curve_chart(a))}</div></div>')
