"""The sweep report as Markdown (``sweep.md``, ``inproc report DIR``; a terminal gets it without the definitions):
an arrangement of the one view (:class:`~inproc.render.sweep.view.SweepView`) with the shared writers."""
from __future__ import annotations

from inproc.render.graphs.sweep_lists import markdown_section
from inproc.render.sweep.breakeven import PaysView
from inproc.render.sweep.view import SweepView, sweep_view
from inproc.render.writers import markdown_definitions, markdown_table
from inproc.sweep.summary import SweepSummary


def pays_markdown(v: PaysView | None) -> list[str]:
    """Where speculation pays (no line without the analysis)."""
    if v is None:
        return []
    lines = ["", "## Where speculation pays", "", v.note, "", markdown_table(v.summary)]
    for c in v.cells:
        lines += ["", f"### {c.title}", "", markdown_table(c.points) if c.points.rows else "No variant on the curve."]
    return lines


def markdown(v: SweepView, with_definitions: bool = True) -> str:
    """The sweep summary as Markdown (ends with a newline)."""
    lines = [f"# Sweep: {v.profile}", "", v.headline, "", "## Variants", "", markdown_table(v.variants)]
    if v.failures:
        lines += ["", "## Failed variants", "", *[f"- {ln}" for ln in v.failures]]
    lines += markdown_section(v.lists)
    for c in v.cells:
        lines += ["", f"## {c.title}", "", markdown_table(c.table), "", c.verdict]
    lines += pays_markdown(v.pays)
    if with_definitions:
        lines += ["", "## Definitions", "", *markdown_definitions(v.definitions)]
    return "\n".join(lines) + "\n"


def render_sweep_markdown(s: SweepSummary, with_definitions: bool = True) -> str:
    return markdown(sweep_view(s), with_definitions)
