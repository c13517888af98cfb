"""The statistics of a comparison: a block bootstrap inside a run, the spread between runs.

The units are independent-enough pieces of a run, never single tokens: the per-token gaps
of one step share that step (C of them move together), and neighbouring steps share the
scheduler's state, so a test that counts C × steps gaps as independent is far too sure of
itself (pairs of single runs of one build were called different in 33-88 % of cells).

- :func:`block_counts` and the samples :class:`PooledRate` and :class:`PooledMedian`: a
  circular block bootstrap (Politis & Romano, 1992) over a run's units, in their order,
  so the dependence between neighbouring units is kept inside each block.
- :func:`bootstrap_ratio`: the seeded percentile interval of ``statistic(new) / statistic(base)``.
- :func:`between_run_interval`: a t interval on log run-level figures, when a side holds
  several runs: the spread between runs, not inside one window, sets the noise.
- :func:`widen`: a within-run interval widened by a stated run-to-run spread (one run
  against one run: the record itself cannot show how much a whole run varies).

scipy.special is imported inside the functions that need a quantile (Student's t, the normal), never at
import time; scipy.stats itself would take a second to import and computes the same.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from inproc.compare import wmedian as wm


def block_length(n_units: int) -> int:
    """The bootstrap's block length for ``n_units`` units in a row: round(n^(1/3)), at least 1.

    Hall, Horowitz & Jing (1995, Biometrika 82:561) show the block length that is best for
    estimating a variance grows as n^(1/3); the constant 1 is their rule of thumb. Units are
    sub-windows of tens of steps, so their dependence is mostly on the next one (the steps
    at a boundary): blocks of 2 (10 units) to 4 (60 units) hold it.
    """
    return max(1, round(n_units ** (1 / 3)))


def block_counts(rng: np.random.Generator, n_units: int, block: int, count: int) -> np.ndarray:
    """``count`` circular block resamples of ``n_units`` units: how often each unit was drawn (count × n_units).

    One resample draws ceil(n / block) starts uniformly in 0..n−1, takes ``block`` units
    from each (wrapping past the last to the first) and keeps the first n.
    """
    blocks = -(-n_units // block)
    starts = rng.integers(0, n_units, size=(count, blocks, 1))
    idx = ((starts + np.arange(block)) % n_units).reshape(count, blocks * block)[:, :n_units]
    flat = idx + (np.arange(count) * n_units)[:, None]
    return np.bincount(flat.ravel(), minlength=count * n_units).reshape(count, n_units)


class Resampled(Protocol):
    """A sample of a run's units whose statistic can be taken over many block resamples at once."""

    n: int  # units

    def statistic(self) -> float: ...

    def resampled(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` values of the statistic over block resamples of the units."""
        ...


#: Block resamples are drawn this many values (units × resamples, or values × resamples) at a time: bounds memory.
CHUNK_VALUES = 4_000_000


def _chunks(count: int, width: int):
    step = max(1, CHUNK_VALUES // max(width, 1))
    for start in range(0, count, step):
        yield min(step, count - start)


@dataclass(frozen=True)
class PooledRate:
    """Units of a rate: ``amounts[i]`` over ``seconds[i]``; the statistic is Σ amounts ÷ Σ seconds."""

    amounts: np.ndarray
    seconds: np.ndarray

    @property
    def n(self) -> int:
        return int(self.amounts.size)

    def statistic(self) -> float:
        return float(self.amounts.sum() / self.seconds.sum())

    def resampled(self, rng: np.random.Generator, count: int) -> np.ndarray:
        parts = []
        for size in _chunks(count, self.n):
            c = block_counts(rng, self.n, block_length(self.n), size)
            parts.append((c @ self.amounts) / (c @ self.seconds))
        return np.concatenate(parts)


@dataclass(frozen=True)
class PooledMedian:
    """Values grouped in units (``unit_of[i]`` is value i's unit, 0..n−1); the statistic is the median of all values.

    ``counts[i]`` says how many times value i is in its unit (None: once), so a unit's many
    equal values (a decode step's gap, one per request it served) are kept once. A
    resample repeats each unit's values as often as the unit was drawn; its median is
    ``np.median`` of that pooled resample exactly (the mean of the middle two for an even
    count; ``inproc.compare.wmedian``), never expanded.
    """

    values: np.ndarray  # sorted ascending
    unit_of: np.ndarray  # same order as values
    n_units: int
    counts: np.ndarray | None = None  # same order as values; None: each value once

    @classmethod
    def of(cls, units: list[np.ndarray]) -> "PooledMedian":
        """From each unit's values, in the units' order (a unit may be empty)."""
        values = np.concatenate([np.asarray(u, dtype=float) for u in units]) if units else np.empty(0)
        unit_of = np.repeat(np.arange(len(units)), [len(u) for u in units])
        order = np.argsort(values, kind="stable")
        return cls(values[order], unit_of[order], len(units))

    @classmethod
    def of_counts(cls, values: np.ndarray, counts: np.ndarray, unit_of: np.ndarray, n_units: int) -> "PooledMedian":
        """From values with their counts and units, in any order (a compact cell's gaps)."""
        order = np.argsort(values, kind="stable")
        return cls(np.asarray(values, dtype=float)[order], np.asarray(unit_of, dtype=np.int64)[order], n_units,
                   np.asarray(counts, dtype=np.int64)[order])

    @property
    def n(self) -> int:
        return self.n_units

    @property
    def weights(self) -> np.ndarray:
        """How many times each value is in the pool."""
        return np.ones(self.values.size, dtype=np.int64) if self.counts is None else self.counts

    def statistic(self) -> float:
        return wm.median_of_counts(self.values, self.weights)

    def resampled(self, rng: np.random.Generator, count: int) -> np.ndarray:
        block = block_length(self.n_units)
        table = self._rank_table()
        if table is None:  # weigh every value in every resample
            parts = []
            for size in _chunks(count, self.values.size):
                drawn = block_counts(rng, self.n_units, block, size)[:, self.unit_of]
                drawn = drawn if self.counts is None else drawn * self.counts
                parts.append(_weighted_median(self.values, np.cumsum(drawn, axis=1)))
            return np.concatenate(parts)
        distinct, ranks = table
        return np.concatenate([wm.resampled_medians(distinct, ranks, block_counts(rng, self.n_units, block, size))
                               for size in _chunks(count, self.n_units * 2)])

    def _rank_table(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``wmedian.rank_table`` of the pool, or None where weighing every value is cheaper or the table too big.

        Per resample the table's bisection costs about 2 × units × log2(distinct values)
        steps, weighing every value a few steps per value: the table wins for many values in
        few units (a window's gaps), not for one value per unit (TTFT's requests).
        """
        distinct = 1 + int(np.count_nonzero(np.diff(self.values)))
        bisection = 2 * self.n_units * max(1, (distinct - 1).bit_length())
        if self.values.size == 0 or distinct * self.n_units > RANK_TABLE_CELLS or bisection > 3 * self.values.size:
            return None
        return wm.rank_table(self.values, self.unit_of, self.weights, self.n_units)


#: The largest rank table (units × distinct values, 8 bytes a cell) a median's resampling builds.
RANK_TABLE_CELLS = 2_000_000


def _weighted_median(values: np.ndarray, cum: np.ndarray) -> np.ndarray:
    """Per row: the median of ``values`` repeated by weights whose running sums are ``cum`` (rows; may be changed)."""
    total = cum[:, -1].copy()
    low_rank, high_rank = (total + 1) // 2, total // 2 + 1  # 1-based ranks of the middle value(s)
    # Each row lifted above the one before, so one search over the whole table finds every row's ranks.
    lift = np.arange(cum.shape[0], dtype=np.int64) * (int(total.max(initial=0)) + 1)
    cum += lift[:, None]
    start = np.arange(cum.shape[0]) * cum.shape[1]
    at = np.searchsorted(cum.ravel(), np.concatenate([low_rank, high_rank]) + np.tile(lift, 2)) - np.tile(start, 2)
    at = np.minimum(at, cum.shape[1] - 1)  # past the row: nothing drawn (no median)
    low, high = values[at[: total.size]], values[at[total.size:]]
    out = np.where(total % 2 == 1, low, (low + high) / 2)
    return np.where(total > 0, out, np.nan)  # a resample of empty units only: no median


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def excludes(self, value: float) -> bool:
        return value < self.low or value > self.high


def bootstrap_ratio(base: Resampled, new: Resampled, resamples: int = 2000, confidence: float = 0.95,
                    seed: int = 0) -> Interval:
    """Percentile interval of ``new.statistic / base.statistic`` over independent block resamples of each side.

    Each of ``resamples`` rounds draws a block resample of the baseline's units and one of
    the new run's; the interval holds the central ``confidence`` share of the ratios. The
    generator is seeded, so the same files give the same interval.
    """
    rng = np.random.default_rng(seed)
    ratios = new.resampled(rng, resamples) / base.resampled(rng, resamples)
    tail = (1 - confidence) / 2
    low, high = np.nanquantile(ratios, [tail, 1 - tail])
    return Interval(float(low), float(high))


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with ``df`` degrees of freedom (``scipy.stats.t.ppf`` calls the same function;
    df = ∞ gives the normal quantile)."""
    from scipy.special import stdtrit

    return float(stdtrit(df, p))


@dataclass(frozen=True)
class RunSpread:
    """How much one whole run's figure varies from run to run: a standard deviation of its log, with its source.

    A stated default is an upper confidence bound of a measured spread (its own uncertainty
    is in it), so :func:`widen` reads it with the normal quantile.
    """

    log_sd: float
    df: int  # degrees of freedom of the measurement it was bounded from (information only)
    source: str


def widen(ratio: float, within: Interval, spread: RunSpread, confidence: float = 0.95) -> Interval:
    """The interval of one run against one run: the within-run interval's log half-widths and the run spread added in quadrature.

    A difference of two single runs has log standard deviation √2·σ; its half-width is
    z·√2·σ at ``confidence`` (z the normal quantile). Each side of the within-run interval
    (which may be lopsided) is combined with it as √(h_within² + h_runs²) around log ratio.
    """
    from scipy.special import ndtri  # the normal quantile (what scipy.stats.norm.ppf calls)

    h_runs = float(ndtri((1 + confidence) / 2)) * math.sqrt(2) * spread.log_sd
    centre = math.log(ratio)
    below = math.hypot(centre - math.log(within.low), h_runs)
    above = math.hypot(math.log(within.high) - centre, h_runs)
    return Interval(math.exp(centre - below), math.exp(centre + above))


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
