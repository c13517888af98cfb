"""The lists of ``--graph-sizes`` side by side, derived from the variants' results files when loaded.

Per list: its sizes, what the engine resolved and captured, the padded tokens the arithmetic
gives the list on that variant's own decode steps (``inproc.graphs``) beside the padded tokens
the engine recorded for them, whether the two agree step by step (the arithmetic with the list
the engine resolved), and what capture took. Per judged cell (Valid for every list): each list's
total tok/s and its ratio to the first list's with compare's within-run interval (one run each:
indicative, ``inproc.compare.estimate.within_run``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inproc import types as st
from inproc.compare.estimate import StatSettings, WithinRun, within_run
from inproc.errors import UsageError
from inproc.graphs.analysis import PaddingCheck, padding_check
from inproc.graphs.padding import ListCost, list_cost
from inproc.graphs.steps import captured_sizes, read_run
from inproc.record.schema import DecodeEntry, RunRecord
from inproc.sweep.manifest import Sweep, VariantRun

METRIC = "tok_s"


@dataclass(frozen=True)
class ListRun:
    """One list's variant: what it asked, what the engine did, what the arithmetic says."""

    index: int
    name: str
    sizes: tuple[int, ...]  # asked (the profile's own list: as the engine resolved it)
    status: str
    resolved: tuple[int, ...] | None = None  # the sizes the engine resolved and captured for (): none
    modelled: ListCost | None = None  # the asked list on this variant's own decode steps
    recorded_padded: int | None = None  # Σ (padded − unpadded) the engine recorded on the same steps
    check: PaddingCheck | None = None
    memory_bytes: int | None = None
    capture_s: float | None = None
    build_s: float | None = None


@dataclass(frozen=True)
class ListCell:
    """A cell across the lists: each list's status and tok/s, and the ratio to the first list."""

    context: int
    concurrency: int
    statuses: tuple[str, ...]
    tok_s: tuple[float | None, ...]
    ratios: tuple[WithinRun | str | None, ...]  # None for the first list; a string: why no ratio


@dataclass(frozen=True)
class GraphSweep:
    lists: tuple[ListRun, ...]
    cells: tuple[ListCell, ...]

    @property
    def none_captured(self) -> bool:
        """No list's engine captured a graph (a CPU build): the sweep ran them, the lists changed nothing."""
        return all(not r.resolved for r in self.lists if r.resolved is not None)


def _list_run(run: VariantRun, asked: tuple[int, ...], rec: RunRecord | None) -> ListRun:
    v = run.variant
    if rec is None:
        return ListRun(v.index, v.tag, asked, run.status)
    resolved = captured_sizes(rec)
    sizes = asked or (resolved or ())
    s = rec.engine.settings
    try:
        steps = read_run(rec, v.file)
    except UsageError:  # no decode step to read: nothing to cost
        return ListRun(v.index, v.tag, sizes, run.status, resolved, None, None, None, s.graph_capture_memory_bytes,
                       s.graph_capture_s, rec.engine.build_s)
    cells = [c for c in steps.cells if c.steps]
    counts = np.concatenate([c.counts for c in cells])
    padded = np.concatenate([c.recorded_padded for c in cells])
    known = padded >= 0
    return ListRun(v.index, v.tag, sizes, run.status, resolved,
                   list_cost(counts, np.concatenate([c.times_s for c in cells]), sizes, None, sum(c.window_s for c in cells)),
                   int((padded[known] - counts[known]).sum()) if known.any() else None,
                   padding_check(tuple(cells), resolved or ()), s.graph_capture_memory_bytes, s.graph_capture_s,
                   rec.engine.build_s)


def _entry(rec: RunRecord | None, key: tuple[int, int]) -> DecodeEntry | None:
    return next((e for e in rec.decode if (e.context, e.concurrency) == key), None) if rec else None


def _ratio(base: DecodeEntry | None, new: DecodeEntry | None) -> WithinRun | str:
    if base is None or new is None or base.status != st.VALID or new.status != st.VALID:
        return "not judged: not Valid for both lists"
    return within_run(base, new, METRIC, StatSettings())


def graph_side_by_side(sweep: Sweep, loaded: list[tuple[VariantRun, RunRecord | None]]) -> GraphSweep | None:
    """The lists side by side (the first variant of each list; None for a sweep without --graph-sizes)."""
    asked = dict(sweep.plan.graph_sizes)
    if not asked:
        return None
    firsts = {}
    for run, rec in loaded:
        firsts.setdefault(run.variant.tag, (run, rec))
    picked = [firsts[name] for name in asked if name in firsts]
    lists = tuple(_list_run(run, asked[run.variant.tag], rec) for run, rec in picked)
    keys = sorted({(e.context, e.concurrency) for _, rec in picked if rec for e in rec.decode})
    cells = []
    for key in keys:
        entries = [_entry(rec, key) for _, rec in picked]
        cells.append(ListCell(key[0], key[1], tuple(e.status if e else "not measured" for e in entries),
                              tuple(e.figures.total_tok_s if e and e.figures and e.status in st.HEADLINE else None
                                    for e in entries),
                              (None,) + tuple(_ratio(entries[0], e) for e in entries[1:])))
    return GraphSweep(lists, tuple(cells))
