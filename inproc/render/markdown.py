"""The Markdown report: header, Prefill, Sustained decode, All measurements, Definitions.

Laid out as the published matrices' pages are (docs/reference-matrices.md: same sections,
column names and number formats),
with our additions after theirs. ``inproc run`` writes it next to the results file. It places the
report's view (``inproc.render.report_view``) with the shared writers; its sections beyond the view
(acceptance, CUDA graphs, kernels, slow steps) are their subjects' own.
"""
from __future__ import annotations

from inproc.render import acceptance, kernels
from inproc.render.graphs.section import graphs_markdown
from inproc.render.header import Header, Section
from inproc.render.kv_matrix import KV_NOTE
from inproc.render.matrix import MEDIANS_NOTE, cell_parts
from inproc.render.mdtable import table
from inproc.render.report_view import DECODE_NOTE, PREFILL_NOTE, DecodeView, ReportView, report_view
from inproc.render.slow_steps import markdown_section
from inproc.render.writers import Table, markdown_definitions, markdown_table
from inproc.record.schema import RunRecord
from inproc.units import format_tokens


def render_markdown(rec: RunRecord, graph_sizes: tuple[tuple[int, ...], ...] = ()) -> str:
    """The whole report as Markdown text (ends with a newline); ``graph_sizes``: lists for its CUDA graphs section."""
    v = report_view(rec)
    blocks = [_header(v.header), _prefill(v.prefill), _decode(v.decode), acceptance.markdown_section(rec), _kv(v.kv),
              graphs_markdown(rec, graph_sizes), kernels.markdown_section(rec, table), markdown_section(rec, table),
              _all(v)]
    return "\n\n".join(b for b in blocks if b) + "\n"


def _header(h: Header) -> str:
    lines = ["# Speed test matrix", "", f"**{h.title}**", "", h.summary]
    lines += [line for w in h.warnings for line in ("", f"> **Warning:** {w}")]
    return "\n".join(lines + [_section(s) for s in h.sections])


def _section(s: Section) -> str:
    lines = ["", f"## {s.title}", ""]
    for f in s.facts:
        if f.code and "\n" in f.value:
            lines += [f"- {f.label}:", "", "  ```", *[f"  {v}" for v in f.value.splitlines()], "  ```"]
        elif f.code:
            lines.append(f"- {f.label}: `{f.value}`")
        else:
            lines.append(f"- {f.label}: {f.value}")
    return "\n".join(lines)


def _prefill(t: Table | None) -> str:
    if t is None:
        return ""
    return "\n".join(["## Prefill", "", PREFILL_NOTE, "", markdown_table(t)])


def _decode(d: DecodeView | None) -> str:
    if d is None:
        return ""
    grid = d.grid
    head = ["Context", *map(str, grid.concurrency)]
    body = [[format_tokens(L), *(" · ".join(cell_parts(grid.cell(L, C))) for C in grid.concurrency)]
            for L in grid.contexts]
    legend = " ".join(d.legend)  # one paragraph, as the published matrices print it
    notes = [legend, d.ttft] if legend else [d.ttft]
    notes += [f"> **Warning:** {w}" for w in d.warnings]
    parts = ["## Sustained decode", "", DECODE_NOTE, "", table(head, body)]
    return "\n\n".join(["\n".join(parts), *notes])


def _kv(t: Table | None) -> str:
    if t is None:
        return ""
    return "\n".join(["## KV cache usage", "", KV_NOTE, "", markdown_table(t)])


def _all(v: ReportView) -> str:
    if v.measurements is None:
        return "## All measurements\n\nNothing measured yet."
    return "\n".join(["## All measurements", "", MEDIANS_NOTE, "", markdown_table(v.measurements), "",
                      "## Definitions", "", *markdown_definitions(v.definitions)])
