"""Where speculation pays, per decode cell of a sweep: each variant's point and the break-even.

A sweep made with ``--acceptance`` or ``--break-even`` holds one variant without speculation (the
profile with its speculation arguments removed) and speculative variants whose acceptance differs
(forced where the engine can force it; elsewhere temperature, the draft count, the n-gram windows,
text prompts). The x axis is always the acceptance length each variant *measured* in the cell
(``spec_mean_acceptance_length``), never the value asked for. Only Valid, undisturbed cells count
(:func:`inproc.sweep.summary.comparable`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inproc.measure import metrics as m
from inproc.measure.trace import CellTrace
from inproc.sweep.breakeven import BreakEven, Point, Speedup, find_break_even, speedup_at

NO_SPECULATION = "no speculation"  # the tag of the variant without speculation
SUBWINDOWS = 8  # the window cut into this many runs of steps for a tok/s's standard error


@dataclass(frozen=True)
class TokSError:
    """A total tok/s's standard error and the number of sub-windows it was estimated from."""

    se: float
    n: int


def tok_s_error(trace: CellTrace) -> TokSError | None:
    """The standard error of the cell's total tok/s (``metrics.total_tok_s``) from the window's sub-windows.

    The window is cut into :data:`SUBWINDOWS` runs of consecutive steps (``metrics.subwindows`` by
    steps); total tok/s is their tokens over their seconds, a ratio estimator, whose standard
    error is sqrt(Σ (tokens_i − R·seconds_i)² / (n (n − 1))) ÷ mean seconds. None for a window of
    fewer than two sub-windows.
    """
    w = m.window(trace)
    if w is None:
        return None
    steps = w.last_step - w.first_step + 1
    subs = m.subwindows(trace, w, every_steps=max(1, steps // SUBWINDOWS))
    n = len(subs)
    if n < 2:
        return None
    tokens = m.output_tokens_each(trace, subs).astype(float)
    seconds = np.array([s.length_s for s in subs])
    rate = tokens.sum() / seconds.sum()
    se = float(np.sqrt(np.sum((tokens - rate * seconds) ** 2) / (n * (n - 1))) / seconds.mean())
    return TokSError(se, n)


def tpot_ms(per_request_tok_s: float | None) -> float | None:
    """Time per output token of one request, ms: 1000 ÷ ``per_request_tok_s`` (a request's tokens over
    the time from its first to its last arrival in the window, averaged over requests)."""
    return 1000.0 / per_request_tok_s if per_request_tok_s else None


@dataclass(frozen=True)
class SpecPoint:
    """One variant in one cell: its measured acceptance length (None: no drafts, or no speculation) and figures."""

    index: int
    name: str
    acceptance: float | None
    tok_s: float
    tok_s_se: float
    subwindows: int
    tpot_ms: float | None

    def point(self) -> Point:
        return Point(self.acceptance, self.tok_s, self.tok_s_se, self.subwindows)


@dataclass(frozen=True)
class CellPays:
    """A decode cell's curve: the base (no speculation), the speculative points, the break-even, the speedup."""

    context: int
    concurrency: int
    base: SpecPoint | None
    points: tuple[SpecPoint, ...]  # speculative variants with a measured acceptance, by acceptance
    break_even: BreakEven
    speedup: Speedup | None  # at the sweep's --at length; None without one or without a fit
    left_out: tuple[str, ...] = ()  # speculative variants not on the curve, and why


def cell_pays(context: int, concurrency: int, base: SpecPoint | None, spec: list[SpecPoint],
              left_out: tuple[str, ...], at: float | None) -> CellPays:
    """The analysis of one cell from its points (see :func:`inproc.sweep.breakeven.find_break_even`)."""
    points = tuple(sorted((p for p in spec if p.acceptance is not None), key=lambda p: p.acceptance))
    missing = tuple(f"{p.name}: no drafts in the window, no acceptance measured" for p in spec if p.acceptance is None)
    found = find_break_even([p.point() for p in points], base.point() if base else None)
    speed = speedup_at([p.point() for p in points], base.point() if base else None, at) if at is not None else None
    return CellPays(context, concurrency, base, points, found, speed, left_out + missing)
