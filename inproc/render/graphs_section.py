"""The report's "CUDA graphs" section: the captured list's (and any given list's) padding on the
run's decode steps, the suggested list and the capture cost, shown wherever the run captured
graphs or lists are given (``inproc report --sizes``); ``inproc graphs`` has the full analysis."""
from __future__ import annotations

from inproc.errors import UsageError
from inproc.graphs.analysis import GraphsAnalysis, Options, analyse
from inproc.graphs.cost import capture_cost
from inproc.graphs.steps import captured_sizes, read_run
from inproc.record.schema import RunRecord
from inproc.render.graphs import (
    LIST_HEAD,
    captured_line,
    check_line,
    cost_lines,
    list_row,
    speculative_lines,
    suggestion_lines,
)
from inproc.render.mdtable import table

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


def section_lines(a: GraphsAnalysis) -> list[str]:
    """The section's paragraphs (shared by Markdown and HTML)."""
    return [captured_line(a), *speculative_lines(a), *suggestion_lines(a, ""), *cost_lines(a), check_line(a), MORE]


def graphs_markdown(rec: RunRecord, graph_sizes: tuple[tuple[int, ...], ...] = ()) -> str:
    a = section_analysis(rec, graph_sizes)
    if a is None:
        return ""
    rows = [list_row(r, a.options.weight) for r in a.lists]
    return "\n".join(["## CUDA graphs", "", table(LIST_HEAD, rows), "", *[f"{line}  " for line in section_lines(a)]]).rstrip()
