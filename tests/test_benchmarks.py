"""The benchmarks' shared harness on simulated data whose truth is known, and their registry.

Wrong code these catch: an order-statistic interval one rank too narrow (coverage about 88 % at
n = 20, not 95 %), a verdict that says "met" when the interval straddles the target, and a
benchmark module that ``scripts/bench.py --help`` does not list.
"""
from __future__ import annotations

import numpy as np
import pytest

from scripts.benchmarks import BENCHMARKS, HERE, summary
from scripts.benchmarks.harness import median_interval, verdict, wilson

#: Modules of the package that are parts of another benchmark or shared, not benchmarks of their own.
PARTS = {"__init__", "harness", "blocks", "formats", "kernelpass", "pairs", "disturbed_real", "fidelity_ab",
         "fidelity_generate"}


def test_the_median_interval_covers_the_true_median_at_its_confidence():
    rng = np.random.default_rng(5)
    trials = 2000
    hits = sum(lo <= 0.0 <= hi for lo, hi in (median_interval(list(rng.standard_normal(20))) for _ in range(trials)))
    assert 0.93 <= hits / trials <= 0.99  # ranks 6 and 15 of 20: 95.9 % by the binomial


def test_the_wilson_interval_covers_the_true_rate():
    rng = np.random.default_rng(6)
    hits = sum(lo <= 0.05 <= hi for lo, hi in (wilson(int(rng.binomial(200, 0.05)), 200) for _ in range(2000)))
    assert hits / 2000 >= 0.93


@pytest.mark.parametrize("lo, hi, at_least, said", [
    (0.996, 0.999, True, "met"), (0.990, 0.994, True, "missed"), (0.993, 0.998, True, "cannot tell"),
    (0.0005, 0.0008, False, "met"), (0.002, 0.003, False, "missed"), (0.0005, 0.002, False, "cannot tell"),
])
def test_the_verdict_is_met_only_when_the_whole_interval_is_on_the_targets_side(lo, hi, at_least, said):
    assert verdict(lo, hi, 0.995 if at_least else 0.001, at_least) == said


def test_every_benchmark_module_is_listed_with_a_summary():
    modules = {p.stem for p in HERE.glob("*.py")}
    assert set(BENCHMARKS.values()) | PARTS == modules
    assert all(summary(name) for name in BENCHMARKS)
