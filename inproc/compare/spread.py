"""The run-to-run spread learned from the runs themselves, and one alarm rate per night.

Every judged row (a cell and a metric) compares the log of its figure on the new side
with its mean on the baseline side (a baseline's runs, or a history's nights of the
current level). Three pieces, pure functions of numbers:

- :func:`moderated_spreads` — each row's run-to-run spread, its own residual variance
  shrunk towards the common variance of the metric's rows by empirical Bayes (Smyth 2004,
  *Stat. Appl. Genet. Mol. Biol.* 3:3, "limma"): the prior's weight ``d0`` is estimated
  from how much the rows' variances differ beyond what their own degrees of freedom
  explain. Rows whose variances agree are pooled fully (``d0`` = ∞, capped at the pooled
  degrees of freedom); a row that is really noisier keeps most of its own. This is the
  only spread a verdict uses: nothing measured on another machine.
- :func:`change_test` — the ratio, its t interval, the p-value of "no change", and the
  change's bound at the threshold confidence: how far the change goes at least, with
  that confidence.
- :func:`night_alarms` — the Benjamini–Hochberg step-up over every row judged at once
  (one night, one comparison): when nothing changed, the chance that any row is called is
  at most ``alpha`` (Simes 1986; it holds for the positively dependent rows of one night,
  Benjamini & Yekutieli 2001), and the more rows a regression moves, the easier each is to
  call.

A row is called slower (faster) when it is among the night's alarms **and** the change's
bound at the threshold confidence lies beyond the threshold: "beyond 5 %" is said of the
change itself, with its confidence, never of the point estimate alone.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from inproc.compare.stats import t_quantile

#: The chance that a night (or a comparison) with no change raises any alarm.
NIGHT_ALPHA = 0.05
#: The confidence with which a called change must lie beyond the threshold.
THRESHOLD_CONFIDENCE = 0.80
#: A spread must rest on at least this many degrees of freedom for a row to be judged.
MIN_SPREAD_DF = 3
#: The finest spread (log standard deviation, 0.1 %): figures that repeat exactly (rounded, or a constant)
#: would otherwise give no spread, or make any change infinitely sure.
RESOLUTION = 0.001


@dataclass(frozen=True)
class Spread:
    """The run-to-run standard deviation of a row's log figure, its degrees of freedom, and where it came from."""

    log_sd: float
    df: float  # math.inf: known (a stated --run-spread)
    source: str


@dataclass(frozen=True)
class ChangeTest:
    """New against baseline on one row, on logs: the change, its spread, and what can be said of it."""

    log_ratio: float  # mean log new − mean log baseline
    se: float  # standard error of log_ratio
    df: float
    p_change: float  # two-sided p-value of "no change"
    confidence: float  # of the interval

    @property
    def ratio(self) -> float:
        return math.exp(self.log_ratio)

    def interval(self) -> tuple[float, float]:
        """The ratio's two-sided interval at ``confidence``."""
        h = t_quantile((1 + self.confidence) / 2, self.df) * self.se
        return math.exp(self.log_ratio - h), math.exp(self.log_ratio + h)

    def at_least(self, confidence: float) -> float:
        """The size of the change (as a factor ≥ 1, in its own direction) that is exceeded with ``confidence``.

        1.0 when the one-sided bound reaches back to no change.
        """
        bound = abs(self.log_ratio) - t_quantile(confidence, self.df) * self.se
        return math.exp(max(bound, 0.0))


def t_sf(x: float, df: float) -> float:
    """P(T > x) for Student's t with ``df`` degrees of freedom (the normal one at df = ∞, which stdtr gives)."""
    from scipy.special import stdtr

    return float(stdtr(df, -x))


def change_test(base_logs: Sequence[float], new_logs: Sequence[float], spread: Spread,
                confidence: float = 0.95) -> ChangeTest:
    """Mean log new − mean log baseline, with the spread's standard error √(1/n_base + 1/n_new)·σ."""
    b, n = np.asarray(base_logs, dtype=float), np.asarray(new_logs, dtype=float)
    d = float(n.mean() - b.mean())
    se = spread.log_sd * math.sqrt(1 / b.size + 1 / n.size)
    p = 2 * t_sf(abs(d) / se, spread.df) if se > 0 else (0.0 if d else 1.0)
    return ChangeTest(d, se, spread.df, min(p, 1.0), confidence)


def residual_ss(groups: Sequence[Sequence[float]]) -> tuple[float, int]:
    """(Σ squared deviations from each group's mean, degrees of freedom): the within-group variance's parts."""
    ss, df = 0.0, 0
    for g in groups:
        a = np.asarray(g, dtype=float)
        if a.size > 1:
            ss += float(((a - a.mean()) ** 2).sum())
            df += a.size - 1
    return ss, df


def _trigamma_inverse(x: float) -> float:
    """y with trigamma(y) = x, by Newton's method from Smyth's starting point (x > 0)."""
    from scipy.special import polygamma

    y = 0.5 + 1 / x
    for _ in range(50):
        tri = float(polygamma(1, y))
        step = tri * (1 - tri / x) / float(polygamma(2, y))
        y += step
        if -step / y < 1e-8:
            break
    return y


def prior(ss: np.ndarray, df: np.ndarray) -> tuple[float, float]:
    """(s0², d0): the rows' common variance and its weight, from rows with df > 0 (Smyth 2004, section 6.2)."""
    from scipy.special import digamma, polygamma

    keep = (df > 0) & (ss > 0)
    s2, d = ss[keep] / df[keep], df[keep]
    if s2.size == 0:
        return math.nan, 0.0
    if s2.size == 1:
        return float(s2[0]), 0.0  # one row: nothing to pool with
    e = np.log(s2) - digamma(d / 2) + np.log(d / 2)
    e_mean = float(e.mean())
    excess = float(((e - e_mean) ** 2).sum() / (e.size - 1) - polygamma(1, d / 2).mean())
    if excess <= 0:
        return math.exp(e_mean), math.inf  # the rows agree: one common variance
    d0 = 2 * _trigamma_inverse(excess)
    return math.exp(e_mean + float(digamma(d0 / 2)) - math.log(d0 / 2)), d0


def _too_noisy(ss: np.ndarray, df: np.ndarray, s0: float, d0: float) -> np.ndarray:
    """Rows whose own variance lies beyond the 99th percentile that the common one allows (an F test)."""
    from scipy.special import fdtri

    out = np.zeros(ss.size, dtype=bool)
    keep = df > 0
    limit = fdtri(df[keep], d0 if math.isfinite(d0) and d0 > 0 else 1e6, 0.99)
    out[keep] = ss[keep] / df[keep] > s0 * limit
    return out


def moderated_spreads(ss: Sequence[float], df: Sequence[int], what: str) -> list[Spread | None]:
    """Each row's spread: (d0·s0² + d·s²) / (d0 + d) with d0 + d degrees of freedom (None: nothing to learn from).

    The degrees of freedom never exceed those of every row pooled: d0 = ∞ means the rows'
    variances agree, not that the common one is known exactly. A row whose own variance is
    beyond what the common one allows (``_too_noisy``) keeps its own, and the common one is
    learned without it: a really noisier cell is never made to look quiet by the others.
    ``what`` names the source ("the nights' levels", "5 baseline runs").
    """
    ss_a, df_a = np.asarray(ss, dtype=float), np.asarray(df, dtype=float)
    s0, d0 = prior(ss_a, df_a)
    own = _too_noisy(ss_a, df_a, s0, d0) if not math.isnan(s0) and d0 > 0 else np.zeros(ss_a.size, dtype=bool)
    if own.any():
        s0, d0 = prior(np.where(own, 0.0, ss_a), np.where(own, 0.0, df_a))
    pooled_df = float(df_a[~own].sum())
    rows = int(((df_a > 0) & ~own).sum())
    out: list[Spread | None] = []
    for s, d, alone in zip(ss_a, df_a, own):
        if d == 0 and (math.isnan(s0) or alone or d0 == 0):  # no df of its own, none from a prior: no spread
            out.append(None)
            continue
        if alone or d0 == 0 or math.isnan(s0):
            var, dof, how = s / d, d, "its own" + (", noisier than the other rows" if alone else "")
        elif math.isinf(d0):
            var, dof, how = s0, pooled_df, f"pooled over {rows} rows"
        else:
            var, dof, how = (d0 * s0 + s) / (d0 + d), min(d0 + d, pooled_df), f"moderated over {rows} rows"
        sd = max(math.sqrt(max(var, 0.0)), RESOLUTION)
        out.append(Spread(sd, float(dof), f"{what}, {how} (df {dof:.0f})"))  # dof > 0: d, or a prior's rows' (d0 > 0)
    return out


def night_alarms(p_values: Sequence[float], alpha: float = NIGHT_ALPHA) -> np.ndarray:
    """Which rows the Benjamini–Hochberg step-up rejects at ``alpha`` (a bool per p-value, in order)."""
    p = np.asarray(p_values, dtype=float)
    m = p.size
    if m == 0:
        return np.zeros(0, dtype=bool)
    order = np.argsort(p, kind="stable")
    passed = np.nonzero(p[order] <= alpha * np.arange(1, m + 1) / m)[0]
    out = np.zeros(m, dtype=bool)
    if passed.size:
        out[order[: passed.max() + 1]] = True
    return out


def adjusted(p_values: Sequence[float]) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values: row i is an alarm at alpha exactly when adjusted[i] ≤ alpha."""
    p = np.asarray(p_values, dtype=float)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    scaled = p[order] * m / np.arange(1, m + 1)
    mono = np.minimum.accumulate(scaled[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(mono, 1.0)
    return out
