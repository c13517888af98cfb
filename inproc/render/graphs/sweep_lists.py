"""The ``--graph-sizes`` lists side by side in the sweep report: their view (two tables and notes,
built once from the sweep's graph summary) and its Markdown and HTML arrangements."""
from __future__ import annotations

from dataclasses import dataclass

from inproc.compare.estimate import WithinRun
from inproc.render import fmt
from inproc.render.graphs.view import sizes_text
from inproc.sweep.graph_summary import GraphSweep, ListRun
from inproc.render.writers import Table, html_paragraphs, html_table, markdown_table
from inproc.units import format_tokens

LIST_HEAD = ["List", "Sizes", "Engine captured", "Padded tokens (arithmetic)", "Padded tokens (engine)",
             "Arithmetic = engine", "Graph memory", "Capture time", "Engine build"]
NO_CAPTURE = ("No list was captured: the engine resolved no capture size for any of them (a CPU build, eager mode "
              "or graphs off). The sweep ran every list and says so: their tok/s differ for other reasons than "
              "padding. The arithmetic's padded tokens are what each list would pad on the steps its run saw; "
              "the engine's are what it did pad, checked step by step against the arithmetic with the list it resolved.")
RATIO_NOTE = ("Ratio: total tok/s of the list ÷ the first list's, in cells Valid for both, with compare's "
              "within-run interval (95 %, circular block bootstrap; one run each side, so indicative).")


def _captured(r: ListRun) -> str:
    if r.resolved is None:
        return fmt.DASH
    return sizes_text(r.resolved, 8) if r.resolved else "none"


def list_values(r: ListRun) -> list[str]:
    check = f"{r.check.agree:,} of {r.check.checked:,} steps" if r.check and r.check.checked else fmt.DASH
    mem = fmt.DASH if r.memory_bytes is None else f"{r.memory_bytes / 2**30:,.2f} GiB"
    return [f"{r.name} ({r.status})", sizes_text(r.sizes, 8), _captured(r),
            fmt.num(r.modelled.waste_tokens) if r.modelled else fmt.DASH, fmt.num(r.recorded_padded), check, mem,
            fmt.secs(r.capture_s), fmt.secs(r.build_s)]


def _ratio(x: WithinRun | str | None) -> str:
    if x is None:
        return ""
    if isinstance(x, str):
        return f" ({x})"
    return f" ({x.ratio:.3f}× [{x.within.low:.3f}, {x.within.high:.3f}])"


def cell_head(g: GraphSweep) -> list[str]:
    return ["Cell"] + [f"{r.name}: total tok/s" for r in g.lists]


def cell_rows(g: GraphSweep) -> list[list[str]]:
    rows = []
    for c in g.cells:
        values = [f"{fmt.tok_s(v)} {s}{_ratio(x)}" for v, s, x in zip(c.tok_s, c.statuses, c.ratios)]
        rows.append([f"{format_tokens(c.context)} × {c.concurrency}", *values])
    return rows


def notes(g: GraphSweep) -> list[str]:
    return ([NO_CAPTURE] if g.none_captured else []) + [RATIO_NOTE]


@dataclass(frozen=True)
class ListsView:
    """The lists side by side: each list's capture and padding, each cell's tok/s per list, the notes."""

    lists: Table
    cells: Table
    notes: tuple[str, ...]


def lists_view(g: GraphSweep) -> ListsView:
    return ListsView(Table(tuple(LIST_HEAD), tuple(tuple(list_values(r)) for r in g.lists)),
                     Table(tuple(cell_head(g)), tuple(map(tuple, cell_rows(g)))), tuple(notes(g)))


def markdown_section(v: ListsView | None) -> list[str]:
    """The section's Markdown lines (none without --graph-sizes)."""
    if v is None:
        return []
    return ["", "## CUDA-graph lists side by side", "", markdown_table(v.lists), "", markdown_table(v.cells), "",
            *v.notes]


def html_section(v: ListsView | None) -> list[str]:
    """The section's HTML parts (none without --graph-sizes)."""
    if v is None:
        return []
    return ["<h2>CUDA-graph lists side by side</h2>", html_table(v.lists), html_table(v.cells),
            *(html_paragraphs([line]) for line in v.notes)]
