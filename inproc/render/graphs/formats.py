"""``inproc graphs`` in Markdown, text and HTML: each an arrangement of the one view
(``inproc.render.graphs.view``) with the shared writers. The HTML page puts the waste-versus-K
curve first, then the lists, the suggested list, the per-cell table, the capture cost. No URL of any kind."""
from __future__ import annotations

from inproc.render.graphs.view import GraphsView
from inproc.render.css import CSS
from inproc.render.svg import line_chart, t
from inproc.render.writers import (html_definitions, html_paragraphs, html_table, markdown_definitions,
                                   markdown_table, text_table)


def markdown(v: GraphsView, title: str = "# CUDA-graph capture sizes") -> str:
    """The whole analysis as Markdown (ends with a newline)."""
    out = [title, "", *v.read, "", *v.captured, "",
           "## The lists over the matrix", "", markdown_table(v.lists), "",
           *v.suggestion, "", "## Waste against the number of sizes", "", f"K: {v.curve_note}.", "",
           markdown_table(v.curve), "", "## Per cell", "", markdown_table(v.cells), "", "## Capture cost", "", *v.cost, "",
           v.check, "", "## Definitions", "", *markdown_definitions(v.definitions)]
    return "\n".join(out) + "\n"


def text(v: GraphsView) -> str:
    """The terminal form: the lists, the suggestion and its --set line, the curve, the capture cost."""
    out = [*v.read, *v.captured, "", *text_table(v.lists), "", *v.suggestion, "", f"Waste against K ({v.curve_note}):",
           *text_table(v.curve), "", *text_table(v.cells), "", *v.cost, v.check]
    return "\n".join(out) + "\n"


def html_body(v: GraphsView) -> str:
    """The analysis's sections."""
    parts = [html_paragraphs(v.read + v.captured)]
    parts.append(f"<h2>Waste against the number of sizes</h2><p>{t('K: ' + v.curve_note)}.</p>" + line_chart(v.chart))
    parts.append("<h2>The lists over the matrix</h2>" + html_table(v.lists))
    parts.append("<h2>Suggested list</h2>" + html_paragraphs(v.suggestion))
    parts.append("<h2>Per cell</h2>" + html_table(v.cells))
    parts.append("<h2>Capture cost</h2>" + html_paragraphs(v.cost + (v.check,)))
    return "\n".join(parts)


def html(v: GraphsView) -> str:
    """The whole page."""
    body = (f"<h1>CUDA-graph capture sizes</h1>\n{html_body(v)}\n"
            f"<h2>Definitions</h2>{html_definitions(v.definitions)}")
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>CUDA-graph capture sizes</title><style>{CSS}</style></head><body>\n{body}\n</body></html>\n")
