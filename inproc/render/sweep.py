"""The sweep report (``sweep.md``, ``inproc report DIR``): the variants, then one table per decode cell.

Shared by the Markdown, CSV and HTML renderers: the rows and their texts are built here
once, from a :class:`~inproc.sweep.summary.SweepSummary`.
"""
from __future__ import annotations

import csv
import io

from inproc.render import breakeven, fmt
from inproc.render.definitions import Definition, definitions, doc
from inproc.render.markdown import table
from inproc.render.measurements import graph_text
from inproc.render.graphs.sweep_lists import markdown_section
from inproc.sweep import summary as sm
from inproc.sweep.manifest import DONE
from inproc.sweep.summary import CellSummary, SweepSummary, VariantCell, VariantSummary
from inproc.units import format_tokens

BEST_MARK = "★"
DISTURBED_MARK = "~"  # as in the run's matrix (inproc.render.text.DISTURBED)
CELL_HEAD = ["Variant", "Status", "Total tok/s", "Time between tokens", "TTFT", "CUDA graphs", "Padding", "Reason"]
VARIANT_HEAD = ["#", "Variant", "Status", "Engine build", "Warm-up", "Graph memory", "Results file"]
CSV_HEAD = ["Context", "Requests at once", "Variant", "Status", "Best", "Total tok/s", "Time between tokens (ms)",
            "TTFT (ms)", "CUDA graphs (share of window steps)", "Padding waste (fraction)", "Reason", "Results file"]
GRAPH_MEMORY_NOTE = ("The device memory CUDA-graph capture took, as the engine reports it; "
                     "— where no graph was captured (a CPU build, eager mode, graphs turned off) or the engine "
                     "does not say (workers in other processes).")
_SHARED = ("Decode window", "Total tok/s", "Time between tokens", "TTFT", "CUDA graphs", "Padding")


def cell_title(c: CellSummary) -> str:
    return f"Decode {format_tokens(c.context)} × {c.concurrency}"


def cell_values(r: VariantCell) -> list[str]:
    """A variant's row in a cell table, texts in :data:`CELL_HEAD` order."""
    name = f"{r.name} {BEST_MARK}" if r.best else r.name
    status = f"{r.status} {DISTURBED_MARK} disturbed" if r.disturbed else r.status
    reason = "; ".join(x for x in (r.reason, r.disturbed) if x)
    return [name, status, fmt.tok_s(r.total_tok_s), fmt.ms(r.tbt_ms, 1), fmt.ms(r.ttft_ms),
            graph_text(r.graph_step_share), fmt.pct(r.padding_waste), reason]


def cell_verdict(c: CellSummary) -> str:
    """``Best: max-num-seqs=8 (412.3 tok/s), 1.42× the slowest Valid variant``, or why there is none."""
    best = c.best
    if best is None:
        return "Best: none (no variant was Valid in this cell)."
    spread = c.spread
    tail = (f", {spread:.2f}× the slowest Valid variant" if spread is not None
            else "; spread: — (one Valid variant)")
    return f"Best: {best.name} ({fmt.tok_s(best.total_tok_s)} tok/s){tail}."


def _bytes(v: int | None) -> str:
    return fmt.DASH if v is None else f"{v / 2**30:,.2f} GiB"


def variant_values(v: VariantSummary) -> list[str]:
    status = v.status if not v.record_error else f"{v.status} (results file unreadable)"
    status += f" {DISTURBED_MARK} {v.disturbed_cells} cell(s) disturbed" if v.disturbed_cells else ""
    return [str(v.index), v.name, status, fmt.secs(v.build_s), fmt.secs(v.warmup_s), _bytes(v.graph_memory_bytes),
            v.file if v.engine else fmt.DASH]


def headline(s: SweepSummary) -> str:
    """One line: what was swept, over what, and how it went."""
    plan = s.sweep.plan
    keys = ", ".join(([f"--graph-sizes ({len(plan.graph_sizes)} lists)"] if plan.graph_sizes else [])
                     + [v.key for v in plan.varies])
    how = "paired (--zip)" if plan.zipped else "every combination"
    done = sum(v.status == DONE for v in s.variants)
    state = "finished" if s.sweep.finished else "not finished"
    cells = f"{len(s.cells)} decode cell{'s' if len(s.cells) != 1 else ''}"
    return (f"{len(s.variants)} variants of {keys} ({how}) · {plan.profile_name} · {s.engine} · {cells} · "
            f"seed {plan.seed} · {done} measured, {len(s.failed)} failed · {state}")


def sweep_definitions(pays: bool = False) -> list[Definition]:
    """The figures a sweep report shows, each defined where it is computed."""
    shared = [d for d in definitions() if d.label in _SHARED]
    return shared + [
        Definition("Best", f"{BEST_MARK}: the highest Total tok/s in the cell. {doc(sm.comparable)}"),
        Definition("Spread", doc(CellSummary.spread.fget)),
        Definition("Engine build", "Building the engine in the variant's child process, wall seconds (`engine.build_s`)."),
        Definition("Warm-up", "The one warm-up pass before the first measurement (`engine.warmup_s`); no figure comes from it."),
        Definition("Graph memory", GRAPH_MEMORY_NOTE),
    ] + (breakeven.definitions() if pays else [])


def failure_lines(s: SweepSummary) -> list[str]:
    return [f"#{v.index} {v.name}: {v.status}: {v.error or v.record_error}" for v in s.failed]


def render_sweep_markdown(s: SweepSummary, with_definitions: bool = True) -> str:
    """The sweep summary as Markdown (ends with a newline); a terminal gets it without the definitions."""
    lines = [f"# Sweep: {s.sweep.plan.profile_name}", "", headline(s), "", "## Variants", "",
             table(VARIANT_HEAD, [variant_values(v) for v in s.variants])]
    if s.failed:
        lines += ["", "## Failed variants", "", *[f"- {ln}" for ln in failure_lines(s)]]
    lines += markdown_section(s.graphs)
    for c in s.cells:
        lines += ["", f"## {cell_title(c)}", "", table(CELL_HEAD, [cell_values(r) for r in c.rows]), "",
                  cell_verdict(c)]
    lines += breakeven.markdown_lines(s.pays, table)
    if with_definitions:
        lines += ["", "## Definitions", "", *[f"- **{d.label}**: {d.text}" for d in sweep_definitions(bool(s.pays))]]
    return "\n".join(lines) + "\n"


def render_sweep_csv(s: SweepSummary) -> str:
    """One row per cell and variant, numbers unformatted."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_HEAD)
    files = {v.index: v.file for v in s.variants}
    for c in s.cells:
        for r in c.rows:
            writer.writerow([c.context, c.concurrency, r.name, r.status, "yes" if r.best else "",
                             *["" if x is None else x for x in (r.total_tok_s, r.tbt_ms, r.ttft_ms)],
                             graph_text(r.graph_step_share) if r.graph_step_share else "",
                             "" if r.padding_waste is None else r.padding_waste,
                             "; ".join(x for x in (r.reason, r.disturbed) if x), files[r.index]])
    return out.getvalue()
