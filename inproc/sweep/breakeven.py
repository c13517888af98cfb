"""Where speculation pays: the acceptance length at which speculative tok/s meets tok/s without it.

Per decode cell, the variants with speculation give points (measured mean acceptance length,
total tok/s ± its standard error) and the variant without speculation gives one tok/s ± its
standard error. Speculative tok/s is fitted as a straight line in the acceptance length
(weighted least squares, weights 1 / se²): with the draft count held, a verify step costs
about the same whatever is accepted, and yields that many tokens, so tok/s grows in proportion.
Where the variants change more than acceptance (the draft count, the n-gram windows) the line
is an approximation, and the points' scatter about it widens the interval (below).

The break-even length a* solves fit(a*) = tok/s without speculation. Its interval is Fieller's
(test inversion): every a where the difference d(a) = fit(a) − base is not significantly
different from zero, |d(a)| <= q · se(d(a)), with se(d(a))² the fit's variance at a plus the
base's. q is Student's t with Welch–Satterthwaite degrees of freedom, each tok/s's standard
error counting as estimated from its sub-windows. Where the points scatter about the line by
more than their standard errors say (reduced chi-square above 1), the fit's covariance is
scaled up by it. The measured acceptance lengths are taken as exact: a window's tok/s follows the
acceptance it measured, so an error in that mean moves the point along the line, not off it (the
simulated sweeps of ``scripts/bench.py breakeven`` draw it so).

Verdicts, over the measured range of acceptance lengths [lowest, highest point]:
``pays above``/``pays below`` a*, with its interval (bounded); ``always pays`` or ``never pays``
when the interval misses the measured range (speculative tok/s is significantly above, or
below, the base over all of it); ``undetermined`` when the interval is unbounded and meets the
range (tok/s does not change clearly with acceptance), or with too few points.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

LEVEL = 0.95
PAYS_ABOVE, PAYS_BELOW, ALWAYS, NEVER, UNDETERMINED = "pays above", "pays below", "always pays", "never pays", "undetermined"
VERDICTS = (PAYS_ABOVE, PAYS_BELOW, ALWAYS, NEVER, UNDETERMINED)


@dataclass(frozen=True)
class Point:
    """One variant in one cell: its measured mean acceptance length (None without speculation), its total
    tok/s, that figure's standard error and the number of sub-windows the error was estimated from."""

    acceptance: float | None
    tok_s: float
    se: float
    n: int


@dataclass(frozen=True)
class Fit:
    """tok/s = intercept + slope · acceptance length; ``cov`` the 2×2 covariance of (intercept, slope);
    ``coef(a)``: each point's weight in the fit's value at a (the value is their sum over the points' tok/s)."""

    intercept: float
    slope: float
    cov: np.ndarray
    scale: float  # the reduced chi-square the covariance was scaled by (1: none)
    xs: np.ndarray
    hat: np.ndarray  # 2×k: (intercept, slope) = hat @ tok_s

    def value(self, a: float) -> float:
        return self.intercept + self.slope * a

    def var(self, a: float) -> float:
        v = self.cov
        return float(v[0, 0] + 2 * a * v[0, 1] + a * a * v[1, 1])

    def coef(self, a: float) -> np.ndarray:
        return self.hat[0] + a * self.hat[1]


@dataclass(frozen=True)
class BreakEven:
    """The answer for one cell: a verdict, the break-even length and its interval (None where there is none),
    the measured range, and a one-line reason."""

    verdict: str
    length: float | None
    low: float | None  # the interval's ends where it is bounded (``pays above``/``pays below``)
    high: float | None
    lowest: float | None  # the measured range of acceptance lengths
    highest: float | None
    reason: str
    # Fieller's set as computed (None: too few points): bounded [low, high], or unbounded: the two rays outside
    # (set_low, set_high), or the whole line (nan, nan).
    set_low: float | None = None
    set_high: float | None = None
    bounded: bool = False

    def contains(self, a: float) -> bool:
        """``a`` lies in the confidence set (an unbounded set counts: it is the honest answer of a flat fit)."""
        if self.set_low is None:
            return False
        if self.bounded:
            return self.set_low <= a <= self.set_high
        return not math.isfinite(self.set_low) or a <= self.set_low or a >= self.set_high


@dataclass(frozen=True)
class Speedup:
    """Fitted speculative tok/s at ``at`` ÷ tok/s without speculation, with its interval."""

    at: float
    ratio: float
    low: float
    high: float
    inside: bool  # ``at`` lies in the measured range (else the line is extrapolated)


def fit_line(points: list[Point]) -> Fit:
    """Weighted least squares of tok/s on acceptance length (at least two distinct lengths)."""
    xs = np.array([p.acceptance for p in points], dtype=float)
    ys = np.array([p.tok_s for p in points], dtype=float)
    w = 1.0 / np.maximum(np.array([p.se for p in points], dtype=float), 1e-12) ** 2
    design = np.column_stack([np.ones_like(xs), xs])
    normal_inv = np.linalg.inv(design.T @ (design * w[:, None]))
    hat = normal_inv @ (design * w[:, None]).T
    beta = hat @ ys
    resid = ys - design @ beta
    dof = len(points) - 2
    scale = max(1.0, float(np.sum(w * resid ** 2)) / dof) if dof > 0 else 1.0
    return Fit(float(beta[0]), float(beta[1]), normal_inv * scale, scale, xs, hat)


def _quantile(fit: Fit, points: list[Point], base: Point, a: float, level: float) -> float:
    """Student's t at Welch–Satterthwaite degrees of freedom for d(a) = fit(a) − base."""
    parts = np.append((fit.coef(a) ** 2) * np.array([p.se for p in points]) ** 2 * fit.scale, base.se ** 2)
    ns = np.array([p.n for p in points] + [base.n], dtype=float)
    denominator = float(np.sum(parts ** 2 / np.maximum(ns - 1, 1)))
    df = float(np.sum(parts)) ** 2 / denominator if denominator > 0 else math.inf
    if fit.scale > 1:  # the scatter's own estimate has k - 2 degrees of freedom
        df = min(df, max(len(points) - 2, 1))
    return float(stats.t.ppf(0.5 + level / 2, max(df, 1.0)))


def confidence_set(fit: Fit, base: Point, q: float) -> tuple[float, float, bool]:
    """Fieller's set {a : d(a)² <= q² var(d(a))} as (low, high, bounded). Unbounded: the whole line or two rays
    outside (low, high); ``bounded`` False and low/high the rays' ends (nan for the whole line)."""
    d0, b1, v = fit.intercept - base.tok_s, fit.slope, fit.cov
    qq = q * q
    A = b1 * b1 - qq * v[1, 1]
    B = 2 * (d0 * b1 - qq * v[0, 1])
    C = d0 * d0 - qq * (v[0, 0] + base.se ** 2)
    disc = B * B - 4 * A * C
    if disc < 0:  # A < 0 here: the inequality holds everywhere
        return math.nan, math.nan, False
    r1, r2 = sorted(((-B - math.sqrt(disc)) / (2 * A), (-B + math.sqrt(disc)) / (2 * A))) if A != 0 else (math.nan, math.nan)
    return r1, r2, A > 0


def _usable(points: list[Point]) -> list[Point]:
    return [p for p in points if p.acceptance is not None and math.isfinite(p.tok_s) and p.se >= 0]


def find_break_even(points: list[Point], base: Point | None, level: float = LEVEL) -> BreakEven:
    """The break-even acceptance length of one cell (see the module docstring)."""
    pts = _usable(points)
    lengths = sorted({p.acceptance for p in pts})
    lowest, highest = (lengths[0], lengths[-1]) if lengths else (None, None)
    if base is None or len(lengths) < 2:
        why = ("no Valid, undisturbed variant without speculation" if base is None
               else "fewer than two speculative variants of different measured acceptance")
        return BreakEven(UNDETERMINED, None, None, None, lowest, highest, why)
    fit = fit_line(pts)
    d = lambda a: fit.value(a) - base.tok_s  # noqa: E731
    guess = -(fit.intercept - base.tok_s) / fit.slope if fit.slope != 0 else (lowest + highest) / 2
    q = _quantile(fit, pts, base, min(max(guess, lowest), highest), level)
    low, high, bounded = confidence_set(fit, base, q)
    found = dict(set_low=low, set_high=high, bounded=bounded)
    if bounded and (high < lowest or low > highest) or (not bounded and math.isfinite(low) and low < lowest and high > highest):
        above = d((lowest + highest) / 2) > 0
        return BreakEven(ALWAYS if above else NEVER, None, None, None, lowest, highest,
                         f"speculative tok/s {'above' if above else 'below'} the base over the measured range "
                         f"{lowest:.2f}-{highest:.2f}", **found)
    if not bounded:
        return BreakEven(UNDETERMINED, None, None, None, lowest, highest,
                         "tok/s does not change clearly enough with acceptance length over the measured range "
                         "to bound the break-even", **found)
    where = "" if lowest <= guess <= highest else " (outside the measured range: extrapolated)"
    return BreakEven(PAYS_ABOVE if fit.slope > 0 else PAYS_BELOW, guess, low, high, lowest, highest,
                     f"speculative tok/s meets the base at {guess:.2f}{where}", **found)


def speedup_at(points: list[Point], base: Point | None, at: float, level: float = LEVEL) -> Speedup | None:
    """The fitted speculative tok/s at acceptance length ``at`` ÷ the base's tok/s (delta method on the log)."""
    pts = _usable(points)
    if base is None or base.tok_s <= 0 or len({p.acceptance for p in pts}) < 2:
        return None
    fit = fit_line(pts)
    value = fit.value(at)
    if value <= 0:
        return None
    se_log = math.sqrt(fit.var(at) / value ** 2 + base.se ** 2 / base.tok_s ** 2)
    q = _quantile(fit, pts, base, at, level)
    ratio = value / base.tok_s
    xs = [p.acceptance for p in pts]
    return Speedup(at, ratio, ratio * math.exp(-q * se_log), ratio * math.exp(q * se_log), min(xs) <= at <= max(xs))
