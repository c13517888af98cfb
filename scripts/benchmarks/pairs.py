"""One run against one run, judged by the spread a change needs against ``--max-spread``: rates on known truth.

Part of ``scripts/bench.py verdict`` (``--only pairs`` runs it alone). Two levels, as for history:

- **end to end** (``tests.sim.nights``): two nights of 12 GPU-like cells made, derived and
  judged by ``inproc.compare.verdicts.compare_runs`` on tok/s and TBT at the default
  ``--max-spread`` (TTFT is left out: at C = 1 a simulated 1 s window holds too few
  requests, and such rows are undecided, exit 3, whatever the rule); it also measures the
  rows' within-run standard errors that the figure level uses;
- **figure level**: each row's log ratio of two runs drawn directly, the night's noise with
  half its variance shared by the cells (as ``tests.sim``), plus within-run noise of the
  standard error measured end to end, judged by ``inproc.compare.bound.bound_test`` exactly
  as compare calls it (24 rows, Bonferroni over them); many trials, so the rates are tight.

Printed: on clean pairs (nothing changed) at run-to-run spreads from a GPU runner's 2 %
to beyond the maximum, the share of pairs with a row called slower (exit 1: a false
alarm); with 6 of 12 cells slowed 1.5x to 13x, the share of pairs called (exit 1) and of
slow cells called slower. Each rate with its 95 % Wilson interval and number of trials.
"""
from __future__ import annotations

import math
import time

import numpy as np

from scripts.benchmarks.harness import rate_line
from inproc.compare.bound import MAX_SPREAD, bound_test, within_se
from inproc.compare.stats import Interval
from inproc.compare.verdicts import SLOWER, CompareSettings, compare_runs, judge_test
from tests.sim.nights import NightSettings, Plant, simulate

CELLS, METRICS = 12, ("tok_s", "tbt")
CLEAN_SPREADS = (0.02, 0.05, 0.10, 0.166, 0.25, 0.35)
SLOWDOWNS = (1.5, 2.0, 3.0, 5.0, 13.0)
POWER_SPREADS = (0.02, 0.10)
SETTINGS = CompareSettings(metrics=METRICS)

SLOW_CELLS = (0, 2, 4, 6, 8, 10)  # six of the twelve cells, over the whole step-time range


def e2e_pair(noise: float, slowdown: float, seed: int) -> tuple[int, set[int], list[float]]:
    """(exit code, slow cells called, the rows' within-run standard errors) of one simulated pair."""
    plants = (Plant(slowdown - 1, (1,), SLOW_CELLS),) if slowdown > 1 else ()
    s = NightSettings(nights=2, night_noise=noise, plants=plants, seed=seed)
    c = compare_runs(*(lambda r: ([r[0]], [r[1]]))(simulate(s)), SETTINGS)
    index = {cell: k for k, cell in enumerate(s.cell_shapes())}
    called = {index[(r.context, r.concurrency)] for r in c.rows if r.verdict == SLOWER}
    ses = [within_se(r.estimate.ratio, r.estimate.within, 0.95) for r in c.rows if r.estimate and r.estimate.within]
    return c.exit_code, called, ses


def figure_pair(noise: float, slowdown: float, se_within: float, rng: np.random.Generator) -> tuple[bool, int]:
    """(a row called slower, slow cells called) of one pair drawn at the figure level."""
    shared, own = math.sqrt(0.5) * noise, math.sqrt(0.5) * noise
    night = rng.normal(0, shared, 2)[:, None] + rng.normal(0, own, (2, CELLS))  # log level of each run's cells
    slow = np.array([math.log(slowdown) if k in SLOW_CELLS else 0.0 for k in range(CELLS)])
    change = night[1] - night[0] + slow  # log slowdown of the new run (a time's log ratio; tok/s is its negative)
    called: set[int] = set()
    any_slow = False
    z = 1.959964
    for k in range(CELLS):
        for _ in METRICS:  # the cell's tok/s and TBT: the same steps, their own within-run noise
            c = change[k] + rng.normal(0, se_within * math.sqrt(2))
            ratio = math.exp(c)
            half = z * se_within * math.sqrt(2)
            test, _, alarm = bound_test(ratio, Interval(ratio * math.exp(-half), ratio * math.exp(half)), 0.95,
                                        MAX_SPREAD, CELLS * len(METRICS))
            if judge_test(test, "tbt", SETTINGS.threshold, alarm)[0] == SLOWER:  # a time's ratio: up is slower
                any_slow = True
                called |= {k} & set(SLOW_CELLS)
    return any_slow, len(called)


def run_pairs(trials: int, trials_e2e: int, seed: int) -> None:
    print(f"\ninproc compare, one run against one run, no stated spread: --max-spread {MAX_SPREAD * 100:g} %, "
          f"{CELLS} cells x {', '.join(METRICS)}")
    t0 = time.perf_counter()
    ses: list[float] = []
    e2e: dict[tuple[float, float], list[tuple[int, set[int]]]] = {}
    for noise, slowdown in [(n, 1.0) for n in (0.02, 0.10)] + [(0.02, 3.0), (0.02, 13.0)]:
        out = []
        for k in range(trials_e2e):
            code, called, s = e2e_pair(noise, slowdown, seed * 7919 + k)
            out.append((code, called))
            ses += s
        e2e[(noise, slowdown)] = out
    se_w = float(np.median(ses))
    print(f"  end to end: {sum(map(len, e2e.values()))} pairs in {time.perf_counter() - t0:.0f} s; "
          f"median within-run standard error of a row's log ratio {se_w * 100:.2f} %")
    for (noise, slowdown), out in e2e.items():
        label = f"spread {noise * 100:g} %, " + ("clean: exit 1" if slowdown == 1 else f"{slowdown:g}x slower: exit 1")
        print(rate_line(f"{label}, end to end", sum(c == 1 for c, _ in out), len(out),
                    "<= 5 %" if slowdown == 1 else "(shown)"))
        if slowdown == 1:
            print(rate_line(f"spread {noise * 100:g} %, clean: exit 0, end to end", sum(c == 0 for c, _ in out), len(out),
                        "(shown)"))
    rng = np.random.default_rng(seed)
    print(f"  figure level ({trials} pairs a setting, within-run standard error {se_w * 100:.2f} %)")
    for noise in CLEAN_SPREADS:
        hits = sum(figure_pair(noise, 1.0, se_w, rng)[0] for _ in range(trials))
        target = "<= 5 %" if noise <= MAX_SPREAD else "(beyond the maximum: shown)"
        print(rate_line(f"clean, run spread {noise * 100:g} %: exit 1", hits, trials, target))
    for noise in POWER_SPREADS:
        for slowdown in SLOWDOWNS:
            res = [figure_pair(noise, slowdown, se_w, rng) for _ in range(trials)]
            print(rate_line(f"{slowdown:g}x slower, spread {noise * 100:g} %: exit 1", sum(a for a, _ in res), trials,
                        "(shown)"))
            print(rate_line("... slow cells called (n: cells)", sum(c for _, c in res), trials * len(SLOW_CELLS),
                        "(shown)"))
