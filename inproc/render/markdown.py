"""The Markdown report: header, Prefill, Sustained decode, All measurements, Definitions.

Laid out as the published matrices' pages are (docs/reference-matrices.md: same sections,
column names and number formats),
with our additions after theirs. ``inproc run`` writes it next to the results file.
"""
from __future__ import annotations

from inproc.render import acceptance, fmt
from inproc.render import kernels
from inproc.render.graphs.section import graphs_markdown
from inproc.render.mdtable import table
from inproc.render.definitions import shown_definitions
from inproc.render.header import Header, Section, build_header
from inproc.render.matrix import (
    MEDIANS_NOTE,
    cell_parts,
    decode_grid,
    legend_lines,
    throttle_warnings,
    disturbed_warnings,
    ttft_note,
)
from inproc.render.kv_matrix import KV_NOTE, kv_grid
from inproc.render.measurements import PREFILL, Measurement, measurements, shown_columns
from inproc.render.slow_steps import markdown_section
from inproc.record.schema import RunRecord
from inproc.units import format_tokens


def render_markdown(rec: RunRecord, graph_sizes: tuple[tuple[int, ...], ...] = ()) -> str:
    """The whole report as Markdown text (ends with a newline); ``graph_sizes``: lists for its CUDA graphs section."""
    rows = measurements(rec)
    blocks = [_header(build_header(rec)), _prefill(rows), _decode(rec, rows), acceptance.markdown_section(rec), _kv(rec), graphs_markdown(rec, graph_sizes),
              kernels.markdown_section(rec, table), markdown_section(rec, table), _all(rows)]
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


def _prefill(rows: list[Measurement]) -> str:
    prefill = [m for m in rows if m.phase == PREFILL]
    if not prefill:
        return ""
    body = [[format_tokens(m.context), fmt.tok_s(m.total_tok_s), fmt.ms(m.ttft_ms), m.status, fmt.num(m.completed)]
            for m in prefill]
    return "\n".join(["## Prefill", "", "prompt tok/s by context length (cold: nothing served from the prefix cache)", "",
                      table(["Context", "Prompt tok/s", "TTFT", "Status", "Samples"], body)])


def _decode(rec: RunRecord, rows: list[Measurement]) -> str:
    grid = decode_grid(rec.settings, rows, rec.shard.cells if rec.shard else None)
    if not grid.cells and not (grid.contexts and grid.concurrency):
        return ""
    head = ["Context", *map(str, grid.concurrency)]
    body = [[format_tokens(L), *(" · ".join(cell_parts(grid.cell(L, C))) for C in grid.concurrency)]
            for L in grid.contexts]
    legend = " ".join(legend_lines(rows, grid))  # one paragraph, as the published matrices print it
    notes = [legend, ttft_note(rec.settings.prompt_mode)] if legend else [ttft_note(rec.settings.prompt_mode)]
    notes += [f"> **Warning:** {w}" for w in throttle_warnings(rows) + disturbed_warnings(rows)]
    parts = ["## Sustained decode", "", "total tok/s · rows are context length, columns are simultaneous requests", "",
             table(head, body)]
    return "\n\n".join(["\n".join(parts), *notes])


def _kv(rec: RunRecord) -> str:
    g = kv_grid(rec)
    if g is None:
        return ""
    body = [[format_tokens(L), *(g.cells.get((L, C), "") or "–" for C in g.concurrency)] for L in g.contexts]
    return "\n".join(["## KV cache usage", "", KV_NOTE, "", table(["Context", *map(str, g.concurrency)], body)])


def _all(rows: list[Measurement]) -> str:
    if not rows:
        return "## All measurements\n\nNothing measured yet."
    cols = shown_columns(rows)
    body = [[c.text(c.value(m)) for c in cols] for m in rows]
    defs = [f"- **{d.label}**: {d.text}" for d in shown_definitions([c.name for c in cols])]
    return "\n".join(["## All measurements", "", MEDIANS_NOTE, "", table([c.name for c in cols], body), "",
                      "## Definitions", "", *defs])
