"""The same nights as ``tests.sim.nights``, drawn directly as each row's log figure: thousands of histories a minute.

A row's figure on a night is its cell's level (the shared and own night noise of
:class:`~tests.sim.nights.NightSettings`, times the planted factors) plus the noise of its
window: the step jitter averaged over the window's steps for tok/s and time between
tokens, one prefill step's jitter for TTFT. tok/s moves against the step time, the times
with it. ``scripts/bench.py verdict`` checks this model against the step-level simulator.
"""
from __future__ import annotations

import math

import numpy as np

from tests.sim.nights import NightSettings, _base_ms

METRICS = ("tok_s", "tbt", "ttft")


def simulate_figures(s: NightSettings, rng: np.random.Generator) -> tuple[np.ndarray, list[str]]:
    """(rows × nights of log figures, each row's metric); rows are metric-major: row = metric index × cells + cell."""
    shared = rng.normal(0.0, s.night_noise * math.sqrt(s.shared), (s.nights, 1))
    own = rng.normal(0.0, s.night_noise * math.sqrt(1 - s.shared), (s.nights, s.cells))
    level = shared + own
    for p in s.plants:
        for night in p.nights:
            if night < s.nights:
                level[night, [c for c in p.cells if c < s.cells]] += math.log(1 + p.size)
    steps = s.window_s / (_base_ms(s) / 1000)
    rows, metrics = [], []
    for m in METRICS:
        window = s.step_jitter / np.sqrt(steps) if m != "ttft" else np.full(s.cells, s.step_jitter)
        sign = -1.0 if m == "tok_s" else 1.0
        rows.append(sign * level.T + rng.normal(0.0, 1.0, (s.cells, s.nights)) * window[:, None])
        metrics += [m] * s.cells
    return np.vstack(rows), metrics
