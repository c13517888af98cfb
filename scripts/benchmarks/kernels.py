#!/usr/bin/env python3
"""``scripts/bench.py kernels``: how often compare's kernel diagnosis names a category that did not move, and how
often it names a planted one.

Kernel passes come from ``tests/sim/kernels.py`` (a known truth: a GPU-like decode step of
9.3 ms of kernels by category, each whole run off by ``--run-sd``, each profiled step by
``--step-sd`` with neighbouring steps correlated). One trial is a comparison of ``--cells``
cells, judged together by ``inproc.compare.kernels`` as ``inproc compare`` judges them:

- **clean**: both sides drawn from the same distribution. The false-naming rate is the
  share of comparisons that name any category in any cell (target ≤ 5 %, the alarm rate).
- **planted**: the new side's GEMM time per step raised by ``plant`` ms in every cell. The
  power is the share of cells whose named categories are exactly ``gemm``; "other named"
  is the share of cells naming any other category beside or instead of it.

Each rate is printed with its 95 % Wilson interval and its number of trials (comparisons, or
cells for the planted lines: a comparison's cells are judged together, so that interval is a
little narrow), for one run each side (profiled steps as the units; without ``--run-spread``
nothing is named, with it the stated spread widens each interval) and for 3 and 5 runs a
side (runs as the units).

Run: .venv-vllm/bin/python scripts/bench.py kernels [--trials 400] [--cells 8]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from scripts.benchmarks.harness import wilson  # noqa: E402
from inproc.compare.kernels import cell_change, judge  # noqa: E402
from tests.sim.kernels import MEANS_MS, PassSettings, simulate_runs  # noqa: E402

PLANTS_MS = (0.25, 0.5, 1.0)  # 5, 10 and 20 % of the GEMMs' 5 ms per step


def trial(clean: PassSettings, new: PassSettings, runs: int, cells: int, rng: np.random.Generator,
          seed: int, stated: float | None) -> list[tuple[str, ...]]:
    """One comparison of ``cells`` cells: the categories named in each (``stated``: a --run-spread)."""
    changes = [cell_change((1024, c), simulate_runs(clean, runs, rng), simulate_runs(new, runs, rng), seed=seed + c,
                           run_spread=stated) for c in range(cells)]
    return [tuple(x.category for x in k.named) for k in judge([k for k in changes if k is not None])]


def _rate(label: str, k: int, n: int, target: str = "") -> str:
    lo, hi = wilson(k, n)
    return f"  {label:<34} {k / n:7.2%}  [{lo:.2%}, {hi:.2%}]  n={n}" + (f"  target {target}" if target else "")


def run(a: argparse.Namespace) -> None:
    rng = np.random.default_rng(a.seed)
    clean = PassSettings(steps=a.steps, run_sd=a.run_sd, step_sd=a.step_sd)
    print(f"Simulated kernel passes: {a.steps} profiled steps, {sum(MEANS_MS.values()):.1f} ms of kernels per step "
          f"(gemm {MEANS_MS['gemm']} ms), run sd {a.run_sd:.1%}, step sd {a.step_sd:.1%}; {a.cells} cells per "
          f"comparison, {a.trials} comparisons per line")
    designs = [(1, None, "one run each side, no --run-spread (within-run only: never named)"),
               (1, a.run_sd, f"one run each side, --run-spread {a.run_sd:.0%} (the simulation's own)"),
               (3, None, "3 runs a side (runs as units)"), (5, None, "5 runs a side (runs as units)")]
    for runs, stated, unit in designs:
        started = time.perf_counter()
        named = sum(any(t) for t in (trial(clean, clean, runs, a.cells, rng, i, stated) for i in range(a.trials)))
        print(f"{unit}:")
        print(_rate("clean vs clean, any category named", named, a.trials, "<= 5%"))
        for plant in PLANTS_MS:
            planted = PassSettings(a.steps, a.run_sd, a.step_sd, plant="gemm", plant_ms=plant)
            cells = [c for i in range(a.trials) for c in trial(clean, planted, runs, a.cells, rng, i, stated)]
            print(_rate(f"gemm +{plant:g} ms: named exactly gemm", sum(c == ("gemm",) for c in cells), len(cells)))
            print(_rate(f"gemm +{plant:g} ms: another named", sum(any(x != "gemm" for x in c) for c in cells),
                        len(cells)))
        print(f"  ({(time.perf_counter() - started) / (a.trials * (1 + len(PLANTS_MS))) * 1e3:.1f} ms per comparison)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=400)
    ap.add_argument("--cells", type=int, default=8)
    ap.add_argument("--steps", type=int, default=PassSettings.steps)
    ap.add_argument("--run-sd", type=float, default=PassSettings.run_sd)
    ap.add_argument("--step-sd", type=float, default=PassSettings.step_sd)
    ap.add_argument("--seed", type=int, default=0)
    run(ap.parse_args(argv))
    return 0

