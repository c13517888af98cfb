"""One metric of one cell, baseline against new: the ratio, its interval, and whether it is significant.

Which test, by what the sides hold:

- one run on each side, ``tok_s``: a seeded percentile bootstrap over the sub-window samples
  of the ratio of pooled rates (Σ tokens ÷ Σ seconds, which is Total tok/s exactly); the
  change is significant when the interval excludes 1.
- one run on each side, ``tbt`` and ``ttft``: Mann–Whitney U on the per-token gaps or the
  per-request TTFTs, significant when its two-sided p is below 1 − confidence; the
  ratio is of the medians (the report's figures), its interval a seeded bootstrap of that ratio.
- several runs on a side (a baseline): the run-level figures' spread between runs (a t
  interval on logs, :func:`inproc.compare.stats.between_run_interval`); significant when
  the interval excludes 1. Within-window samples understate how much a whole run varies
  from night to night, so once the spread between runs is known, it is the noise.

Per-token gaps of one step are not independent (the C requests of a batch share the
step), so the within-run Mann–Whitney p of ``tbt`` is optimistic; the threshold, and
better a baseline of several runs, guard against calling that noise a change.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from inproc.compare.samples import BETWEEN_RUNS, BOOTSTRAP, METRICS, SubWindowing, sample
from inproc.compare.stats import Interval, between_run_interval, bootstrap_ratio, geometric_mean, mann_whitney_u
from inproc.record.schema import DecodeEntry

#: A within-run test needs this many samples on each side.
MIN_SAMPLES = 3


@dataclass(frozen=True)
class Estimate:
    """New against baseline for one metric of one cell."""

    ratio: float  # new figure ÷ baseline figure (tok/s: above 1 is faster; times: above 1 is slower)
    interval: Interval  # of the ratio, at the comparison's confidence
    test: str  # samples.BOOTSTRAP, MANN_WHITNEY or BETWEEN_RUNS
    significant: bool
    n_base: int  # samples (within-run tests) or runs (between-run)
    n_new: int
    p: float | None = None  # Mann–Whitney's two-sided p (the other tests decide by the interval)
    base_figure: float | None = None  # in the metric's display unit; a baseline of runs: their geometric mean
    new_figure: float | None = None


@dataclass(frozen=True)
class StatSettings:
    """How the tests run: the confidence of every interval, the bootstrap's resamples and seed, the sub-windows."""

    confidence: float = 0.95
    resamples: int = 2000
    seed: int = 0
    cutting: SubWindowing = SubWindowing()


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
    interval = bootstrap_ratio(b, n, t.resamples, t.confidence, t.seed)
    scale = METRICS[metric].scale
    if METRICS[metric].test == BOOTSTRAP:
        return Estimate(fn / fb, interval, BOOTSTRAP, interval.excludes(1.0), b.n, n.n,
                        base_figure=fb * scale, new_figure=fn * scale)
    mw = mann_whitney_u(n.values, b.values)
    return Estimate(fn / fb, interval, METRICS[metric].test, mw.p < 1 - t.confidence, b.n, n.n, mw.p,
                    fb * scale, fn * scale)


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
