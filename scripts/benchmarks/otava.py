#!/usr/bin/env python3
"""History's detector on labelled series nobody here wrote: Apache Otava's test-data generators.

Each generator (``otava_test_data.generators``: noise, outlier, step_function,
regression_fix, variance_change, multiple_changes, ...) returns a series and its labelled
change points. Series are made on a level of 100 with noise σ = 2 (2 %, as nightly figures
are), 50 nights long (the generators' short length), at the generators' default change
indexes; their logs are judged by ``inproc.history.judged.judge_values`` as one metric,
"tbt" (a time: up is slower), with ``inproc history``'s default window and threshold.
Two ways, as printed in the ``rows`` column:

  alone  one series per call: the spread is learned from that series only;
  12     12 series of the same setting stacked as the rows of one call (as the tool judges a
         history's cells): spreads pooled over the rows, one alarm rate per night over them,
         and every row changes on the same night.

What counts (printed with the tables):
  found     a labelled change point (step, regression start or end, variance) with a
            confirmed level change (``Judged.changes``, any verdict) starting within ±1 night;
  called    found, and the change's verdict is slower or faster (beyond the threshold);
  false     confirmed changes with no labelled change point within ±1 night, per series;
            "called" beside it: those whose verdict is slower or faster (what the tool reports);
  outliers  labelled outliers that the walk left out as outlier nights (±1 night);
  both ends regression_fix series whose regression start and its fix were both found;
  odd       outlier nights with no labelled outlier within ±1 night (per series).

Run:  .venv-vllm/bin/python scripts/bench.py otava [--trials 200] [--seed 0]
Needs ``pip install --no-deps otava-test-data==0.1.9`` (numpy only).
"""
from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass
from importlib.metadata import version
from typing import Callable, Sequence

import numpy as np

from inproc.compare.verdicts import FASTER, SLOWER
from inproc.history.build import HistorySettings
from inproc.history.judged import Judged, judge_values

LEVEL, SIGMA, LENGTH, STACK = 100.0, 2.0, 50, 12
CHANGE_KINDS = ("step", "regression_start", "regression_end", "variance")


@dataclass(frozen=True)
class Setting:
    """One generator with its parameters: a seed in, a labelled series out."""

    family: str
    name: str
    make: Callable[[int], object]  # seed -> otava TimeSeries


def settings() -> list[Setting]:
    """The families and parameter settings measured (σ = 2 on a level of 100 unless named)."""
    from otava_test_data.generators import (banding, constant, multiple_changes, noise_normal, noise_uniform,
                                            outlier, regression_fix, step_function, variance_change)

    s, n = SIGMA, LENGTH
    out = [
        Setting("noise", "constant 100 (no noise)", lambda seed: constant(n, LEVEL)),
        Setting("noise", "normal σ=2", lambda seed: noise_normal(n, LEVEL, s, seed)),
        Setting("noise", "uniform 90..110", lambda seed: noise_uniform(n, 90.0, 110.0, seed)),
        Setting("noise", "banding 100/104 + σ=1", lambda seed: banding(n, LEVEL, 104.0, 1.0, seed)),
    ]
    for k in (2, 4, 8):
        out.append(Setting("step", f"+{k}σ (+{k * s / LEVEL:.0%})",
                           lambda seed, k=k: step_function(n, LEVEL, LEVEL + k * s, sigma=s, seed=seed)))
    out.append(Setting("step", "−8σ (faster)",
                       lambda seed: step_function(n, LEVEL, LEVEL - 8 * s, sigma=s, seed=seed)))
    out.append(Setting("step", "+16 %, no noise", lambda seed: step_function(n, LEVEL, 116.0, seed=seed)))
    for k in (5, 25):
        out.append(Setting("outlier", f"+{k}σ at night {n // 2}",
                           lambda seed, k=k: outlier(n, LEVEL, LEVEL + k * s, sigma=s, seed=seed)))
    for k, dur in ((4, 10), (8, 10), (8, 3)):
        out.append(Setting("regression_fix", f"+{k}σ for {dur} nights",
                           lambda seed, k=k, dur=dur: regression_fix(n, LEVEL, LEVEL + k * s,
                                                                     regression_duration=dur, sigma=s, seed=seed)))
    out.append(Setting("variance_change", "σ 2 → 10", lambda seed: variance_change(n, LEVEL, s, 10.0, seed=seed)))
    out.append(Setting("multiple_changes", "3 × +5σ", lambda seed: multiple_changes(
        n, [LEVEL, 110.0, 120.0, 130.0], sigma=s, seed=seed)))
    out.append(Setting("multiple_changes", "+8σ, −4σ, +8σ", lambda seed: multiple_changes(
        n, [LEVEL, 116.0, 108.0, 124.0], sigma=s, seed=seed)))
    return out


@dataclass
class Tally:
    """Counts over the series of one setting judged one way."""

    series: int = 0
    labels: int = 0
    found: int = 0
    called: int = 0
    false: int = 0
    false_called: int = 0
    outlier_labels: int = 0
    outliers_caught: int = 0
    pairs: int = 0  # regression_fix series
    both_ends: int = 0
    odd_outliers: int = 0


def _near(night: int, nights: Sequence[int]) -> bool:
    return any(abs(night - i) <= 1 for i in nights)


def score(t: Tally, series: Sequence[object], j: Judged) -> None:
    """Add one call's rows (row k is series[k]) to the tally."""
    for k, ts in enumerate(series):
        labels = [c.index for c in ts.change_points if c.change_type in CHANGE_KINDS]
        marked = [c.index for c in ts.change_points if c.change_type == "outlier"]
        changes = [c for c in j.changes if c.row == k]
        at = [c.departure.night for c in changes]
        called = [c.departure.night for c in changes if c.verdict in (SLOWER, FASTER)]
        outl = [d.night for d in j.levels[k].outliers]
        found = [_near(i, at) for i in labels]
        t.series += 1
        t.labels += len(labels)
        t.found += sum(found)
        t.called += sum(_near(i, called) for i in labels)
        t.false += sum(not _near(i, labels) for i in at)
        t.false_called += sum(not _near(i, labels) for i in called)
        t.outlier_labels += len(marked)
        t.outliers_caught += sum(_near(i, outl) for i in marked)
        t.odd_outliers += sum(not _near(i, marked) for i in outl)
        if any(c.change_type == "regression_start" for c in ts.change_points):
            t.pairs += 1
            t.both_ends += all(found)


def measure(setting: Setting, seeds: Sequence[int], rows: int, window: int, threshold: float) -> Tally:
    """Judge the setting's series ``rows`` at a time (1: alone)."""
    t = Tally()
    for g in range(0, len(seeds), rows):
        series = [setting.make(int(s)) for s in seeds[g:g + rows]]
        values = np.log(np.array([ts.data for ts in series], dtype=float))
        score(t, series, judge_values(values, ["tbt"] * len(series), window, threshold))
    return t


def _rate(num: int, den: int) -> str:
    return f"{num}/{den} {num / den:4.0%}" if den else "-"


HEADER = (f"{'setting':<24} {'rows':>5} {'series':>6} {'found (recall)':>16} {'called':>15} "
          f"{'false/series':>12} {'called':>6} {'outliers':>15} {'both ends':>15} {'odd/series':>10}")


def row_text(name: str, rows: str, t: Tally) -> str:
    return (f"{name:<24} {rows:>5} {t.series:>6} {_rate(t.found, t.labels):>16} {_rate(t.called, t.labels):>15} "
            f"{t.false / t.series:>12.3f} {t.false_called / t.series:>6.3f} "
            f"{_rate(t.outliers_caught, t.outlier_labels):>15} "
            f"{_rate(t.both_ends, t.pairs):>15} {t.odd_outliers / t.series:>10.3f}")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=200, help="series per setting, rounded up to a multiple of 12")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if a.trials < 1:
        p.error(f"--trials must be at least 1, got {a.trials}")
    h = HistorySettings()
    window, threshold = h.window, h.compare.threshold
    n = math.ceil(a.trials / STACK) * STACK
    print(f"otava-test-data {version('otava-test-data')}; {n} series per setting, {LENGTH} nights, level "
          f"{LEVEL:g} ± σ {SIGMA:g}, metric tbt, window {window}, threshold {threshold:g}, seed {a.seed}")
    print(__doc__.split("What counts (printed with the tables):\n")[1].split("\n\nRun:")[0])
    start = time.perf_counter()
    family = None
    for i, s in enumerate(settings()):
        if s.family != family:
            family = s.family
            print(f"\n{family}\n{HEADER}")
        seeds = np.random.default_rng([a.seed, i]).integers(2**31, size=n)
        for rows in (1, STACK):
            t = measure(s, seeds, rows, window, threshold)
            print(row_text(s.name, "alone" if rows == 1 else str(rows), t))
    print(f"\n{time.perf_counter() - start:.1f} s")
    return 0

