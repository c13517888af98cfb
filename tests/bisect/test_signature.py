"""The signature's kernel category: held between the regression and a candidate where both name one."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from inproc.bisect.signature import signature
from tests.history.test_diagnose import anatomy
from tests.sim.kernels import PassSettings, simulate_runs


def runs(n: int, rng, plant: str = "", step_ms: float = 10.0, kernels: bool = True):
    s = PassSettings(plant=plant, plant_ms=1.5 if plant else 0.0)
    return [replace(anatomy(step_ms, 1.0), kernels=k if kernels else None) for k in simulate_runs(s, n, rng)]


def test_the_kernel_category_is_part_of_the_signature():
    rng = np.random.default_rng(5)
    good = runs(3, rng)
    bad = signature(good, runs(3, rng, "gemm", 11.5), 10.0 / 11.5)
    assert bad.kernel == "gemm" and "in gemm kernels" in bad.describe()
    same = signature(good, runs(3, rng, "gemm", 11.5), 10.0 / 11.5)
    other = signature(good, runs(3, rng, "attention", 11.5), 10.0 / 11.5)
    assert other.kernel == "attention" and same.same_kind(bad) and not other.same_kind(bad)
    # Where a side has no kernel pass, the category is unknown and not held against the regression.
    unknown = signature(good, runs(3, rng, "attention", 11.5, kernels=False), 10.0 / 11.5)
    assert unknown.kernel == "" and unknown.same_kind(bad) and bad.same_kind(unknown)
    assert (bad.term, bad.graph_modes, bad.padding) == (other.term, other.graph_modes, other.padding)
