"""The kernels subject: per decode cell with a kernel pass (or per trace, ``inproc kernels``), time per step by
category and its share, the top kernels, the top unmatched names, and the categories' sum beside the step's own
time, as one view (:class:`KernelsView`) that the report's Markdown, text and HTML sections
(``kernel_bars``: its stacked bars) and ``inproc kernels`` (``kernel_trace``) arrange.

Everything is read from the cell's pass, compact (``inproc.kernels.summary``); nothing is decided here but words.
"""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass

from inproc.kernels import categories, table
from inproc.kernels.categories import CATEGORIES, OTHER
from inproc.kernels.filing import unfiled_words
from inproc.kernels.summary import HOST_BOUND_COVERAGE, KernelSummary
from inproc.record.schema import RunRecord
from inproc.record.summarize import kernel_summary
from inproc.render.definitions import Definition, clean
from inproc.render.writers import Table
from inproc.units import format_tokens

TOP_KERNELS, TOP_UNMATCHED = 5, 5


@dataclass(frozen=True)
class CellKernels:
    """One decode cell's kernel pass, as the report shows it."""

    context: int
    concurrency: int
    summary: KernelSummary

    @property
    def label(self) -> str:
        return f"{format_tokens(self.context)} × {self.concurrency}"

    @property
    def host_bound(self) -> bool:
        return host_bound(self.summary)


def host_bound(summary: KernelSummary) -> bool:
    """The kernels cover less than HOST_BOUND_COVERAGE of the steps' own time."""
    cover = summary.coverage()
    return cover is not None and cover < HOST_BOUND_COVERAGE


def cells(rec: RunRecord) -> list[CellKernels]:
    """Every decode cell with a kernel pass, in the record's order."""
    out = []
    for e in rec.decode:
        s = kernel_summary(e)
        if s is not None and s.steps:
            out.append(CellKernels(e.context, e.concurrency, s))
    return out


def missing(rec: RunRecord) -> list[str]:
    """"8K × 16: no kernel pass: …" for each cell whose pass ran without a table, with the pass's own reason."""
    out = []
    for e in rec.decode:
        kp = e.trace.kernel_pass if e.trace is not None else None
        if kp is not None and kp.note and e.trace.kernels is None:
            out.append(f"{format_tokens(e.context)} × {e.concurrency}: {kp.note}")
    return out


def unfiled(rec: RunRecord) -> list[str]:
    """"8K × 16: 3 of 240 device activities not filed to a step (…)" for each pass that could not file them all."""
    out = []
    for e in rec.decode:
        kp = e.trace.kernel_pass if e.trace is not None else None
        if kp is not None and (lost := unfiled_words(kp.filed, kp.unfiled, kp.unfiled_ns)):
            out.append(f"{format_tokens(e.context)} × {e.concurrency}: {lost}; its table holds the filed ones only")
    return out


def time_kind(cs: list[CellKernels]) -> str:
    """What the times are: device time of CUDA kernels, or the CPU operators' self time."""
    devices = {c.summary.device for c in cs}
    return "device time (CUDA kernels)" if devices == {"cuda"} else (
        "self time of the CPU operators" if devices == {"cpu"} else "device or operator self time")


def shown_categories(cs: list[CellKernels]) -> list[str]:
    """The categories any cell spent time in, in the stacking order."""
    return [c for c in CATEGORIES if any(x.summary.ns_by_category()[c] > 0 for x in cs)]


def _ms(ns: float) -> str:
    ms = ns / 1e6
    return f"{ms:.2f}" if ms >= 0.1 or ms == 0 else f"{ms:.3g}"


def _pct(x: float) -> str:
    return f"{x * 100:.0f} %" if x >= 0.01 or x == 0 else "<1 %"


def category_cells(c: CellKernels, cats: list[str]) -> list[str]:
    """"1.23 ms (45 %)" per category: its time per step and share of the kernels' sum."""
    by = c.summary.ns_by_category()
    total = c.summary.total_ns() or 1.0
    return [f"{_ms(by[k])} ({_pct(by[k] / total)})" if by[k] else "–" for k in cats]


def sum_cells(c: CellKernels) -> list[str]:
    """Σ kernels, the step's own time, and how much of it the kernels cover (with the host-bound note)."""
    s = c.summary
    cover = s.coverage()
    step = f"{s.step_s * 1e3:.2f}" if s.step_s else "–"
    note = f"{cover * 100:.0f} %" if cover is not None else "–"
    return [_ms(s.total_ns()), step, note + (" (host-bound)" if c.host_bound else "")]


HEAD_TAIL = ["Σ kernels (ms)", "Step (ms)", "Kernels ÷ step"]


def top_line(c: CellKernels) -> str:
    """"fused_moe_kernel (moe) 1.80 ms, 31 %; …": the kernels with the most time per step."""
    total = c.summary.total_ns() or 1.0
    return "; ".join(f"{n} ({cat}) {_ms(ns)} ms, {_pct(ns / total)}" for n, cat, ns in c.summary.top_names(limit=TOP_KERNELS))


def unmatched_line(c: CellKernels) -> str:
    """The top names no rule matched (``other``), with their share of the kernels' sum ("" when none)."""
    total = c.summary.total_ns() or 1.0
    return "; ".join(f"{n} {_pct(ns / total)}" for n, _, ns in c.summary.top_names(OTHER, TOP_UNMATCHED))


def host_bound_note(c: CellKernels) -> str:
    cover = c.summary.coverage() or 0.0
    return (f"{c.label}: the kernels cover {cover * 100:.0f} % of the step's own time, below "
            f"{HOST_BOUND_COVERAGE * 100:.0f} %: host-bound steps (the rest is the host's scheduling, launches and "
            f"output processing, or waiting).")


def intro(cs: list[CellKernels]) -> str:
    steps = sorted({c.summary.steps for c in cs})
    n = f"{steps[0]}" if len(steps) == 1 else f"{steps[0]}–{steps[-1]}"
    return (f"Time per step by kernel category: {time_kind(cs)}, the mean over the kernel pass's {n} profiled steps "
            f"after the window (never a headline figure), in ms, with its share of the kernels' sum; the sum beside "
            f"the steps' own time (Engine.step(), start to end).")


def definitions() -> list[Definition]:
    """The terms of the kernel section, quoted from the categorizer's and the table's docstrings."""
    cat_doc = (inspect.getdoc(categories) or "").split("\n\n")
    table_doc = (inspect.getdoc(table) or "").split("\n\n")
    definition = next((p for p in cat_doc if p.startswith("**Definition**")), cat_doc[0])
    listing = next((p for p in cat_doc if p.startswith("- ")), "")
    roles = lambda text: re.sub(r":\w+:`~?([\w.]+)`", r"``\1``", text)  # Sphinx cross-references as code
    return [Definition("Kernel categories", clean(roles(definition.replace("**Definition** (quoted by the report). ", "")
                                                        + " " + listing))),
            Definition("Kernel time", clean(roles(table_doc[1] if len(table_doc) > 1 else table_doc[0])))]


@dataclass(frozen=True)
class KernelsView:
    """What every format of the kernel breakdown shows, built once (:func:`kernels_view`)."""

    categories: tuple[str, ...]  # the categories any cell spent time in, in the stacking order
    table: Table  # a row per cell (or trace): ms per step by category, Σ, the step's own time, the cover
    host_bound: tuple[str, ...]  # a note per host-bound cell
    top: tuple[tuple[str, str], ...]  # (cell, its top kernels)
    unmatched: tuple[tuple[str, str], ...]  # (cell, its top names no rule matched), where any
    definitions: tuple[Definition, ...]


def kernels_view(cs: list, first: str = "Cell") -> KernelsView:
    """The view of cells (or traces) with a kernel pass: anything with ``label``, ``summary`` and ``host_bound``."""
    cats = shown_categories(cs)
    rows = tuple((c.label, *category_cells(c, cats), *sum_cells(c)) for c in cs)
    return KernelsView(tuple(cats), Table((first, *cats, *HEAD_TAIL), rows),
                       tuple(host_bound_note(c) for c in cs if c.host_bound), tuple((c.label, top_line(c)) for c in cs),
                       tuple((c.label, u) for c in cs if (u := unmatched_line(c))), tuple(definitions()))


def markdown_section(rec: RunRecord, make_table) -> str:
    """The Markdown report's "Kernels" section ("" without a kernel pass); ``make_table(head, body)`` makes a table."""
    cs, without = cells(rec), missing(rec)
    if not cs:
        return "\n".join(["## Kernels", "", *[f"- {x}" for x in without]]) if without else ""
    v = kernels_view(cs)
    lines = ["## Kernels", "", intro(cs), "", make_table(list(v.table.head), [list(r) for r in v.table.rows])]
    lines += ["", "No kernel table:", ""] + [f"- {x}" for x in without] if without else []
    lost = unfiled(rec)
    lines += ["", "Device activities not filed to a step:", ""] + [f"- {x}" for x in lost] if lost else []
    lines += [line for note in v.host_bound for line in ("", f"> **Host-bound:** {note}")]
    lines += ["", "Top kernels per step:", ""] + [f"- {label}: {line}" for label, line in v.top]
    if v.unmatched:
        lines += ["", "Names no rule matched (`other`), with their share, so the rule table can grow:", ""]
        lines += [f"- {label}: {u}" for label, u in v.unmatched]
    lines += [""] + [f"- **{d.label}**: {d.text}" for d in v.definitions]
    return "\n".join(lines)


def text_lines(rec: RunRecord) -> list[str]:
    """The terminal's lines: per cell with a kernel pass, its categories' ms per step and the step's own time."""
    cs, without = cells(rec), missing(rec)
    out = [""] + [f"Kernels: {x}" for x in without] if without else []
    out += [f"Kernels: {x}" for x in unfiled(rec)]
    if not cs:
        return out
    out += ["", f"Kernels: ms per step by category ({time_kind(cs)}, mean over the kernel pass's steps)"]
    for c in cs:
        out.append(f"  {c.label}: {category_parts(c)}; {sum_text(c)}")
    return out


def category_parts(c) -> str:
    """"gemm 1.20 (15%) · attention …": the categories a pass spent time in, largest first (a terminal's line)."""
    by, total = c.summary.ns_by_category(), c.summary.total_ns() or 1.0
    # Shares without a space before "%": a terminal line wraps at spaces.
    return " · ".join(f"{k} {_ms(by[k])} ({_pct(by[k] / total).replace(' ', '')})"
                      for k in sorted(CATEGORIES, key=lambda k: -by[k]) if by[k])


def sum_text(c) -> str:
    """"Σ 8.07 ms of the step's 10.42 ms (77%)": the kernels' sum beside the step's own time."""
    sum_, step, cover = sum_cells(c)
    return f"Σ {sum_} ms of the step's {step} ms ({cover.replace(' %', '%')})"
