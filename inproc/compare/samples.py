"""The compared metrics and their samples inside one decode cell, taken from its raw trace.

Each metric's figure is the cell's own figure (``inproc.measure.metrics``), and its sample
holds the same values grouped in units that are close to independent, in time order, for
the block bootstrap (``inproc.compare.stats``):

- ``tok_s`` — Total tok/s: units are the :func:`~inproc.measure.metrics.subwindows`, each its
  :func:`~inproc.measure.metrics.output_tokens` and length; the figure Σ tokens ÷ Σ seconds is
  :func:`~inproc.measure.metrics.total_tok_s` exactly (the sub-windows tile the window).
- ``tbt`` — Time between tokens: the :func:`~inproc.measure.metrics.tbt_intervals_s`, each in the
  sub-window of the step that ended it; figure: the median of all of them.
- ``ttft`` — TTFT: :func:`~inproc.measure.metrics.ttft_s` of every request, one unit per request
  in submit order (neighbours share prefill steps: the blocks keep them together); figure: the median.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inproc.compare.stats import PooledMedian, PooledRate, Resampled
from inproc.errors import UsageError
from inproc.measure import metrics as m
from inproc.record.compact import CellSamples
from inproc.record.schema import DecodeEntry
from inproc.record.summarize import gap_counts

#: Sub-windows are 1 s long, or a tenth of the window when it is shorter than 10 s, so a
#: short CPU window still gives ten units.
SUB_WINDOW_S = 1.0
MIN_SUBWINDOWS = 10

BLOCK_BOOTSTRAP = "block bootstrap"
BETWEEN_RUNS = "between-run t"

@dataclass(frozen=True)
class Metric:
    """One compared metric: its name on the command line, its unit, which way is better."""

    name: str
    label: str
    unit: str
    scale: float  # figure in display units = statistic × scale
    higher_is_better: bool


METRICS = {
    "tok_s": Metric("tok_s", "Total tok/s", "tok/s", 1.0, True),
    "tbt": Metric("tbt", "Time between tokens", "ms", 1000.0, False),
    "ttft": Metric("ttft", "TTFT", "ms", 1000.0, False),
}


@dataclass(frozen=True)
class SubWindowing:
    """How a window is cut: ``sub_s`` seconds (None: the default above), or every ``steps`` steps."""

    sub_s: float | None = None
    steps: int | None = None

    def cut(self, entry: DecodeEntry, w: m.Window) -> list[m.Window]:
        if self.steps is not None:
            return m.subwindows(entry.trace, w, every_steps=self.steps)
        return m.subwindows(entry.trace, w, sub_s=self.sub_s_for(entry.trace.window_target_s))

    def sub_s_for(self, window_s: float) -> float | None:
        """The sub-window length in seconds for a window of ``window_s`` (None: cut by steps)."""
        if self.steps is not None:
            return None
        return self.sub_s or min(SUB_WINDOW_S, window_s / MIN_SUBWINDOWS)

    def describe(self, window_s: float) -> str:
        """The sub-windows for a window of ``window_s``, in words: "0.2 s sub-windows", "16-step sub-windows"."""
        sub_s = self.sub_s_for(window_s)
        return f"{self.steps}-step sub-windows" if sub_s is None else f"{sub_s:g} s sub-windows"


def sample(entry: DecodeEntry, metric: str, cutting: SubWindowing) -> Resampled | None:
    """The cell's sample of ``metric``, or None when the cell has none (no window, no gaps, no first token)."""
    if entry.trace is None and entry.summary is not None and entry.summary.samples is not None:
        return _stored(entry.summary.samples, metric, cutting)
    w = m.window(entry.trace) if entry.trace is not None else None
    if w is None:
        return None
    if metric == "tok_s":
        subs = cutting.cut(entry, w)
        tokens = m.output_tokens_each(entry.trace, subs).astype(float)
        return PooledRate(tokens, np.array([m.measured_for_s(s) for s in subs]))
    if metric == "tbt":
        subs = cutting.cut(entry, w)
        return _gaps(*gap_counts(entry.trace, w, subs), len(subs))
    if metric == "ttft":
        reqs = sorted(entry.trace.requests, key=lambda r: r.submit_s)
        units = [np.array([v]) for v in (m.ttft_s(entry.trace, r) for r in reqs) if v is not None]
    else:
        raise ValueError(f"unknown metric {metric!r}")
    return PooledMedian.of(units) if any(len(u) for u in units) else None


def _gaps(values: np.ndarray, counts: np.ndarray, units: np.ndarray, n_units: int) -> PooledMedian | None:
    """The TBT sample of a window's gaps as (value, count, sub-window) rows (None: no gap)."""
    return PooledMedian.of_counts(values, counts, units, n_units) if counts.sum() > 0 else None


def _stored(s: CellSamples, metric: str, cutting: SubWindowing) -> Resampled | None:
    """The sample of a compact cell (a baseline or history entry keeps these instead of its trace)."""
    stored = SubWindowing(s.sub_s, s.sub_steps)
    if metric in ("tok_s", "tbt") and cutting != SubWindowing() and cutting != stored:
        raise UsageError(f"A compact baseline keeps {stored.describe(float(s.sub_seconds.sum()))} only; compare "
                         "without --sub-window, or make the baseline again from its run files.")
    if metric == "tok_s":
        return PooledRate(s.sub_tokens.astype(float), s.sub_seconds)
    if metric == "tbt":
        return _gaps(s.gap_values_s, s.gap_counts, s.gap_units, s.sub_tokens.size)
    if metric == "ttft":
        units = [np.array([v]) for v in s.ttft_s]
    else:
        raise ValueError(f"unknown metric {metric!r}")
    return PooledMedian.of(units) if any(len(u) for u in units) else None
