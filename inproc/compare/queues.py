"""What compare reads of a cell's entries before judging it: whether its runs agree on a status, and the queue
a Requests queued cell held (``inproc.compare.verdicts`` decides from these whether the cell is comparable)."""
from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np

from inproc.measure import metrics as m
from inproc.record.schema import DecodeEntry


def status_of(entries: Sequence[DecodeEntry]) -> str | None:
    """The status every run of the cell has (None: they disagree)."""
    statuses = {e.status for e in entries}
    return statuses.pop() if len(statuses) == 1 else None


def disagree(entries: Sequence[DecodeEntry]) -> str:
    """How the runs' statuses disagree: "Valid ×2, Looped ×1"."""
    counts = Counter(e.status for e in entries)
    return ", ".join(f"{s} ×{n}" for s, n in counts.most_common())


def queue_shape(e: DecodeEntry) -> tuple[int, int] | None:
    """(running, waiting): the medians of the scheduler's counts over the cell's window steps (None: no window)."""
    w = m.window(e.trace) if e.trace is not None else None
    if w is None:
        return None
    rows = slice(w.first_step, w.last_step + 1)
    return int(np.median(e.trace.steps.num_running[rows])), int(np.median(e.trace.steps.num_waiting[rows]))


def shape_text(shape: tuple[int, int] | None) -> str:
    return "no window" if shape is None else f"{shape[0]} running, {shape[1]} waiting"


def queues_differ(base: Sequence[DecodeEntry], new: Sequence[DecodeEntry]) -> str:
    """Why queued cells are not comparable (the runs' running and waiting differ), or ""."""
    shapes = [queue_shape(e) for e in (*base, *new)]
    if None in shapes or len(set(shapes)) > 1:
        return "not the same queue: " + " vs ".join(dict.fromkeys(shape_text(x) for x in shapes))
    return ""
