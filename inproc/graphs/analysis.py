"""``inproc graphs``: a list's padding per cell and over the matrix, the least-waste list, its curve.

Each list (the one the run captured, each ``--sizes``, the suggested one) is costed by
``inproc.graphs.padding.list_cost`` on every cell's decode steps (``inproc.graphs.steps``) and
on all of them together. The suggestion is ``inproc.graphs.suggest``'s exact optimum over the
token counts seen in every cell, each window step counted once. The padding arithmetic is
checked against the padded tokens the engine recorded for the same steps.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from inproc.graphs.cost import CaptureCost
from inproc.graphs.padding import ListCost, list_cost, padded_tokens
from inproc.graphs.steps import CellSteps, RunSteps
from inproc.graphs.suggest import Pick, least_waste_curve

CAPTURED, SUGGESTED = "captured", "suggested"


@dataclass(frozen=True)
class ListReport:
    """One list's cost per cell (in cell order) and over every cell."""

    name: str
    sizes: tuple[int, ...]
    cells: tuple[ListCost, ...]
    total: ListCost


@dataclass(frozen=True)
class PaddingCheck:
    """The arithmetic's padded tokens against the engine's own, on the steps where it recorded them."""

    checked: int
    agree: int
    first_miss: str = ""  # the first step that disagrees: cell, tokens, recorded and computed padding


@dataclass(frozen=True)
class Options:
    """What ``inproc graphs`` was asked (the CLI's defaults are these)."""

    sizes: tuple[tuple[int, ...], ...] = ()
    budget: int | None = None  # at most this many sizes (None: the captured list's length)
    max_size: int | None = None  # no size above this (counts above it run without a graph)
    weight: str = "tokens"
    multiple_of: int | None = None  # suggested sizes are multiples of this (None: inferred, see multiple_of)


@dataclass(frozen=True)
class GraphsAnalysis:
    runs: tuple[RunSteps, ...]
    cells: tuple[CellSteps, ...]
    captured: tuple[int, ...] | None
    lists: tuple[ListReport, ...]  # captured (when recorded), each --sizes, suggested last
    curve: tuple[Pick, ...]  # K = 1, 2, ...: the least waste at most K sizes reach
    budget: int
    multiple_of: int  # the suggested sizes are multiples of this
    options: Options
    cost: CaptureCost
    check: PaddingCheck
    shorter: ListReport | None = None  # the shortest list padding no more than the captured one, if shorter
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def damaged(self) -> tuple[str, ...]:
        return tuple(d for r in self.runs for d in r.damaged)

    @property
    def suggested(self) -> ListReport:
        return self.lists[-1]

    def named(self, name: str) -> ListReport | None:
        return next((r for r in self.lists if r.name == name), None)


def _weights(cell: CellSteps, weight: str) -> np.ndarray:
    return np.nan_to_num(cell.times_s, nan=0.0) if weight == "time" else np.ones(cell.steps)


def cost_list(name: str, sizes: tuple[int, ...], cells: tuple[CellSteps, ...], weight: str) -> ListReport:
    """``sizes`` costed on each cell's steps and on all of them."""
    per = tuple(list_cost(c.counts, c.times_s, sizes, _weights(c, weight), c.window_s) for c in cells)
    every = list_cost(np.concatenate([c.counts for c in cells]), np.concatenate([c.times_s for c in cells]), sizes,
                      np.concatenate([_weights(c, weight) for c in cells]), sum(c.window_s for c in cells))
    return ListReport(name, tuple(sizes), per, every)


def padding_check(cells: tuple[CellSteps, ...], captured: tuple[int, ...]) -> PaddingCheck:
    """Whether :func:`padded_tokens` with the captured list gives the padded tokens the engine recorded."""
    checked = agree = 0
    miss = ""
    for c in cells:
        known = c.recorded_padded >= 0
        computed = padded_tokens(c.counts, captured)
        same = computed[known] == c.recorded_padded[known]
        checked, agree = checked + int(known.sum()), agree + int(same.sum())
        if not miss and not same.all():
            i = int(np.flatnonzero(known)[np.flatnonzero(~same)[0]])
            miss = (f"{c.label}: a step of {c.counts[i]} tokens the engine padded to {c.recorded_padded[i]}, "
                    f"the arithmetic to {computed[i]}")
    return PaddingCheck(checked, agree, miss)


def _shorter(curve: tuple[Pick, ...], cap: ListReport | None, cells, weight: str) -> ListReport | None:
    """The first (shortest) curve list that pads no more and runs no more steps eager than the captured list."""
    if cap is None or not cap.sizes:
        return None
    seen = set()
    for pick in curve:
        if len(pick.sizes) >= len(cap.sizes) or pick.sizes in seen:
            continue
        seen.add(pick.sizes)
        r = cost_list(f"{len(pick.sizes)} sizes", pick.sizes, cells, weight)
        slack = 1e-9 * max(abs(cap.total.waste_weighted), 1.0)  # float sums of the time weights
        if r.total.waste_weighted <= cap.total.waste_weighted + slack and r.total.eager_steps <= cap.total.eager_steps:
            return r
    return None


def multiple_of(captured: tuple[int, ...] | None, k: int) -> int:
    """1 + k when every captured size is a multiple of it (the engine rounded its list so under
    speculative decoding, and would round a suggested list the same way), else 1."""
    step = 1 + k
    return step if k and captured and all(s % step == 0 for s in captured) else 1


def analyse(runs: tuple[RunSteps, ...], cost: CaptureCost, opts: Options) -> GraphsAnalysis:
    """Every list's cost, the least-waste list of at most ``budget`` sizes and the curve (module docstring)."""
    cells = tuple(c for r in runs for c in r.cells if c.steps)
    captured = runs[0].captured
    notes = tuple(f"{r.path} captured {_short(r.captured)}, not {_short(captured)}: the captured list is the first file's"
                  for r in runs[1:] if r.captured != captured)
    counts = np.concatenate([c.counts for c in cells])
    weights = np.concatenate([_weights(c, opts.weight) for c in cells])
    eligible = counts <= opts.max_size if opts.max_size is not None else np.ones(counts.size, dtype=bool)
    distinct = int(np.unique(counts[eligible]).size)
    budget = opts.budget or len(captured or ()) or (len(opts.sizes[0]) if opts.sizes else distinct) or 1
    multiple = opts.multiple_of or multiple_of(captured, runs[0].speculative_tokens)
    top = max(budget, len(captured or ()))
    curve = least_waste_curve(counts[eligible], weights[eligible], top, multiple) if distinct else ()
    pick = curve[budget - 1].sizes if curve else ()
    # The captured list even when empty (nothing captured: every step eager), so a sweep can measure it.
    lists = [cost_list(CAPTURED, captured, cells, opts.weight)] if captured is not None else []
    lists += [cost_list(f"--sizes {_short(s)}", s, cells, opts.weight) for s in opts.sizes]
    lists.append(cost_list(SUGGESTED, pick, cells, opts.weight))
    cap = lists[0] if captured is not None else None
    return GraphsAnalysis(runs, cells, captured, tuple(lists), curve, budget, multiple, opts, cost,
                          padding_check(cells, captured or ()), _shorter(curve, cap, cells, opts.weight), notes)


def _short(sizes: tuple[int, ...] | None) -> str:
    if sizes is None:
        return "no recorded list"
    return ",".join(map(str, sizes)) if sizes else "no size"
