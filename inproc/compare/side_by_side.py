"""Two engines on one grid: the same matrix run on vLLM and on SGLang, cell by cell, with no verdict.

``inproc compare`` judges one engine against itself. Runs of two engines differ in the
engine and in its arguments by design, so there is nothing to call a regression; what a
reader wants is each cell's figures next to each other: the rates, the step anatomy and
the KV usage each engine reported. The rest of the run must match (model, the plan's
window and outputs, the device), or the cells are not the same cells: those keys are
refused as ``compare`` refuses them, and ``--allow-different`` allows them the same way.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from inproc.compare.keys import KeyDiff, differing, split_allowed
from inproc.errors import UsageError
from inproc.record.schema import DecodeEntry, RunRecord
from inproc.units import cell_key

#: Keys that differ between two engines by design: shown in the header, never refused.
ENGINE_KEYS = ("engine.name", "engine.version", "profile.engine_args", "profile.env")


def two_engines(base: Sequence[RunRecord], new: Sequence[RunRecord]) -> bool:
    """Whether the two sides were run by different engines (each side one engine)."""
    names = {r.engine.name for r in base}, {r.engine.name for r in new}
    return len(names[0]) == 1 and len(names[1]) == 1 and names[0] != names[1]


def _mean(values: list[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return float(np.mean(got)) if got else None


def _anatomy(name: str) -> Callable[[DecodeEntry], float | None]:
    return lambda e: getattr(e.figures.anatomy, name, None) if e.figures.anatomy else None


def _kv_peak_fraction(e: DecodeEntry) -> float | None:
    """The window's peak KV blocks in use ÷ the pool's (``figures.kv``, where the run recorded it)."""
    kv = getattr(e.figures, "kv", None)
    return kv.peak_fraction if kv is not None else None


def _graph(e: DecodeEntry) -> float | None:
    """Share of the window's steps that replayed a full graph (``graph_step_share["FULL"]``)."""
    a = e.figures.anatomy
    return a.graph_step_share.get("FULL", 0.0) if a is not None and a.graph_step_share else None


#: What each cell shows, per engine: (label, unit, the figure of one entry). Figures of several runs are averaged.
FIGURES: tuple[tuple[str, str, Callable[[DecodeEntry], float | None]], ...] = (
    ("Total tok/s", "tok/s", lambda e: e.figures.total_tok_s),
    ("Per-request tok/s", "tok/s", lambda e: e.figures.per_request_tok_s),
    ("TBT", "ms", lambda e: e.figures.tbt_ms),
    ("TTFT", "ms", lambda e: e.figures.ttft_ms),
    ("Avg active", "", lambda e: e.figures.avg_active),
    ("Host share", "%", _anatomy("host_overhead")),
    ("Padding waste", "%", _anatomy("padding_waste")),
    ("Full-graph steps", "%", _graph),
    ("Bandwidth", "GB/s", lambda e: (b / 1e9) if (b := _anatomy("bandwidth_bytes_s")(e)) is not None else None),
    ("KV peak", "%", _kv_peak_fraction),
    ("Preemptions", "", lambda e: e.figures.preemptions),
)


@dataclass(frozen=True)
class Pair:
    """One figure of one cell on both engines (None where that engine's runs have none)."""

    label: str
    unit: str
    base: float | None
    new: float | None

    @property
    def ratio(self) -> float | None:
        """new ÷ base, where both are above 0."""
        return self.new / self.base if self.base and self.new and self.base > 0 else None


@dataclass(frozen=True)
class CellPair:
    context: int
    concurrency: int
    base_status: str  # "" when the cell is not in that side's runs; "Valid ×2, Looped ×1" when runs disagree
    new_status: str
    figures: tuple[Pair, ...]

    @property
    def key(self) -> str:
        return cell_key(self.context, self.concurrency)


@dataclass(frozen=True)
class SideBySide:
    base_engine: str  # "vllm 0.32.0"
    new_engine: str
    base_label: str
    new_label: str
    base_runs: int
    new_runs: int
    differences: tuple[KeyDiff, ...]  # the engines' own keys (and any allowed one)
    cells: tuple[CellPair, ...]
    exit_code: int = 0  # no verdict between engines


def _status(entries: Sequence[DecodeEntry]) -> str:
    statuses = [e.status for e in entries]
    return statuses[0] if len(set(statuses)) == 1 else ", ".join(f"{s} ×{statuses.count(s)}" for s in dict.fromkeys(statuses))


def _figures(entries: Sequence[DecodeEntry]) -> list[float | None]:
    with_figures = [e for e in entries if e.figures is not None]
    return [_mean([get(e) for e in with_figures]) for _, _, get in FIGURES]


def side_by_side(base: Sequence[RunRecord], new: Sequence[RunRecord], allow: Sequence[str] = (),
                 base_label: str = "baseline", new_label: str = "new") -> SideBySide:
    """Every decode cell of either side, each engine's figures next to the other's; refuses other differences."""
    diffs = differing(base, new)
    allow_all = (*ENGINE_KEYS, *allow)
    shown, refused = split_allowed(diffs, allow_all)
    if refused:
        raise UsageError(f"{base_label} and {new_label} ran different engines on different grids: "
                         f"{'; '.join(d.describe() for d in refused)} differ. Two engines are shown side by side "
                         f"only on the same model and matrix; pass --allow-different {refused[0].key} to show them anyway.")
    cells = sorted({(e.context, e.concurrency) for r in (*base, *new) for e in r.decode})
    out = []
    for cell in cells:
        b = [e for r in base for e in r.decode if (e.context, e.concurrency) == cell]
        n = [e for r in new for e in r.decode if (e.context, e.concurrency) == cell]
        fb, fn = _figures(b), _figures(n)
        pairs = tuple(Pair(label, unit, x, y) for (label, unit, _), x, y in zip(FIGURES, fb, fn))
        out.append(CellPair(cell[0], cell[1], _status(b) if b else "", _status(n) if n else "", pairs))
    eng = lambda runs: f"{runs[0].engine.name} {runs[0].engine.version}"
    return SideBySide(eng(base), eng(new), base_label, new_label, len(base), len(new), tuple(shown), tuple(out))
