"""KV-cache usage of a decode cell, as the engine counted it at each step of the window.

Each step row holds the blocks of the engine's KV pool that requests held right after
that step formed its batch (``StepResult.kv_used_blocks``: vLLM's block pool, SGLang's
token pool in pages). The figures here are over the window's steps; the static
estimate of the plan (``inproc.plan.capacity``) is kept beside them in the cell's
``capacity_check``, so a report shows how close a cell came to the edge.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inproc.measure.metrics import Window
from inproc.measure.steps import StepTrace


@dataclass(frozen=True)
class KvUsage:
    """Observed KV blocks in use over a decode window; None where the engine reported none."""

    peak_blocks: int  # max over the window's steps of kv_used_blocks
    mean_blocks: float  # mean over the window's steps (each step once) of kv_used_blocks
    pool_blocks: int  # blocks requests can hold (Capacity.allocatable_blocks)
    window_peak_blocks: int | None = None  # SGLang's hybrid sliding-window pool: max over the window's steps

    @property
    def peak_fraction(self) -> float:
        """peak_blocks ÷ pool_blocks."""
        return self.peak_blocks / self.pool_blocks if self.pool_blocks else float("nan")

    def describe(self) -> str:
        """``KV blocks in use: peak 1,234 of 2,999 (41 %), mean 1,100``."""
        text = (f"KV blocks in use: peak {self.peak_blocks:,} of {self.pool_blocks:,} ({self.peak_fraction:.0%}), "
                f"mean {self.mean_blocks:,.0f}")
        if self.window_peak_blocks is not None:
            text += f"; sliding-window pool peak {self.window_peak_blocks:,}"
        return text


def kv_usage(steps: StepTrace, w: Window, pool_blocks: int) -> KvUsage | None:
    """Peak and mean of the engine's KV blocks in use over the window's steps."""
    if "kv_used_blocks" not in steps.columns:
        return None
    r = slice(w.first_step, w.last_step + 1)
    used = steps.kv_used_blocks[r]
    used = used[used >= 0]
    if not used.size:
        return None
    win = steps.kv_used_window_blocks[r]
    win = win[win >= 0]
    return KvUsage(int(used.max()), float(np.mean(used)), int(pool_blocks), int(win.max()) if win.size else None)
