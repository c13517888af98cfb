"""The CUDA-graphs subject's view: the lists' padding over the matrix and per cell, the suggested
list, the waste-versus-K curve, the capture cost (an estimate) and the padding check, as rows,
lines, a chart and definitions (:class:`GraphsView`), built once from the analysis; every format
(``inproc.render.graphs``) arranges these, so a column added here shows in each of them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inproc.graphs.analysis import GraphsAnalysis, ListReport
from inproc.graphs.cost import NONE_RECORDED
from inproc.graphs.padding import ListCost
from inproc.render import fmt
from inproc.render.svg import Chart, Series
from inproc.render.writers import Table

LIST_HEAD = ["list", "sizes", "largest", "padded tokens", "padding share", "steps without a graph",
             "their time share", "sizes no step used"]
CURVE_NOTE = ("the least padding any list of at most K sizes reaches on these steps (exact); "
              "where it stops falling, more sizes stop paying")
DEFINITIONS = (
    ("padded tokens", "Σ over the window's decode steps of (the captured size the step ran − its tokens); "
                      "each step counted once; a step above the largest size pads nothing and runs without a graph"),
    ("padding share", "padded tokens ÷ the tokens the graphs ran (as the anatomy's Padding)"),
    ("steps without a graph", "decode steps above the list's largest size; their share of the windows' time "
                              "(every window step's Engine.step() time, prefill steps too)"),
    ("weight time", "each step's padded tokens × its Engine.step() time, in token·seconds (--weight time)"),
    ("capture cost", "the build's recorded capture memory and time ÷ the sizes captured: an even split, an estimate"),
)


def sizes_text(sizes: tuple[int, ...], limit: int = 0) -> str:
    """``1,2,4,8`` (the first ``limit`` and the count when longer); "none" for no size."""
    if not sizes:
        return "none"
    shown = sizes if not limit or len(sizes) <= limit else sizes[:limit]
    more = f",… ({len(sizes)} sizes)" if len(shown) < len(sizes) else ""
    return ",".join(map(str, shown)) + more


def _waste(c: ListCost, weight: str) -> str:
    if weight == "time":
        return f"{fmt.num(c.waste_tokens)} ({c.waste_weighted:,.4g} token·s)"
    return fmt.num(c.waste_tokens)


def list_row(r: ListReport, weight: str) -> list[str]:
    c = r.total
    return [r.name, sizes_text(r.sizes, 12), fmt.num(r.sizes[-1]) if r.sizes else "—", _waste(c, weight),
            fmt.pct(c.waste_share), f"{c.eager_steps:,} of {c.steps:,}", fmt.pct(c.eager_time_share),
            sizes_text(c.unused, 8) if c.unused else "—"]


def cell_head(a: GraphsAnalysis) -> list[str]:
    head = ["cell", "status", "decode steps", "tokens seen", "C × (1 + k)"]
    for r in a.lists:
        head += [f"{r.name}: padded", f"{r.name}: no graph"]
    return head


def cell_rows(a: GraphsAnalysis) -> list[list[str]]:
    rows = []
    for i, c in enumerate(a.cells):
        k = next(r.speculative_tokens for r in a.runs if c in r.cells)
        seen = np.unique(c.counts)
        row = [c.label, c.status, fmt.num(c.steps), f"{seen[0]}–{seen[-1]} ({seen.size} distinct)",
               fmt.num(c.concurrency * (1 + k))]
        for r in a.lists:
            row += [_waste(r.cells[i], a.options.weight), fmt.num(r.cells[i].eager_steps)]
        rows.append(row)
    return rows


def curve_rows(a: GraphsAnalysis) -> list[list[str]]:
    rows = []
    for k, p in enumerate(a.curve, start=1):
        w = f"{p.waste_weighted:,.4g} token·s" if a.options.weight == "time" else fmt.num(p.waste_tokens)
        rows.append([str(k), w, fmt.num(p.waste_tokens), sizes_text(p.sizes, 10)])
    return rows


def read_lines(a: GraphsAnalysis) -> list[str]:
    """What was read: files, cells, steps, where the counts came from, what was left out or damaged."""
    steps = sum(c.steps for c in a.cells)
    left = sum(c.left_out for c in a.cells)
    sources = sorted({c.source for c in a.cells})
    lines = [f"Read {len(a.cells)} cells, {steps:,} decode steps of their windows, from "
             f"{', '.join(r.path for r in a.runs)}; token counts from {' and '.join(sources)}."]
    if left:
        lines.append(f"{left:,} window steps held a prefill chunk (refills) and are left out.")
    lines += [f"Not read: {d}" for d in a.damaged]
    lines += list(a.notes)
    return lines


def speculative_lines(a: GraphsAnalysis) -> list[str]:
    out = []
    for r in a.runs:
        if not r.speculative_tokens:
            continue
        cells = [c for c in r.cells if c.steps]
        below = sum(int((c.counts < c.concurrency * (1 + r.speculative_tokens)).sum()) for c in cells)
        total = sum(c.steps for c in cells)
        out.append(f"Speculative decoding ({r.speculative_method}, k = {r.speculative_tokens}): a decode step schedules "
                   f"at most C × (1 + {r.speculative_tokens}) tokens; {below:,} of {total:,} steps scheduled fewer "
                   "(drafts cut or missed), so the lists are costed on the counts seen, not on that product.")
    return out


def captured_line(a: GraphsAnalysis) -> str:
    if a.captured is None:
        return "Captured: not recorded in the results file (no list to cost; give --sizes)."
    if not a.captured:
        return "Captured: no CUDA graph (the engine resolved no capture size: a CPU build, eager mode or graphs off)."
    return f"Captured: {len(a.captured)} sizes up to {a.captured[-1]} ({sizes_text(a.captured, 12)})."


def suggestion_lines(a: GraphsAnalysis, set_line: str) -> list[str]:
    s = a.suggested
    weight = "padded tokens" if a.options.weight == "tokens" else "padded tokens × step time"
    cap = f", none above {a.options.max_size}" if a.options.max_size else ""
    inferred = " (as every captured size is)" if a.options.multiple_of is None else ""
    cap += f", multiples of {a.multiple_of}{inferred}" if a.multiple_of > 1 else ""
    lines = [f"Suggested: at most {a.budget} sizes minimizing {weight}{cap}: {sizes_text(s.sizes)} "
             f"({len(s.sizes)} sizes; {fmt.num(s.total.waste_tokens)} padded tokens, {s.total.eager_steps} steps without a graph)."]
    cap_list = a.named("captured")
    if a.shorter is not None and cap_list is not None:
        lines.append(f"A shorter list pads no more than the captured {len(cap_list.sizes)}: {len(a.shorter.sizes)} sizes, "
                     f"{sizes_text(a.shorter.sizes)} ({fmt.num(a.shorter.total.waste_tokens)} padded tokens against "
                     f"{fmt.num(cap_list.total.waste_tokens)}).")
    elif cap_list is not None and cap_list.sizes:
        lines.append(f"No shorter list pads as little as the captured {len(cap_list.sizes)} sizes on these steps.")
    if set_line:
        lines.append(f"To measure it: {set_line}")
    return lines


def cost_lines(a: GraphsAnalysis) -> list[str]:
    c = a.cost
    if not c.recorded:
        return [f"Capture cost: {NONE_RECORDED}."]
    lines = [f"Capture cost (recorded at build): {fmt.mib(c.memory_bytes)} of device memory, "
             f"{fmt.secs(c.seconds)} for {c.sizes} sizes (the whole build: {fmt.secs(c.build_s)})."]
    for r in a.lists:
        mem, sec = c.estimate(len(r.sizes))
        lines.append(f"  {r.name}, {len(r.sizes)} sizes: about {fmt.mib(mem)}, {fmt.secs(sec)} (estimate: even split per size)")
    return lines


def check_line(a: GraphsAnalysis) -> str:
    k = a.check
    if not k.checked:
        return "Padding check: the engine recorded no padded tokens for these steps."
    line = (f"Padding check: the arithmetic with the captured list gives the engine's own padded tokens on "
            f"{k.agree:,} of {k.checked:,} steps.")
    return line + (f" First difference: {k.first_miss}." if k.first_miss else "")


def curve_chart(a: GraphsAnalysis) -> Chart:
    """Least padded tokens (or token·s) against K, with each costed list as a point at its length."""
    ks = list(range(1, len(a.curve) + 1))
    y_label = "padded tokens" if a.options.weight == "tokens" else "padded token·s"
    y = (lambda c: c.waste_tokens) if a.options.weight == "tokens" else (lambda c: c.waste_weighted)
    series = [Series("least waste with K sizes", ks, [p.waste_tokens if a.options.weight == "tokens"
                                                       else p.waste_weighted for p in a.curve])]
    series += [Series(r.name, [len(r.sizes)], [y(r.total)]) for r in a.lists if r.sizes]
    return Chart("Waste against the number of sizes", "K (sizes)", y_label, tuple(series), markers=True,
                 x_range=(1, max(ks + [len(r.sizes) for r in a.lists])), width=640, height=300)


@dataclass(frozen=True)
class GraphsView:
    """What every format of the CUDA-graphs analysis shows, built once (:func:`graphs_view`)."""

    read: tuple[str, ...]  # what was read: files, cells, steps, what was left out
    captured: tuple[str, ...]  # the captured list, and what speculative decoding does to the counts
    lists: Table  # each list over the matrix
    suggestion: tuple[str, ...]  # the suggested list, a shorter one, the --set line to measure it
    curve_note: str
    curve: Table  # the least waste with K sizes
    cells: Table  # each list per cell
    cost: tuple[str, ...]  # the capture cost, recorded and estimated per list
    check: str  # the padding check against the engine's own count
    chart: Chart  # waste against K, each list a point
    definitions: tuple[tuple[str, str], ...]


def _table(head: list[str], rows: list[list[str]]) -> Table:
    return Table(tuple(head), tuple(map(tuple, rows)))


def graphs_view(a: GraphsAnalysis, set_line: str = "") -> GraphsView:
    """The analysis's view (``set_line``: the --set overrides that measure the suggested list, or "")."""
    return GraphsView(
        tuple(read_lines(a)), (captured_line(a), *speculative_lines(a)),
        _table(LIST_HEAD, [list_row(r, a.options.weight) for r in a.lists]), tuple(suggestion_lines(a, set_line)),
        CURVE_NOTE, _table(["K", "least waste", "padded tokens", "sizes"], curve_rows(a)),
        _table(cell_head(a), cell_rows(a)), tuple(cost_lines(a)), check_line(a), curve_chart(a), DEFINITIONS)
