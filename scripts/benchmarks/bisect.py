#!/usr/bin/env python3
"""``scripts/bench.py bisect``: how often ``inproc bisect`` names the right commit, says insufficient data, or names
a wrong one, on simulated machines whose truth is known.

Every trial is the real sitting (``inproc.bisect.walk``: the oracle's check of its
reference, the sequential calls, the search) and the report's result, at the default
settings (``OracleSettings()``: the spread learned from the bisect's own runs,
``--max-pairs`` 8, no wall-time budget), driven by the simulated machine of
``tests/bisect/sim.py``: nine revisions, a slowdown planted at a commit drawn from 1-8,
each run's tok/s log-normal with the run spread, and the drift: a run slowed 1-6x on its
own (chance ``Drift.p_slow``), slow stretches of 3-6 runs slowed alike (chance
``Drift.p_stretch`` a run); and a machine in two clusters (``sim.TWO_CLUSTERS``): about half
the runs 3-12x slower, at random and in spells, as another program's load makes them.

Printed:
- the drifting machine, then the machine in two clusters, every trial a regression of 5, 10
  or 20 % at a run spread of 2, 5 or 10 % in turn: the rates of the right commit,
  insufficient data and a wrong commit, each with its 95 % Wilson interval and number of
  trials (target: no wrong commit);
- the power table: the share of trials naming the right commit, per regression and run
  spread, on a quiet machine, the drifting one and the one in two clusters, with the mean child runs a trial took;
- the regression stage beside compare: the share of quiet sittings in which bad against
  good is called a regression within the budget, beside compare's power with a baseline of
  ``max_pairs`` runs against as many new runs (the spread learned from those runs, alarm
  at 5 %, beyond the 5 % threshold with 80 % confidence); and with no change at all, how
  often a regression is called (target: at most 5 %).

Run: .venv-vllm/bin/python scripts/bench.py bisect [--trials 540] [--power-trials 100] [--seed 1]
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from scripts.benchmarks.harness import wilson  # noqa: E402
from inproc.bisect.oracle import OracleSettings, regressed  # noqa: E402
from inproc.compare.spread import NIGHT_ALPHA, Spread, change_test, residual_ss  # noqa: E402
from inproc.compare.verdicts import SLOWER, judge_test  # noqa: E402
from tests.bisect.sim import QUIET, TWO_CLUSTERS, Drift, Truth, bisect, trial  # noqa: E402

REGRESSIONS = (0.05, 0.10, 0.20)
SPREADS = (0.02, 0.05, 0.10)
DEFAULTS = OracleSettings()


def _rate(label: str, k: int, n: int, target: str = "") -> str:
    lo, hi = wilson(k, n)
    return f"  {label:<22} {k / n:7.1%}  [{lo:.1%}, {hi:.1%}]  of {n} trials" + (f"  (target {target})" if target else "")


def machine_rates(drift: Drift, trials: int, seed: int) -> None:
    """The right-commit, insufficient-data and wrong-commit rates over every regression and run spread in turn."""
    counts, runs = Counter(), []
    for k in range(trials):
        reg, sd = REGRESSIONS[k % 3], SPREADS[(k // 3) % 3]
        outcome, s = trial(k, seed, reg, sd, drift)
        counts[outcome] += 1
        runs.append(len(s.lines))
    print(_rate("right commit", counts["right"], trials))
    print(_rate("insufficient data", counts["insufficient"], trials))
    print(_rate("wrong commit", counts["wrong"], trials, "0"))
    print(f"  child runs per trial: mean {np.mean(runs):.1f}, max {max(runs)}")


def drifting(trials: int, seed: int) -> None:
    drift = Drift()
    print(f"Drifting machine: a run slowed 1-{drift.slow_max:g}x on its own with chance {drift.p_slow:g}, stretches of "
          f"{drift.stretch_runs[0]}-{drift.stretch_runs[1]} runs slowed alike starting with chance {drift.p_stretch:g} "
          f"a run; regressions {', '.join(f'{r:.0%}' for r in REGRESSIONS)} x run spreads "
          f"{', '.join(f'{s:.0%}' for s in SPREADS)} in turn; defaults: {DEFAULTS.max_pairs} pairs, no budget")
    machine_rates(drift, trials, seed)
    d = TWO_CLUSTERS
    print(f"\nA machine in two clusters: {d.p_load:.0%} of the runs slowed {d.load_range[0]:g}-{d.load_range[1]:g}x "
          f"(log-uniform), in spells (the load lasts to the next run with chance {d.load_stay:g}); the same trials")
    machine_rates(d, trials, seed)


def power(trials: int, seed: int) -> None:
    print(f"\nPower: the share of trials naming the right commit within the default budget ({DEFAULTS.max_pairs} pairs); "
          "mean child runs in brackets; wrong commits counted")
    print(f"  {'machine':<9} {'spread':>6}" + "".join(f"{f'{r:.0%} slower':>22}" for r in REGRESSIONS))
    for name, drift in (("quiet", QUIET), ("drifting", Drift()), ("clusters", TWO_CLUSTERS)):
        for sd in SPREADS:
            cells = []
            for reg in REGRESSIONS:
                got = [trial(k, seed + 1000, reg, sd, drift) for k in range(trials)]
                right = sum(o == "right" for o, _ in got)
                wrong = sum(o == "wrong" for o, _ in got)
                cells.append(f"{right / trials:6.0%} ({np.mean([len(s.lines) for _, s in got]):4.1f})"
                             + (f" {wrong} wrong" if wrong else "        "))
            print(f"  {name:<9} {sd:>6.0%}" + "".join(f"{c:>22}" for c in cells))


def compare_power(reg: float, sd: float, runs: int, trials: int, rng: np.random.Generator) -> float:
    """compare's power on one row: ``runs`` baseline runs against as many new ones, the spread learned from them."""
    called = 0
    for _ in range(trials):
        base, new = rng.normal(0, sd, runs), rng.normal(-np.log1p(reg), sd, runs)
        ss, df = residual_ss([base, new])
        t = change_test(base, new, Spread(float(np.sqrt(ss / df)), df, "learned"))
        called += judge_test(t, "tok_s", DEFAULTS.threshold, t.p_change <= NIGHT_ALPHA)[0] == SLOWER
    return called / trials


def regression_stage(trials: int, seed: int) -> None:
    print(f"\nThe regression stage (bad against good) on a quiet machine, within {DEFAULTS.max_pairs} pairs, beside "
          f"compare with a baseline of {DEFAULTS.max_pairs} runs against {DEFAULTS.max_pairs} new runs:")
    rng = np.random.default_rng(seed)
    for sd in SPREADS:
        cells = []
        for reg in (0.0, *REGRESSIONS):
            called = 0
            for k in range(trials):
                truth = replace(Truth(), first_bad=1 + k % 8, regression=reg, run_sd=sd)
                _, s = bisect(truth, QUIET, seed * 100_000 + k)
                called += s.ref is not None and regressed(s.ref)
            cells.append(f"{reg:.0%}: bisect {called / trials:4.0%}, compare "
                         f"{compare_power(reg, sd, DEFAULTS.max_pairs, 2000, rng):4.0%}")
        print(f"  spread {sd:.0%}:  " + ";  ".join(cells))
    print("  (at 0 % the figures are false alarms; target at most 5 %)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench.py bisect", description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=540, help="trials on the drifting machine and on the one in two clusters (at least 500 each)")
    ap.add_argument("--power-trials", type=int, default=100, help="trials per cell of the power table")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    started = time.monotonic()
    drifting(a.trials, a.seed)
    power(a.power_trials, a.seed)
    regression_stage(a.power_trials, a.seed)
    print(f"\n{time.monotonic() - started:.0f} s")
    return 0

