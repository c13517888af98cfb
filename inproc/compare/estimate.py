"""One metric of one cell, baseline against new: the ratio, its interval, and whether it is significant.

Which test, by what the sides hold:

- several runs on a side (a baseline): the run-level figures' spread between runs (a t
  interval on logs, :func:`inproc.compare.stats.between_run_interval`); significant when
  the interval excludes 1. Whatever varies from run to run (prompts, the machine's
  state, the engine's warm-up) is in that spread, so it is the noise.
- one run on each side: **indicative**. The within-run interval is a seeded circular
  block bootstrap over each run's units (sub-windows; requests for TTFT) of the ratio of
  the cells' own figures; one run cannot show how much a whole run varies, so that
  interval is widened by the metric's stated run-to-run spread (``samples.METRICS``, with
  its source; ``--run-spread`` overrides it, :func:`inproc.compare.stats.widen`). The
  change is significant only when the widened interval excludes 1: beyond both the
  noise inside the windows and the spread between runs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from inproc.compare.samples import BETWEEN_RUNS, BLOCK_BOOTSTRAP, METRICS, SubWindowing, sample
from inproc.compare.stats import (Interval, RunSpread, between_run_interval, bootstrap_ratio, geometric_mean,
                                  widen)
from inproc.record.schema import DecodeEntry

#: A within-run test needs this many units on each side.
MIN_SAMPLES = 3


@dataclass(frozen=True)
class Estimate:
    """New against baseline for one metric of one cell."""

    ratio: float  # new figure ÷ baseline figure (tok/s: above 1 is faster; times: above 1 is slower)
    interval: Interval  # of the ratio, at the comparison's confidence (one run each: widened by the run spread)
    test: str  # samples.BLOCK_BOOTSTRAP or BETWEEN_RUNS
    significant: bool
    n_base: int  # units (one run each side) or runs (between runs)
    n_new: int
    base_figure: float | None = None  # in the metric's display unit; a baseline of runs: their geometric mean
    new_figure: float | None = None
    within: Interval | None = None  # one run each: the block bootstrap's interval alone
    run_spread: float | None = None  # one run each: the log standard deviation the interval was widened by

    @property
    def indicative(self) -> bool:
        """One run against one run: the spread between runs is a stated default, not measured on these runs."""
        return self.test == BLOCK_BOOTSTRAP


@dataclass(frozen=True)
class StatSettings:
    """How the tests run: confidence, the bootstrap's resamples and seed, the sub-windows, the run spread."""

    confidence: float = 0.95
    resamples: int = 2000
    seed: int = 0
    cutting: SubWindowing = SubWindowing()
    run_spread: dict[str, RunSpread] = field(default_factory=lambda: {k: v.spread for k, v in METRICS.items()})


def estimate(base: Sequence[DecodeEntry], new: Sequence[DecodeEntry], metric: str,
             t: StatSettings) -> Estimate | str:
    """The estimate for ``metric``, or why there is none (a reason in words)."""
    if len(base) > 1 or len(new) > 1:
        return _between_runs(base, new, metric, t)
    b, n = sample(base[0], metric, t.cutting), sample(new[0], metric, t.cutting)
    if b is None or n is None:
        return f"no {METRICS[metric].label} in {'the baseline' if b is None else 'the new run'}"
    if b.n < MIN_SAMPLES or n.n < MIN_SAMPLES:
        return f"too few samples ({b.n} baseline, {n.n} new; the test needs {MIN_SAMPLES} on each side)"
    fb, fn = b.statistic(), n.statistic()
    if fb <= 0 or fn <= 0:
        return f"a {METRICS[metric].label} of 0 cannot be a ratio"
    within = bootstrap_ratio(b, n, t.resamples, t.confidence, t.seed)
    spread = t.run_spread[metric]
    interval = widen(fn / fb, within, spread, t.confidence)
    scale = METRICS[metric].scale
    return Estimate(fn / fb, interval, BLOCK_BOOTSTRAP, interval.excludes(1.0), b.n, n.n,
                    base_figure=fb * scale, new_figure=fn * scale, within=within, run_spread=spread.log_sd)


def _figures(entries: Sequence[DecodeEntry], metric: str, t: StatSettings) -> list[float]:
    out = []
    for e in entries:
        s = sample(e, metric, t.cutting)
        if s is not None and s.n and (v := s.statistic()) > 0:
            out.append(v)
    return out


def _between_runs(base: Sequence[DecodeEntry], new: Sequence[DecodeEntry], metric: str,
                  t: StatSettings) -> Estimate | str:
    fb, fn = _figures(base, metric, t), _figures(new, metric, t)
    r = between_run_interval(fb, fn, t.confidence)
    if r is None:
        return (f"{METRICS[metric].label} in {len(fb)} baseline and {len(fn)} new runs; "
                "the spread between runs needs 2 runs on one side")
    scale = METRICS[metric].scale
    return Estimate(r.ratio, r.interval, BETWEEN_RUNS, r.interval.excludes(1.0), len(fb), len(fn),
                    base_figure=geometric_mean(fb) * scale, new_figure=geometric_mean(fn) * scale)
