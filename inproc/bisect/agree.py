"""The oracle's check of its own reference: do a revision's runs agree with one another and with the spread in use?

A bisect's calls rest on the good revision's level and on the run-to-run spread σ (of one
child's log Total tok/s). On a machine whose load comes and goes, one child of the same
build runs 5x slower than the next; a reference taken from such runs calls the wrong
commit with confidence. So before any call, and at every look after:

- :func:`off_level` — **the check**, one test at the alarm rate :data:`AGREE_ALPHA`: each run
  of a revision against the median of its other runs. A run beyond the band is off its
  revision's level (the machine moved during it) and no call uses it; a pair whose good run
  is off the good level is a pair, not a verdict on the candidate.
- :func:`in_use` — the spread the calls use. Given by a source (history's, the baseline's,
  a stated ``--run-spread``), it is held against the spread the runs themselves show (a χ²
  test of their variance at :data:`AGREE_ALPHA`); when the runs show more, the bisect switches
  to theirs and says so. Without a source it is learned from the runs, from a robust start
  (:func:`robust_start`) so that one run slowed 5x cannot hide the others' agreement.
- :func:`two_clusters` — a machine whose load comes and goes in long spells puts a
  revision's runs in two clusters, several times apart, each a large share of the runs.
  No level and no spread describes them (the median and the robust start stand in one
  cluster or between), and a candidate measured in the slow spell looks bad: the bisect
  then ends "insufficient data" and names them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from inproc.compare.spread import RESOLUTION

#: The chance that the runs of one build, their logs normal with the spread in use, are said to disagree:
#: one run called off its level (:func:`off_level`), or their variance called larger than the spread's.
AGREE_ALPHA = 0.01
#: The share of pairwise differences the robust start reads: their lower quartile, so that up to half the runs
#: may be off their level (a quarter of the pairs are then still of two runs on it).
START_QUANTILE = 0.25
#: The normal quantile of (1 + START_QUANTILE)/2: that quantile of |X| for a standard normal X.
START_Z = 0.31863936396437514
#: Two clusters are at least this factor apart (their nearest runs): a machine's load, not a run's spread, which on
#: this project's machines is at most 17 % (docs/statistics.md); a clean build's runs are never this far apart.
CLUSTER_FACTOR = 1.5
#: ... and each holds at least this share of the runs, and :data:`CLUSTER_RUNS` runs: fewer slow runs are off their
#: revision's level (:func:`off_level`), and the median and the robust start stay in the larger cluster; two runs
#: of four in one slow stretch are a stretch, which more pairs outlast.
CLUSTER_SHARE = 1 / 3
CLUSTER_RUNS = 3


@dataclass(frozen=True)
class SpreadInUse:
    """σ of one run's log tok/s as the calls use it: its degrees of freedom (∞: given), its source in words."""

    sigma: float
    df: float
    source: str
    switched: bool = False  # the runs disagreed with the given spread: theirs is used


def off_level(logs: Sequence[float], sigma: float, alpha: float = AGREE_ALPHA) -> list[bool]:
    """Which runs lie off their revision's level: |x_i − median of all n| > z·σ·√(1 + π/(2m)) (two: |x_1 − x_2|).

    x are the n runs' log tok/s, m = n − 1 the others, z the normal quantile of 1 − α/(2n).
    If the runs are one build's, normal with spread σ, x_i − median(others) has a standard
    deviation of at most σ·√(1 + π/(2m)) (the median of m has variance πσ²/(2m) or less; the
    mean of one or two, σ²/m), and the median of all n lies between x_i and the median of
    the others, so |x_i − median(all)| is the smaller: each run is flagged with chance at
    most α/n and any run of the n with chance at most α (Bonferroni). The median of all
    stays on the level while up to half the runs are off it (a slow stretch). One run alone
    has no level to be off.
    """
    x = np.asarray(logs, dtype=float)
    n = x.size
    if n < 2:
        return [False] * n
    # Two runs: each against the other (the median of both would halve their difference).
    dev = np.full(2, abs(x[0] - x[1])) if n == 2 else np.abs(x - np.median(x))
    return [bool(v) for v in dev > band(n, n - 1, sigma, alpha)]


def band(n: int, m: int, sigma: float, alpha: float = AGREE_ALPHA) -> float:
    """How far (in log tok/s) any of n runs may lie from a level taken from m runs: z_{1−α/(2n)}·σ·√(1 + π/(2m))."""
    from scipy.special import ndtri

    return float(ndtri(1 - alpha / (2 * n))) * max(sigma, RESOLUTION) * math.sqrt(1 + math.pi / (2 * max(m, 1)))


def off_from(logs: Sequence[float], level: float, m: int, sigma: float, alpha: float = AGREE_ALPHA) -> bool:
    """Whether any of these runs lies off a level taken from m other runs (the band of :func:`band`)."""
    return bool(np.any(np.abs(np.asarray(logs, dtype=float) - level) > band(len(logs), m, sigma, alpha)))


def robust_start(groups: Sequence[Sequence[float]]) -> float | None:
    """σ from the lower quartile of |x_i − x_j| over pairs of runs of one revision (÷ √2·z₅/₈); None: no pair.

    For two runs of one level x_i − x_j is normal with sd √2·σ, so that quartile is
    √2·σ·z₅/₈. Up to half a revision's runs may be off its level (a stretch of slow
    runs) without moving it, where the residual variance would be led by those runs.
    """
    diffs = [abs(a - b) for g in groups for k, a in enumerate(g) for b in g[k + 1:]]
    if not diffs:
        return None
    return max(float(np.quantile(diffs, START_QUANTILE)) / (math.sqrt(2) * START_Z), RESOLUTION)


def _kept_ss(groups: Sequence[Sequence[float]], flags: Sequence[Sequence[bool]]) -> tuple[float, int]:
    """The residual sum of squares of the runs not flagged, about their revision's mean, and its df."""
    ss, df = 0.0, 0
    for g, f in zip(groups, flags):
        kept = np.asarray([x for x, off in zip(g, f) if not off], dtype=float)
        if kept.size > 1:
            ss += float(((kept - kept.mean()) ** 2).sum())
            df += kept.size - 1
    return ss, df


def in_use(groups: Sequence[Sequence[float]], given: SpreadInUse | None,
           alpha: float = AGREE_ALPHA) -> tuple[SpreadInUse | None, list[list[bool]]]:
    """(the spread the calls use, each run's off-level flag per group): ``groups`` are each revision's log tok/s.

    The spread the runs show is learned (:func:`shown`). Given a spread, the runs the
    learning kept are tested against it (SS/σ² beyond the χ² quantile of 1 − α on their
    df): when the test alarms, the runs' spread and its flags replace it; else the given
    spread is used, and the runs are flagged against it.
    """
    learned, learned_flags = shown(groups, alpha)
    if given is None:
        return learned, learned_flags
    if learned is not None:
        ss, df = learned.sigma ** 2 * learned.df, int(learned.df)
        if ss / given.sigma ** 2 > _chi2_upper(alpha, df):
            return SpreadInUse(learned.sigma, df, f"the runs show {learned.sigma * 100:.1f} % on {df} degrees of "
                               f"freedom, more than {given.source} ({given.sigma * 100:.1f} %): the runs' spread is used",
                               True), learned_flags
    return given, [off_level(g, given.sigma, alpha) for g in groups]


def shown(groups: Sequence[Sequence[float]], alpha: float = AGREE_ALPHA) -> tuple[SpreadInUse | None, list[list[bool]]]:
    """The spread the runs show, and their flags: flagged against the robust start, then σ² = SS/df of the runs left
    (None until they give it on a degree of freedom)."""
    start = robust_start(groups)
    if start is None:
        return None, [[False] * len(g) for g in groups]
    flags = [off_level(g, start, alpha) for g in groups]
    ss, df = _kept_ss(groups, flags)
    if df == 0:
        return None, flags
    sigma = max(math.sqrt(ss / df), RESOLUTION)
    return SpreadInUse(sigma, df, f"learned from the bisect's runs, {sigma * 100:.1f} % on {df} degrees of freedom"), flags


def two_clusters(logs: Sequence[float], alpha: float = AGREE_ALPHA) -> tuple[list[float], list[float]] | None:
    """The runs split in two clusters (lower, upper; logs), or None.

    A split of the sorted runs that leaves each side :data:`CLUSTER_SHARE` of them and
    :data:`CLUSTER_RUNS` runs is two clusters when the nearest runs across it lie more than
    :data:`CLUSTER_FACTOR` apart and beyond the band (:func:`band`) of the upper side's own
    spread: the machine's quiet runs show its run-to-run spread; a load's slow runs are as
    varied as the load, and their spread says nothing of the gap. The first such split is
    returned.
    """
    x = np.sort(np.asarray(logs, dtype=float))
    n = x.size
    least = max(CLUSTER_RUNS, math.ceil(CLUSTER_SHARE * n))
    for k in range(least, n - least + 1):
        high, gap = x[k:], float(x[k] - x[k - 1])
        if gap > math.log(CLUSTER_FACTOR) and gap > band(n, high.size, float(high.std(ddof=1)), alpha):
            return [float(v) for v in x[:k]], [float(v) for v in high]
    return None


def clusters_text(logs: Sequence[float], what: str) -> str:
    """"the good revision's runs fall in two clusters (9.4–23.0 and 67.0–116.0 tok/s)", or "" when they do not."""
    found = two_clusters(logs)
    if found is None:
        return ""
    (lo, hi) = (np.exp(found[0]), np.exp(found[1]))
    return (f"{what} runs fall in two clusters ({lo.min():.1f}–{lo.max():.1f} and {hi.min():.1f}–{hi.max():.1f} "
            f"tok/s)")


def _chi2_upper(alpha: float, df: int) -> float:
    """The χ² quantile of 1 − α on ``df`` degrees of freedom."""
    from scipy.special import chdtri

    return float(chdtri(df, alpha))
