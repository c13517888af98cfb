"""The KV-cache usage matrix: per decode cell, the blocks the engine held beside the plan's estimate.

Observed figures are the engine's own count at every step of the window
(``inproc.measure.kv``); the estimate is the plan's static arithmetic
(``inproc.plan.capacity``: C requests at their steady decode footprints, and at their
peaks). Cells not run show the estimate alone, marked as such.
"""
from __future__ import annotations

from dataclasses import dataclass

from inproc.record.schema import DecodeEntry, RunRecord

KV_NOTE = ("KV blocks in use, as the engine counted them at every step of the window: peak · mean, of the blocks "
           "requests can hold (the percentage is the peak's). est.: the plan's estimate, C requests at their steady "
           "decode footprints (→ if all held their peak at once); an estimate, not a measurement.")


@dataclass(frozen=True)
class KvGrid:
    """Rows = contexts, columns = concurrency levels; text per cell ('' where nothing is known)."""

    contexts: tuple[int, ...]
    concurrency: tuple[int, ...]
    cells: dict[tuple[int, int], str]


def kv_cell(e: DecodeEntry) -> str:
    """``290 · 270 of 299 (97 %) · est. 290 → 2,550`` (observed, then the estimate)."""
    parts = []
    kv = e.figures.kv if e.figures is not None else None
    if kv is not None:
        parts.append(f"{kv.peak_blocks:,} · {kv.mean_blocks:,.0f} of {kv.pool_blocks:,} ({kv.peak_fraction:.0%})")
    chk = e.capacity_check
    if chk is not None:
        est = f"est. {chk.blocks_needed:,}"
        if chk.peak_blocks_needed is not None and chk.peak_blocks_needed != chk.blocks_needed:
            est += f" → {chk.peak_blocks_needed:,}"
        parts.append(est if kv is not None else f"{est} of {chk.blocks_available:,}")
    return " · ".join(parts)


def kv_grid(rec: RunRecord) -> KvGrid | None:
    """The grid of the record's decode cells; None when no cell has a KV figure or an estimate."""
    cells = {(e.context, e.concurrency): kv_cell(e) for e in rec.decode}
    if not any(cells.values()):
        return None
    return KvGrid(tuple(sorted({L for L, _ in cells})), tuple(sorted({C for _, C in cells})), cells)
