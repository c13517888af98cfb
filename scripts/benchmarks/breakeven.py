#!/usr/bin/env python3
"""``scripts/bench.py breakeven``: the break-even finder (``inproc.sweep.breakeven``) on simulated sweeps.

Each scenario is a cell whose true break-even acceptance length is known (``tests/sim/speculation.py``:
speculative tok/s proportional to the acceptance length, the no-speculation tok/s fixed, sub-window
noise, acceptance measured from a finite number of drafts). Printed per scenario: how often the
truth lies inside the reported 95 % interval (target >= 95 %) where the crossing is inside the
measured range (an unbounded set, "undetermined", counts: it is Fieller's honest answer to a flat
fit; the rate of bounded intervals holding the truth is printed beside it); where it is outside, how often the verdict is the right one of "always pays" /
"never pays" and how often it is the opposite (target 0); and the speedup's interval coverage at
a stated length. Each rate with its 95 % Wilson interval and the number of trials.

Run: .venv-vllm/bin/python scripts/bench.py breakeven [--trials 2000] [--seed 1]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from scripts.benchmarks.harness import wilson  # noqa: E402
from inproc.sweep.breakeven import ALWAYS, NEVER, find_break_even, speedup_at  # noqa: E402
from tests.sim.speculation import SpecCell, simulate_cell  # noqa: E402

LENGTHS = (1.5, 2.0, 2.5, 3.0, 3.5, 4.0)
#: (name, cell): crossings inside the range at several positions, sizes and noises; then outside it.
CROSSING = (
    ("6 lengths, a* 2.7, 4 % noise", SpecCell(2.7, LENGTHS)),
    ("6 lengths, a* 1.8, 4 % noise", SpecCell(1.8, LENGTHS)),
    ("6 lengths, a* 3.6, 10 % noise", SpecCell(3.6, LENGTHS, noise=0.10)),
    ("3 lengths, a* 3.4, 10 % noise", SpecCell(3.4, (1.5, 2.5, 3.5), noise=0.10)),
    ("3 lengths, a* 2.2, 4 % noise", SpecCell(2.2, (1.5, 2.5, 3.5))),
    ("2 lengths, a* 2.5, 2 % noise", SpecCell(2.5, (2.0, 3.0), noise=0.02)),
    ("4 lengths, a* 2.4, 200 drafts", SpecCell(2.4, (1.5, 2.0, 3.0, 4.0), drafts=200)),
)
OUTSIDE = (
    ("a* 1.2 below 2-3.5", SpecCell(1.2, (2.0, 2.5, 3.0, 3.5)), ALWAYS),
    ("a* 1.8 just below 2-3.5", SpecCell(1.8, (2.0, 2.5, 3.0, 3.5)), ALWAYS),
    ("a* 5.0 above 2-3.5", SpecCell(5.0, (2.0, 2.5, 3.0, 3.5)), NEVER),
    ("a* 3.8 just above 2-3.5", SpecCell(3.8, (2.0, 2.5, 3.0, 3.5)), NEVER),
)
OPPOSITE = {ALWAYS: NEVER, NEVER: ALWAYS}


def rate(k: int, n: int, target: str) -> str:
    lo, hi = wilson(k, n)
    return f"{k / n:6.1%} [{lo:.1%}, {hi:.1%}]  n={n}  target {target}"


def crossing(name: str, cell: SpecCell, trials: int, rng: np.random.Generator) -> None:
    inside = bounded = speedup_in = 0
    at = (min(cell.lengths) + max(cell.lengths)) / 2
    for _ in range(trials):
        points, base = simulate_cell(cell, rng)
        b = find_break_even(points, base)
        inside += b.contains(cell.verify_cost)
        bounded += b.low is not None and b.low <= cell.verify_cost <= b.high
        s = speedup_at(points, base, at)
        speedup_in += s is not None and s.low <= at / cell.verify_cost <= s.high
    print(f"  {name:34s} truth in the 95 % set    {rate(inside, trials, '>= 95 %')}")
    print(f"  {'':34s} in a bounded interval   {rate(bounded, trials, 'high')}")
    print(f"  {'':34s} speedup at {at:.2f} in interval {rate(speedup_in, trials, '>= 95 %')}")


def outside(name: str, cell: SpecCell, want: str, trials: int, rng: np.random.Generator) -> None:
    right = wrong = 0
    for _ in range(trials):
        verdict = find_break_even(*simulate_cell(cell, rng)).verdict
        right += verdict == want
        wrong += verdict == OPPOSITE[want]
    print(f"  {name:34s} '{want}'  {rate(right, trials, 'high')}")
    print(f"  {'':34s} '{OPPOSITE[want]}' {rate(wrong, trials, '0')}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="bench.py breakeven", description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    print("Break-even inside the measured range: truth inside the 95 % interval")
    for name, cell in CROSSING:
        crossing(name, cell, a.trials, rng)
    print("Break-even outside the measured range: the verdict")
    for name, cell, want in OUTSIDE:
        outside(name, cell, want, a.trials, rng)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
