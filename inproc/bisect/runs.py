"""One child's measurement of the cell, read back from its results file: its sub-windows and its anatomy.

The oracle needs, of each child run, the units compare's block bootstrap resamples (the
Total tok/s sample, :func:`inproc.compare.samples.sample`: output tokens and seconds of
each of ``UNITS`` sub-windows of equal step counts) and the window's step anatomy
(:func:`inproc.record.summarize.anatomy_of`, with the kernel pass where the cell has one) for
the change's signature. Everything else stays in the results file, whose path the bisect log keeps.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inproc import types as st
from inproc.compare.samples import SubWindowing, sample
from inproc.compare.stats import PooledRate
from inproc.errors import UsageError
from inproc.measure import metrics as m
from inproc.record.compact import CellAnatomy
from inproc.record.io import load_results
from inproc.record.summarize import anatomy_of

#: Sub-windows a child's window is cut into (the block bootstrap's units).
UNITS = 10
#: Statuses whose Total tok/s a bisect compares (a queued cell is the same queue at every revision of one plan).
MEASURED = (st.VALID, st.QUEUED, st.LOOPED)
#: A run's status when the disturbance rule flagged its cell (``inproc.telemetry.disturbed``): no sample.
DISTURBED = "disturbed"


@dataclass(frozen=True)
class RunSample:
    """One child run of the cell: Total tok/s per sub-window (tokens, seconds) and the window's anatomy."""

    tokens: np.ndarray
    seconds: np.ndarray
    anatomy: CellAnatomy | None = None

    @property
    def tok_s(self) -> float:
        """The run's Total tok/s: Σ output tokens ÷ Σ seconds over its sub-windows (the cell's own figure)."""
        return float(self.tokens.sum() / self.seconds.sum())


@dataclass(frozen=True)
class Outcome:
    """What a child's results file holds for the cell: a sample, or the status and reason it has none."""

    status: str
    reason: str
    run: RunSample | None = None


def pooled(runs: list[RunSample]) -> PooledRate:
    """The runs' sub-windows in one sample, in the order measured (compare's block bootstrap resamples them)."""
    return PooledRate(np.concatenate([r.tokens for r in runs]).astype(float), np.concatenate([r.seconds for r in runs]))


def cutting(entry) -> SubWindowing:
    """``UNITS`` sub-windows of equal step counts: a window cut by steps holds the same units at any speed."""
    w = m.window(entry.trace) if entry.trace is not None else None
    steps = (w.last_step - w.first_step + 1) if w is not None else UNITS
    return SubWindowing(steps=max(1, steps // UNITS))


def read_outcome(path: str, context: int, concurrency: int) -> Outcome:
    """The cell's outcome in the results file at ``path`` (a file without the cell: status "missing")."""
    try:
        record = load_results(path)
    except UsageError as e:
        return Outcome("missing", str(e))
    entry = next((e for e in record.decode if (e.context, e.concurrency) == (context, concurrency)), None)
    if entry is None:
        return Outcome("missing", f"the results file holds no decode cell {context}x{concurrency}")
    if entry.status not in MEASURED:
        return Outcome(entry.status, entry.error or entry.reason)
    if entry.disturbed:  # other work on the machine set its speed: never counted (the sitting measures it again)
        # The status says "disturbed": the reason is the cause alone, so the log reads "disturbed: CAUSE".
        return Outcome(DISTURBED, entry.disturbed.removeprefix(f"{DISTURBED}: "))
    s = sample(entry, "tok_s", cutting(entry))
    if not isinstance(s, PooledRate) or s.n == 0:
        return Outcome(entry.status, "no decode window in the cell")
    return Outcome(entry.status, entry.reason, RunSample(s.amounts, s.seconds, anatomy_of(entry, record.capacity)))
