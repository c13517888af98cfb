"""The report's "CUDA graphs" section: the captured list's (and any given list's) padding on the
run's decode steps, the suggested list and the capture cost, shown wherever the run captured
graphs or lists are given (``inproc report --sizes``); ``inproc graphs`` has the full analysis.
Markdown and HTML place the same view (``inproc.render.graphs.view``); HTML adds its curve."""
from __future__ import annotations

from inproc.errors import UsageError
from inproc.graphs.analysis import GraphsAnalysis, Options, analyse
from inproc.graphs.cost import capture_cost
from inproc.graphs.steps import captured_sizes, read_run
from inproc.record.schema import RunRecord
from inproc.render.graphs.view import GraphsView, graphs_view
from inproc.render.svg import line_chart
from inproc.render.writers import html_paragraphs, html_table, markdown_table

MORE = "The curve of waste against the number of sizes and the per-cell table: `inproc graphs RESULTS`."


def section_analysis(rec: RunRecord, graph_sizes: tuple[tuple[int, ...], ...] = ()) -> GraphsAnalysis | None:
    """The analysis the section shows; None where the run captured nothing and no list is given, or it has no decode step."""
    captured = captured_sizes(rec)
    if not captured and not graph_sizes:
        return None
    try:
        run = read_run(rec, "the results file")
    except UsageError:
        return None
    return analyse((run,), capture_cost(rec, captured), Options(sizes=tuple(graph_sizes)))


def section_lines(v: GraphsView) -> list[str]:
    """The section's paragraphs (shared by Markdown and HTML)."""
    return [*v.captured, *v.suggestion, *v.cost, v.check, MORE]


def section_view(rec: RunRecord, graph_sizes: tuple[tuple[int, ...], ...] = ()) -> GraphsView | None:
    """The view the section shows (None: no section)."""
    a = section_analysis(rec, graph_sizes)
    return None if a is None else graphs_view(a)


def graphs_markdown(rec: RunRecord, graph_sizes: tuple[tuple[int, ...], ...] = ()) -> str:
    v = section_view(rec, graph_sizes)
    if v is None:
        return ""
    return "\n".join(["## CUDA graphs", "", markdown_table(v.lists), "", *[f"{line}  " for line in section_lines(v)]]).rstrip()


def graphs_html(rec: RunRecord, graph_sizes: tuple[tuple[int, ...], ...] = ()) -> str:
    v = section_view(rec, graph_sizes)
    if v is None:
        return ""
    return (f'<h2>CUDA graphs</h2>{html_table(v.lists)}{html_paragraphs(section_lines(v))}'
            f'<div class="charts"><div class="panel">{line_chart(v.chart)}</div></div>')
