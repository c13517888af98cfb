"""The compared metrics and their samples inside one decode cell, taken from its raw trace.

Each metric's figure is the cell's own figure (``inproc.measure.metrics``), and its sample
is what that figure is a statistic of, so a ratio of figures is what two reports show:

- ``tok_s`` — Total tok/s: :func:`~inproc.measure.metrics.output_tokens` and length of each
  :func:`~inproc.measure.metrics.subwindows`; the figure Σ tokens ÷ Σ seconds is
  :func:`~inproc.measure.metrics.total_tok_s` exactly (the sub-windows tile the window).
- ``tbt`` — Time between tokens: :func:`~inproc.measure.metrics.tbt_intervals_s`; figure: their median.
- ``ttft`` — TTFT: :func:`~inproc.measure.metrics.ttft_s` of every request; figure: their median.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inproc.compare.stats import Median, PooledRate, Resampled
from inproc.measure import metrics as m
from inproc.record.schema import DecodeEntry

#: Sub-windows are 1 s long, or a tenth of the window when it is shorter than 10 s, so a
#: short CPU window still gives ten samples.
SUB_WINDOW_S = 1.0
MIN_SUBWINDOWS = 10

BOOTSTRAP = "bootstrap"
MANN_WHITNEY = "Mann-Whitney U"
BETWEEN_RUNS = "between-run t"


@dataclass(frozen=True)
class Metric:
    """One compared metric: its name on the command line, its unit, which way is better, its test."""

    name: str
    label: str
    unit: str
    scale: float  # figure in display units = statistic × scale
    higher_is_better: bool
    test: str  # the within-run test (one run on each side)


METRICS = {
    "tok_s": Metric("tok_s", "Total tok/s", "tok/s", 1.0, True, BOOTSTRAP),
    "tbt": Metric("tbt", "Time between tokens", "ms", 1000.0, False, MANN_WHITNEY),
    "ttft": Metric("ttft", "TTFT", "ms", 1000.0, False, MANN_WHITNEY),
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
    """The cell's sample of ``metric``, or None when the cell has no window (not run, or failed)."""
    w = m.window(entry.trace) if entry.trace is not None else None
    if w is None:
        return None
    if metric == "tok_s":
        subs = cutting.cut(entry, w)
        tokens = np.array([m.output_tokens(entry.trace, s) for s in subs], dtype=float)
        return PooledRate(tokens, np.array([m.measured_for_s(s) for s in subs]))
    if metric == "tbt":
        values = m.tbt_intervals_s(entry.trace, w)
    elif metric == "ttft":
        values = [v for v in (m.ttft_s(entry.trace, r) for r in entry.trace.requests) if v is not None]
    else:
        raise ValueError(f"unknown metric {metric!r}")
    return Median.of(values) if len(values) else None
