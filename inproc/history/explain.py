"""The diagnosis of a comparison's slower and faster rows (``inproc compare`` shows it under its rows)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from inproc.compare.kernels import describe
from inproc.compare.verdicts import FASTER, SLOWER, Comparison, Row
from inproc.history.diagnose import diagnose
from inproc.history.tail import TailSplit, tail_split
from inproc.record.compact import CellAnatomy
from inproc.record.summarize import anatomy_of
from inproc.record.schema import RunRecord


@dataclass(frozen=True)
class Explained:
    """One slower or faster row and what changed in the steps."""

    row: Row
    diagnosis: str
    tail: TailSplit | None = None  # where the step time moved (tok/s and TBT rows with slow-step figures)


def _anatomies(runs: Sequence[RunRecord], cell: tuple[int, int]) -> list[CellAnatomy]:
    out = []
    for rec in runs:
        for e in rec.decode:
            if (e.context, e.concurrency) == cell and (a := anatomy_of(e, rec.capacity)) is not None:
                out.append(a)
    return out


def explain(base: Sequence[RunRecord], new: Sequence[RunRecord], c: Comparison) -> tuple[Explained, ...]:
    """A diagnosis for every slower or faster row of ``c`` (made from ``base`` and ``new``); the kernel change is
    the comparison's own (``Comparison.kernels``, judged over every cell together)."""
    kernels = {(k.context, k.concurrency): describe(k) for k in c.kernels}
    out = []
    for r in c.rows:
        if r.verdict in (SLOWER, FASTER) and r.estimate is not None:
            cell = (r.context, r.concurrency)
            b, n = _anatomies(base, cell), _anatomies(new, cell)
            split = tail_split(b, n) if r.metric in ("tok_s", "tbt") else None
            text = kernels.get(cell, "") if r.metric in ("tok_s", "tbt") else ""
            out.append(Explained(r, diagnose(b, n, r.metric, r.estimate.ratio, text), split))
    return tuple(out)
