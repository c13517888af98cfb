"""The statistics of a comparison, written out here (numpy only, no scipy).

- :func:`mann_whitney_u`: the rank-sum test, normal approximation with tie and continuity
  correction (for per-token and per-request samples: many values, skewed, ties possible).
- :func:`bootstrap_ratio`: a seeded percentile bootstrap of ``statistic(new) / statistic(base)``
  (for sub-window samples, whose statistic is a ratio of sums, not a rank).
- :func:`between_run_interval`: a t interval on log run-level figures, when a side holds
  several runs: the spread between runs, not inside one window, sets the noise.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class MannWhitney:
    """The rank-sum test of sample ``x`` against sample ``y``."""

    u: float  # pairs (x_i, y_j) with x_i > y_j, a tie counting 1/2
    z: float  # (U − nx·ny/2), moved 1/2 towards 0, ÷ its tie-corrected standard deviation
    p: float  # two-sided, from the normal approximation


def mann_whitney_u(x, y) -> MannWhitney:
    """Mann–Whitney U of ``x`` against ``y``: average ranks for ties, normal approximation, two-sided p.

    Var(U) = nx·ny/12 · ((n + 1) − Σ(t³ − t) / (n(n − 1))) over tie groups of size t; the
    continuity correction moves U − E[U] by 1/2 towards 0. With no spread at all
    (every value equal) there is nothing to test: z = 0, p = 1.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    nx, ny = x.size, y.size
    if nx == 0 or ny == 0:
        raise ValueError("both samples need at least one value")
    n = nx + ny
    _, inverse, counts = np.unique(np.concatenate([x, y]), return_inverse=True, return_counts=True)
    avg_rank = np.cumsum(counts) - (counts - 1) / 2  # a tie group shares the mean of its ranks
    u = float(avg_rank[inverse[:nx]].sum() - nx * (nx + 1) / 2)
    ties = float((counts.astype(float) ** 3 - counts).sum()) / (n * (n - 1)) if n > 1 else 0.0
    var = nx * ny / 12 * ((n + 1) - ties)
    if var <= 0:
        return MannWhitney(u, 0.0, 1.0)
    diff = u - nx * ny / 2
    z = math.copysign(max(abs(diff) - 0.5, 0.0), diff) / math.sqrt(var)
    return MannWhitney(u, z, min(1.0, math.erfc(abs(z) / math.sqrt(2))))


class Resampled(Protocol):
    """A sample whose statistic can be taken over many resamples at once."""

    n: int

    def statistic(self) -> float: ...

    def resampled(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` values of the statistic over resamples of size n drawn with replacement."""
        ...


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def excludes(self, value: float) -> bool:
        return value < self.low or value > self.high


def bootstrap_ratio(base: Resampled, new: Resampled, resamples: int = 2000, confidence: float = 0.95,
                    seed: int = 0) -> Interval:
    """Percentile interval of ``new.statistic / base.statistic`` over independent resamples of each side.

    Each of ``resamples`` rounds draws a resample of the baseline and one of the new sample
    (with replacement, each its own size); the interval holds the central ``confidence``
    share of the ratios. The generator is seeded, so the same files give the same interval.
    """
    rng = np.random.default_rng(seed)
    ratios = new.resampled(rng, resamples) / base.resampled(rng, resamples)
    tail = (1 - confidence) / 2
    low, high = np.quantile(ratios, [tail, 1 - tail])
    return Interval(float(low), float(high))


@dataclass(frozen=True)
class PooledRate:
    """Sub-window samples of a rate: ``amounts[i]`` over ``seconds[i]``; the statistic is Σ amounts ÷ Σ seconds."""

    amounts: np.ndarray
    seconds: np.ndarray

    @property
    def n(self) -> int:
        return int(self.amounts.size)

    def statistic(self) -> float:
        return float(self.amounts.sum() / self.seconds.sum())

    def resampled(self, rng: np.random.Generator, count: int) -> np.ndarray:
        out = np.empty(count)
        chunk = max(1, 4_000_000 // max(self.n, 1))  # bounds memory: at most ~4M drawn indices at once
        for start in range(0, count, chunk):
            idx = rng.integers(0, self.n, size=(min(chunk, count - start), self.n))
            out[start : start + idx.shape[0]] = self.amounts[idx].sum(axis=1) / self.seconds[idx].sum(axis=1)
        return out


@dataclass(frozen=True)
class Median:
    """Values whose statistic is their median (``np.median``: the mean of the middle two for even n)."""

    values: np.ndarray  # sorted ascending

    @classmethod
    def of(cls, values) -> "Median":
        return cls(np.sort(np.asarray(values, dtype=float)))

    @property
    def n(self) -> int:
        return int(self.values.size)

    def statistic(self) -> float:
        return float(np.median(self.values))

    def resampled(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """Medians of resamples, drawn exactly through order statistics instead of n draws each.

        A resample draws indices ceil(n·U) from n uniforms U; ceil is monotone, so its k-th
        smallest index is ceil(n·U₍ₖ₎), and U₍ₖ₎ ~ Beta(k, n + 1 − k). For even n the next
        order statistic is U₍ₖ₎ + (1 − U₍ₖ₎)·Beta(1, n − k) (the least of the n − k uniforms
        above it). The cost is O(count), whatever n is (per-token samples run to 10⁵).
        """
        n, k = self.n, (self.n + 1) // 2
        u_k = rng.beta(k, n + 1 - k, size=count)
        lower = self.values[_index(u_k, n)]
        if n % 2:
            return lower
        u_next = u_k + (1 - u_k) * rng.beta(1, n - k, size=count)
        return (lower + self.values[_index(u_next, n)]) / 2


def _index(u: np.ndarray, n: int) -> np.ndarray:
    """0-based index ceil(n·u) − 1, kept inside 0..n−1 (u = 0 has probability 0 but floats may round)."""
    return np.clip(np.ceil(u * n).astype(np.int64) - 1, 0, n - 1)


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with ``df`` degrees of freedom (p in (0.5, 1)).

    Its CDF is ½ + ∫₀ᵗ f, with f the t density; the integral is Simpson's rule on 4,000
    intervals and the quantile a bisection on it (the result is good to about 1e-6).
    """
    if not 0.5 < p < 1 or df <= 0:
        raise ValueError(f"need 0.5 < p < 1 and df > 0, got p={p!r}, df={df!r}")
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)

    def cdf(t: float) -> float:
        x = np.linspace(0.0, t, 4001)
        f = np.exp(log_c - (df + 1) / 2 * np.log1p(x * x / df))
        return 0.5 + (x[1] - x[0]) / 3 * (f[0] + f[-1] + 4 * f[1:-1:2].sum() + 2 * f[2:-1:2].sum())

    low, high = 0.0, 1.0
    while cdf(high) < p:
        low, high = high, high * 2
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if cdf(mid) < p else (low, mid)
    return (low + high) / 2


def geometric_mean(values) -> float:
    """exp of the mean of the logs (every value must be above 0)."""
    return float(np.exp(np.mean(np.log(np.asarray(values, dtype=float)))))


@dataclass(frozen=True)
class BetweenRuns:
    """The ratio of geometric means of run-level figures, with its t interval."""

    ratio: float
    interval: Interval
    df: int


def between_run_interval(base, new, confidence: float = 0.95) -> BetweenRuns | None:
    """Ratio and interval from the spread of one figure between runs (None: no side has two runs).

    On logs: d = mean(log new) − mean(log base); the variance s² is pooled over both sides'
    runs (df = runs − 2, a side of one run adds none), SE = s·√(1/R_base + 1/R_new), and
    the interval is exp(d ± t·SE) with t the (1 + confidence)/2 quantile of Student's t.
    With one new run this is the prediction interval of a new run from the baseline's runs.
    """
    lb, ln = np.log(np.asarray(base, dtype=float)), np.log(np.asarray(new, dtype=float))
    df = lb.size + ln.size - 2
    if df < 1 or lb.size == 0 or ln.size == 0:
        return None
    ss = float(((lb - lb.mean()) ** 2).sum() + ((ln - ln.mean()) ** 2).sum())
    se = math.sqrt(ss / df) * math.sqrt(1 / lb.size + 1 / ln.size)
    d = float(ln.mean() - lb.mean())
    half = t_quantile((1 + confidence) / 2, df) * se
    return BetweenRuns(math.exp(d), Interval(math.exp(d - half), math.exp(d + half)), df)
