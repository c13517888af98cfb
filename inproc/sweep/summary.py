"""The sweep summary, derived from the variants' results files each time they are loaded.

Per decode cell: every variant's status and headline figures (total tok/s, time between
tokens, TTFT) with its step anatomy (CUDA-graph coverage, padding), the best variant and
the spread. Per variant: how it ended, its engine's build and warm-up times and the memory
its graph capture took where the engine reports it. Figures are the entries' own
(``inproc.measure.figures``), shown only for a status with headline figures, as the run
reports do, so a figure is defined once.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping

from inproc import types as st
from inproc.errors import UsageError
from inproc.record.io import load_results
from inproc.record.schema import RunRecord
from inproc.sweep.graph_summary import GraphSweep, graph_side_by_side
from inproc.sweep.manifest import DONE, Sweep, VariantRun
from inproc.sweep.pays import NO_SPECULATION, CellPays, SpecPoint, cell_pays, tok_s_error, tpot_ms


@dataclass(frozen=True)
class VariantCell:
    """One variant in one cell: its status and the figures the matrix shows (None: not shown)."""

    index: int
    name: str
    label: str
    status: str
    reason: str = ""
    total_tok_s: float | None = None
    tbt_ms: float | None = None
    ttft_ms: float | None = None
    graph_step_share: Mapping[str, float] = field(default_factory=dict)
    padding_waste: float | None = None
    best: bool = False
    disturbed: str = ""  # the disturbance rule's cause: other work on the machine during the window
    acceptance: float | None = None  # spec_mean_acceptance_length: measured in the window (None: no drafts)
    per_request_tok_s: float | None = None
    tok_s_se: float | None = None  # inproc.sweep.pays.tok_s_error
    subwindows: int = 0
    speculative: bool = True  # False: the variant without speculation (--break-even)


@dataclass(frozen=True)
class CellSummary:
    """A decode cell across the variants, in variant order."""

    context: int
    concurrency: int
    rows: tuple[VariantCell, ...]

    @property
    def best(self) -> VariantCell | None:
        return next((r for r in self.rows if r.best), None)

    @property
    def spread(self) -> float | None:
        """Best ÷ worst total tok/s over the Valid variants (none with fewer than two)."""
        vals = [r.total_tok_s for r in self.rows if comparable(r)]
        return max(vals) / min(vals) if len(vals) > 1 and min(vals) > 0 else None


@dataclass(frozen=True)
class VariantSummary:
    """How one variant ended and what building its engine took."""

    index: int
    name: str
    status: str
    error: str
    file: str
    engine: str = ""  # name and version, from its results file
    build_s: float | None = None
    warmup_s: float | None = None
    graph_memory_bytes: int | None = None
    record_error: str = ""  # why its results file could not be read
    disturbed_cells: int = 0  # its decode cells measured while other work used the machine


@dataclass(frozen=True)
class SweepSummary:
    sweep: Sweep
    variants: tuple[VariantSummary, ...]
    cells: tuple[CellSummary, ...]
    graphs: GraphSweep | None = None  # --graph-sizes: the lists side by side
    pays: tuple[CellPays, ...] = ()  # --acceptance / --break-even: where speculation pays, per cell

    @property
    def failed(self) -> tuple[VariantSummary, ...]:
        return tuple(v for v in self.variants if v.error or v.record_error)

    @property
    def engine(self) -> str:
        return next((v.engine for v in self.variants if v.engine), self.sweep.plan.engine)


def comparable(r: VariantCell) -> bool:
    """Only a Valid cell held C requests in flight, the cell that was asked for, and only an undisturbed one measured
    the engine rather than other work on the machine: best and spread read these."""
    return r.status == st.VALID and r.total_tok_s is not None and not r.disturbed


def _load(directory: Path, run: VariantRun) -> tuple[RunRecord | None, str]:
    path = directory / run.variant.file
    if not path.is_file():
        return None, ("its results file is missing" if run.status == DONE else "")
    try:
        return load_results(path), ""
    except UsageError as e:
        return None, str(e)


def _variant(run: VariantRun, rec: RunRecord | None, why: str) -> VariantSummary:
    base = VariantSummary(run.variant.index, run.variant.name, run.status, run.error, run.variant.file, record_error=why)
    if rec is None:
        return base
    memory = rec.engine.settings.graph_capture_memory_bytes
    return VariantSummary(base.index, base.name, base.status, base.error, base.file, f"{rec.engine.name} {rec.engine.version}",
                          rec.engine.build_s, rec.engine.warmup_s, int(memory) if memory is not None else None,
                          disturbed_cells=sum(bool(e.disturbed) for e in rec.decode))


def _cell_row(run: VariantRun, rec: RunRecord | None, key: tuple[int, int]) -> VariantCell:
    v = run.variant
    entry = next((e for e in rec.decode if (e.context, e.concurrency) == key), None) if rec else None
    if entry is None:  # a finished variant without the cell did not plan it; the others did not get to it
        status = "not measured" if run.status == DONE and rec is not None else f"variant {run.status}"
        return VariantCell(v.index, v.name, v.label, status, run.error)
    f = entry.figures if entry.status in st.HEADLINE else None
    if f is None:
        return VariantCell(v.index, v.name, v.label, entry.status, entry.reason)
    anatomy = f.anatomy
    error = tok_s_error(entry.trace) if entry.trace is not None else None
    return VariantCell(v.index, v.name, v.label, entry.status, entry.reason, f.total_tok_s, f.tbt_ms, f.ttft_ms,
                       dict(anatomy.graph_step_share) if anatomy else {}, anatomy.padding_waste if anatomy else None,
                       disturbed=entry.disturbed, acceptance=f.spec_mean_acceptance_length,
                       per_request_tok_s=f.per_request_tok_s, tok_s_se=error.se if error else None,
                       subwindows=error.n if error else 0, speculative=v.tag != NO_SPECULATION)


def _mark_best(rows: list[VariantCell]) -> tuple[VariantCell, ...]:
    valid = [r for r in rows if comparable(r)]
    if not valid:
        return tuple(rows)
    best = max(valid, key=lambda r: r.total_tok_s)
    return tuple(replace(r, best=r is best) for r in rows)


def summarize(sweep: Sweep, directory: str | Path) -> SweepSummary:
    """The summary of the sweep in ``directory``, from whatever results files it holds now."""
    directory = Path(directory)
    loaded = [(run, *_load(directory, run)) for run in sweep.runs]
    variants = tuple(_variant(run, rec, why) for run, rec, why in loaded)
    keys = sorted({(e.context, e.concurrency) for _, rec, _ in loaded if rec for e in rec.decode})
    cells = tuple(CellSummary(L, C, _mark_best([_cell_row(run, rec, (L, C)) for run, rec, _ in loaded])) for L, C in keys)
    graphs = graph_side_by_side(sweep, [(run, rec) for run, rec, _ in loaded])
    pays = tuple(_pays(c, sweep.plan.at) for c in cells) if sweep.plan.break_even else ()
    return SweepSummary(sweep, variants, cells, graphs, pays)


def _pays(c: CellSummary, at: float | None) -> CellPays:
    """The cell's curve from its comparable rows with a standard error; the others named as left out."""
    usable = [r for r in c.rows if comparable(r) and r.tok_s_se is not None]
    point = lambda r: SpecPoint(r.index, r.name, r.acceptance if r.speculative else None,  # noqa: E731
                                r.total_tok_s, r.tok_s_se, r.subwindows, tpot_ms(r.per_request_tok_s))
    base = next((point(r) for r in usable if not r.speculative), None)
    left = tuple(f"{r.name}: {r.status}{' (disturbed)' if r.disturbed else ''}" for r in c.rows
                 if r not in usable and (r.speculative or base is None))
    return cell_pays(c.context, c.concurrency, base, [point(r) for r in usable if r.speculative], left, at)
