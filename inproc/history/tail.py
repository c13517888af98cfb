"""Where a change of the step time sits: in the tail (more or longer slow steps) or in the typical step.

A decode window's mean step time T (``CellAnatomy.step_s``: Σ ``Engine.step()`` time ÷ steps)
splits exactly as

    T = M + X + B

M: the window's median step time (``SlowFigures.median_ms``); X: the slow steps' excess per
step (``SlowFigures.excess_ms``, :func:`inproc.measure.slow.slow_excess_s`: Σ over the slow
steps of (time − M) ÷ steps); B = T − M − X: how far the other steps sit from the median on
average. Over several runs of one side each term is the mean of the runs' terms (means add
up, so the split stays exact). Between two sides ΔT = ΔM + ΔB + ΔX, and the change is

- **unchanged** when |ΔT| < STEADY × T of the baseline (2 %): neither part moved the step time;
- **in the tail** when the slow steps' share ΔX ÷ ΔT is above TAIL_SHARE (0.5): most of the
  change is slow steps that are more, or longer;
- **in the typical step** otherwise: the median and the other steps (ΔM + ΔB) carry at least
  half of it.

Everything comes from the step times of the raw records (the slow-step rule reads step times
and the batch's shape, not the GC columns), so a results file of any schema has it; a
compact baseline or history entry kept before the slow-step figures were has none, and the
split is then not made.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from inproc.record.compact import CellAnatomy

STEADY = 0.02  # a change of the mean step time below this share of the baseline's is no change
TAIL_SHARE = 0.5  # the slow steps' share of the change above which it is "in the tail"

TAIL, TYPICAL, UNCHANGED = "tail", "typical", "unchanged"
WHERE = (TAIL, TYPICAL, UNCHANGED)


@dataclass(frozen=True)
class StepTerms:
    """One side's mean step time and its three terms (s per step), and its slow-step figures (means over runs)."""

    mean_s: float
    median_s: float
    excess_s: float
    slow_steps: float  # slow steps per run
    slow_share: float  # their share of the window's time
    p99_s: float
    max_s: float

    @property
    def rest_s(self) -> float:
        """B: the other steps' mean distance from the median."""
        return self.mean_s - self.median_s - self.excess_s


@dataclass(frozen=True)
class TailSplit:
    """Where the mean step time's change sits (one of WHERE), the slow steps' share of it, and the two sides."""

    where: str
    tail_share: float | None  # ΔX ÷ ΔT (None: unchanged)
    base: StepTerms
    new: StepTerms

    @property
    def change_s(self) -> float:
        return self.new.mean_s - self.base.mean_s


def terms(runs: Sequence[CellAnatomy]) -> StepTerms | None:
    """The side's terms, the mean over its runs; None when a run has no slow-step figures."""
    if not runs or any(a.slow is None or a.steps == 0 for a in runs):
        return None
    mean = lambda get: float(np.mean([get(a) for a in runs]))
    return StepTerms(mean(lambda a: a.step_s), mean(lambda a: a.slow.median_ms / 1e3),
                     mean(lambda a: a.slow.excess_ms / 1e3), mean(lambda a: a.slow.count),
                     mean(lambda a: a.slow.time_share), mean(lambda a: a.slow.p99_ms / 1e3),
                     mean(lambda a: a.slow.max_ms / 1e3))


def tail_split(base: Sequence[CellAnatomy], new: Sequence[CellAnatomy]) -> TailSplit | None:
    """The rule of the module's docstring; None when either side lacks slow-step figures."""
    b, n = terms(base), terms(new)
    if b is None or n is None:
        return None
    change = n.mean_s - b.mean_s
    if abs(change) < STEADY * b.mean_s:
        return TailSplit(UNCHANGED, None, b, n)
    share = (n.excess_s - b.excess_s) / change
    return TailSplit(TAIL if share > TAIL_SHARE else TYPICAL, share, b, n)


def _ms(b: float, n: float) -> str:
    return f"{b * 1e3:.3g} → {n * 1e3:.3g} ms"


def _slow(b: StepTerms, n: StepTerms) -> str:
    return (f"slow steps {b.slow_steps:.3g} → {n.slow_steps:.3g} "
            f"({b.slow_share * 100:.1f} % → {n.slow_share * 100:.1f} % of the window)")


def tail_text(s: TailSplit) -> str:
    """The split in words, with its numbers: "in the tail: slow steps 0 → 10 (…), p99 …, max …, median …; …"."""
    b, n = s.base, s.new
    if s.where == UNCHANGED:
        return (f"mean step time unchanged ({_ms(b.mean_s, n.mean_s)}, within {STEADY * 100:g} %): "
                f"median {_ms(b.median_s, n.median_s)}, {_slow(b, n)}")
    of_change = " of the mean step time's change"
    if s.where == TAIL:
        return (f"in the tail: {_slow(b, n)}, p99 {_ms(b.p99_s, n.p99_s)}, max {_ms(b.max_s, n.max_s)}, "
                f"median {_ms(b.median_s, n.median_s)}; the slow steps' excess carries {s.tail_share * 100:.0f} %{of_change}")
    return (f"in the typical step: median step time {_ms(b.median_s, n.median_s)}; the typical steps carry "
            f"{(1 - s.tail_share) * 100:.0f} %{of_change}; {_slow(b, n)}")
