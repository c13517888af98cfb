"""Simulated acceptance sweeps with a known break-even: what ``inproc.sweep.breakeven`` is judged on.

One cell: without speculation the engine makes ``base_tok_s``; with it, a verify step costs
``verify_cost`` times a plain decode step and yields the acceptance length in tokens, so the true
speculative tok/s is ``base_tok_s · a / verify_cost`` and the true break-even is ``a* = verify_cost``.
Each variant is measured as ``subwindows`` sub-window rates with a relative spread ``noise`` (its
standard error estimated from them, as inproc does); a sub-window's acceptance is the truth plus the
error of a mean over its share of ``drafts`` drafts (each accepting a uniform 0..k tokens), and its
tok/s follows the acceptance it had, as a real window's does.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inproc.sweep.breakeven import Point


@dataclass(frozen=True)
class SpecCell:
    """A cell's truth and how it is measured."""

    verify_cost: float  # the true break-even acceptance length
    lengths: tuple[float, ...]  # the variants' true mean acceptance lengths
    base_tok_s: float = 1000.0
    noise: float = 0.04  # relative spread of one sub-window's tok/s
    subwindows: int = 8
    drafts: int = 2000
    k: int = 5

    def true_tok_s(self, a: float) -> float:
        return self.base_tok_s * a / self.verify_cost


def _point(rng: np.random.Generator, cell: SpecCell, a: float | None) -> Point:
    """A variant measured: each sub-window's acceptance drawn around the truth (its drafts' mean), its tok/s
    the truth at that acceptance times the step-time noise; the means and the tok/s's standard error."""
    n = cell.subwindows
    if a is None:
        rates = cell.base_tok_s * (1 + cell.noise * rng.standard_normal(n))
        accepted = None
    else:
        draft_sd = (cell.k + 1) / np.sqrt(12)  # one draft's acceptance spread (uniform over 0..k)
        sub = a + rng.normal(0, draft_sd / np.sqrt(cell.drafts / n), n)
        rates = np.array([cell.true_tok_s(x) for x in sub]) * (1 + cell.noise * rng.standard_normal(n))
        accepted = float(np.mean(sub))
    return Point(accepted, float(np.mean(rates)), float(np.std(rates, ddof=1) / np.sqrt(n)), n)


def simulate_cell(cell: SpecCell, rng: np.random.Generator) -> tuple[list[Point], Point]:
    """(the speculative variants' points, the no-speculation point) of one measured sweep."""
    return [_point(rng, cell, a) for a in cell.lengths], _point(rng, cell, None)
