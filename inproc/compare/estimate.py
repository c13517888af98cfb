"""One metric of one cell, baseline against new: the ratio, its interval, and the test behind it.

Which test, by what the sides hold:

- **several runs on a side** (a baseline of runs, or a history's level of nights): the
  runs' log figures; the spread between runs is each row's own, moderated across the
  comparison's rows of the metric (:func:`inproc.compare.spread.moderated_spreads`), so
  it is learned on the machine that made the runs. The change is a t test on logs
  (``samples.BETWEEN_RUNS``), judged with every other row of the comparison under one
  alarm rate (``inproc.compare.verdicts``).
- **one run on each side**: one run cannot show how much a whole run varies. The
  within-run interval (a seeded circular block bootstrap over each run's units,
  ``samples.BLOCK_BOOTSTRAP``) is shown, labelled, and the row is "insufficient data",
  unless the user states the run-to-run spread (``--run-spread``): then the within-run
  interval is widened by it (:func:`inproc.compare.stats.widen`) and the change is tested
  against the widened standard error, as known (df = ∞). Without one, the spread the change
  would need to be noise is held against a plausible maximum (``--max-spread``,
  :mod:`inproc.compare.bound`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

from inproc.compare.bound import MAX_SPREAD
from inproc.compare.samples import BETWEEN_RUNS, BLOCK_BOOTSTRAP, METRICS, SubWindowing, sample
from inproc.compare.spread import THRESHOLD_CONFIDENCE, ChangeTest, Spread, t_quantile, t_sf
from inproc.compare.stats import Interval, RunSpread, bootstrap_ratio, widen
from inproc.record.schema import DecodeEntry

#: A within-run test needs this many units on each side.
MIN_SAMPLES = 3


@dataclass(frozen=True)
class Estimate:
    """New against baseline for one metric of one cell."""

    ratio: float  # new figure ÷ baseline figure (tok/s: above 1 is faster; times: above 1 is slower)
    interval: Interval  # of the ratio, at the comparison's confidence
    test: str  # samples.BLOCK_BOOTSTRAP or BETWEEN_RUNS
    significant: bool  # an alarm under the comparison's one alarm rate
    n_base: int  # units (one run each side) or runs (between runs)
    n_new: int
    base_figure: float | None = None  # in the metric's display unit; a baseline of runs: their geometric mean
    new_figure: float | None = None
    within: Interval | None = None  # one run each: the block bootstrap's interval alone
    run_spread: float | None = None  # the log standard deviation of one run that the test used
    spread_source: str = ""  # where that spread came from
    p_change: float | None = None  # two-sided p-value of "no change" (before the night's adjustment)
    at_least: float | None = None  # the change's size exceeded with the threshold confidence (a factor ≥ 1)
    needed_spread: float | None = None  # one run each, no stated spread: the run spread the change needs to be noise

    @property
    def indicative(self) -> bool:
        """One run against one run: the spread between runs is stated by the user, not measured on these runs."""
        return self.test == BLOCK_BOOTSTRAP


@dataclass(frozen=True)
class StatSettings:
    """How the tests run: confidence, the bootstrap's resamples and seed, the sub-windows, a stated run spread."""

    confidence: float = 0.95
    resamples: int = 2000
    seed: int = 0
    cutting: SubWindowing = SubWindowing()
    run_spread: dict[str, RunSpread] = field(default_factory=dict)  # stated by the user (--run-spread); none by default
    max_spread: float | None = MAX_SPREAD  # one run each, no stated spread: the plausible maximum (inproc.compare.bound)
    threshold_confidence: float = THRESHOLD_CONFIDENCE


def estimate_of(t: ChangeTest, base_figure: float | None, new_figure: float | None, n_base: int, n_new: int,
                spread: Spread | None, significant: bool = True, test: str = BETWEEN_RUNS,
                within: Interval | None = None) -> Estimate:
    """The estimate a change test gives (figures in the metric's display unit)."""
    low, high = t.interval()
    return Estimate(t.ratio, Interval(low, high), test, significant, n_base, n_new, base_figure, new_figure, within,
                    spread.log_sd if spread else None, spread.source if spread else "", t.p_change,
                    t.at_least(THRESHOLD_CONFIDENCE))


def figures(entries: Sequence[DecodeEntry], metric: str, t: StatSettings) -> list[float]:
    """Each run's figure of ``metric`` in the cell (its statistic), for the runs that have one."""
    out = []
    for e in entries:
        s = sample(e, metric, t.cutting)
        if s is not None and s.n and (v := s.statistic()) > 0:
            out.append(v)
    return out


@dataclass(frozen=True)
class WithinRun:
    """One run against one run: the ratio and the block bootstrap's interval (no spread between runs in it)."""

    ratio: float
    within: Interval
    n_base: int
    n_new: int
    base_figure: float
    new_figure: float


def within_run(base: DecodeEntry, new: DecodeEntry, metric: str, t: StatSettings) -> WithinRun | str:
    """The within-run ratio and interval, or why there is none (a reason in words)."""
    b, n = sample(base, metric, t.cutting), sample(new, metric, t.cutting)
    if b is None or n is None:
        return f"no {METRICS[metric].label} in {'the baseline' if b is None else 'the new run'}"
    if b.n < MIN_SAMPLES or n.n < MIN_SAMPLES:
        return f"too few samples ({b.n} baseline, {n.n} new; the test needs {MIN_SAMPLES} on each side)"
    fb, fn = b.statistic(), n.statistic()
    if fb <= 0 or fn <= 0:
        return f"a {METRICS[metric].label} of 0 cannot be a ratio"
    scale = METRICS[metric].scale
    return WithinRun(fn / fb, bootstrap_ratio(b, n, t.resamples, t.confidence, t.seed), b.n, n.n, fb * scale,
                     fn * scale)


def stated_test(w: WithinRun, spread: RunSpread, confidence: float) -> tuple[ChangeTest, Interval]:
    """One run each side with a stated run spread: the test on the widened interval's standard error (df = ∞)."""
    wide = widen(w.ratio, w.within, spread, confidence)
    z = t_quantile((1 + confidence) / 2, math.inf)
    centre = math.log(w.ratio)
    se = max(centre - math.log(wide.low), math.log(wide.high) - centre) / z
    p = 2 * t_sf(abs(centre) / se, math.inf) if se > 0 else (0.0 if centre else 1.0)
    return ChangeTest(centre, se, math.inf, min(p, 1.0), confidence), wide
