"""The sweep subject's view (``sweep.md``, ``inproc report DIR``): the headline, the variants, the failures, the
``--graph-sizes`` lists side by side, per decode cell its table, chart and best variant, where speculation pays,
and the definitions (:class:`SweepView`), built once from a :class:`~inproc.sweep.summary.SweepSummary`; the
Markdown and HTML arrangements (``formats``, ``page``) place these, so a column added here shows in each of them.
"""
from __future__ import annotations

from dataclasses import dataclass

from inproc import types as st
from inproc.render import fmt
from inproc.render.definitions import Definition, definitions, doc
from inproc.render.graphs.sweep_lists import ListsView, lists_view
from inproc.render.measurements import graph_text
from inproc.render.svg import Chart, Series
from inproc.render.sweep import breakeven
from inproc.render.sweep.breakeven import PaysView, pays_view
from inproc.render.writers import Table
from inproc.sweep import summary as sm
from inproc.sweep.manifest import DONE
from inproc.sweep.summary import CellSummary, SweepSummary, VariantCell, VariantSummary
from inproc.units import format_tokens

BEST_MARK = "★"
DISTURBED_MARK = "~"  # as in the run's matrix (inproc.render.text.DISTURBED)
CELL_HEAD = ["Variant", "Status", "Total tok/s", "Time between tokens", "TTFT", "CUDA graphs", "Padding", "Reason"]
VARIANT_HEAD = ["#", "Variant", "Status", "Engine build", "Warm-up", "Graph memory", "Results file"]
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


def cell_chart(c: CellSummary, keys: str) -> Chart:
    """Total tok/s of each variant (x: the variants in order, labelled by their values); Valid and
    Requests queued variants as two series, so a queued point is never read as a Valid one."""
    xs = [r.index for r in c.rows]
    series = tuple(Series(status, xs, [r.total_tok_s if r.status == status else None for r in c.rows])
                   for status in (st.VALID, st.QUEUED) if any(r.status == status for r in c.rows))
    ticks = tuple((r.index, r.label) for r in c.rows)
    width = max(360, 90 * len(c.rows))
    return Chart(f"{cell_title(c)}: total tok/s by variant", keys, "total tok/s", series, x_ticks=ticks,
                 markers=True, width=width, x_range=(min(xs), max(xs)))  # failed variants keep their place


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


@dataclass(frozen=True)
class CellView:
    """One decode cell: a row per variant (the best marked), its chart, its best variant in one line."""

    title: str
    table: Table
    best: tuple[bool, ...]  # per row: the cell's best variant
    chart: Chart
    verdict: str


@dataclass(frozen=True)
class SweepView:
    """What every format of the sweep report shows, built once (:func:`sweep_view`)."""

    profile: str
    headline: str  # what was swept, over what, how it went
    variants: Table
    failures: tuple[str, ...]
    lists: ListsView | None  # the --graph-sizes lists side by side (None without them)
    cells: tuple[CellView, ...]
    pays: PaysView | None  # where speculation pays (None without the analysis)
    definitions: tuple[tuple[str, str], ...]


def _cell(c: CellSummary, keys: str) -> CellView:
    return CellView(cell_title(c), Table(tuple(CELL_HEAD), tuple(tuple(cell_values(r)) for r in c.rows)),
                    tuple(r.best for r in c.rows), cell_chart(c, keys), cell_verdict(c))


def sweep_view(s: SweepSummary) -> SweepView:
    keys = " · ".join(v.key for v in s.sweep.plan.varies)
    return SweepView(s.sweep.plan.profile_name, headline(s),
                     Table(tuple(VARIANT_HEAD), tuple(tuple(variant_values(v)) for v in s.variants)),
                     tuple(failure_lines(s)), lists_view(s.graphs) if s.graphs is not None else None,
                     tuple(_cell(c, keys) for c in s.cells), pays_view(s.pays),
                     tuple((d.label, d.text) for d in sweep_definitions(bool(s.pays))))
