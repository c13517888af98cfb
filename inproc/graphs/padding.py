"""Padding to CUDA-graph capture sizes: a step's padded tokens under a list, and a list's cost.

A step that scheduled T tokens runs the captured graph of the smallest size S >= T and
computes S − T padded tokens (vLLM's dispatcher pads the batch up to the next capture size;
its ``CUDAGraphStat`` records T and S). A step with T above the largest size runs without a
graph (eager): it pads nothing, and what it costs is the graph it lacks, counted apart.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inproc.errors import UsageError

SIZES_HINT = "Give increasing whole numbers of 1 or more, e.g. --sizes 1,2,4,8,16."


def parse_sizes(text: str, flag: str = "--sizes") -> tuple[int, ...]:
    """``1,2,4,8`` (brackets allowed: ``[1,2,4]``) as increasing positive integers; one-line errors."""
    body = str(text).strip().removeprefix("[").removesuffix("]")
    items = [t.strip() for t in body.split(",")]
    if not body.strip() or any(not t for t in items):
        raise UsageError(f"Bad {flag} {text!r}: an empty size. {SIZES_HINT}")
    sizes = []
    for t in items:
        if not t.lstrip("+-").isdigit():
            raise UsageError(f"Bad {flag} size {t!r} in {text!r}: not a whole number. {SIZES_HINT}")
        if int(t) < 1:
            raise UsageError(f"Bad {flag} size {t!r} in {text!r}: sizes are 1 or more. {SIZES_HINT}")
        sizes.append(int(t))
    for a, b in zip(sizes, sizes[1:]):
        if b <= a:
            raise UsageError(f"Bad {flag} {text!r}: {b} follows {a}; sizes must increase. {SIZES_HINT}")
    return tuple(sizes)


def padded_tokens(counts: np.ndarray, sizes: tuple[int, ...]) -> np.ndarray:
    """Each step's tokens as run: the smallest size >= its count, or the count itself above the
    largest size (no graph, no padding); with no sizes every step runs eager."""
    counts = np.asarray(counts, dtype=np.int64)
    if not sizes:
        return counts.copy()
    grid = np.asarray(sizes, dtype=np.int64)
    at = np.searchsorted(grid, counts, side="left")
    inside = at < grid.size
    return np.where(inside, grid[np.minimum(at, grid.size - 1)], counts)


@dataclass(frozen=True)
class ListCost:
    """What one list of sizes costs on a set of steps (the functions' docstrings define each field)."""

    sizes: tuple[int, ...]
    steps: int  # steps counted
    tokens: int  # Σ unpadded tokens
    waste_tokens: int  # Σ (padded − unpadded): padding_waste_tokens
    waste_weighted: float  # Σ weight × (padded − unpadded): the quantity --weight minimizes
    eager_steps: int  # steps above the largest size (run without a graph)
    eager_time_s: float  # their Σ step time
    time_s: float  # Σ step time the share is of: the whole window's (prefill steps too) where given
    unused: tuple[int, ...]  # sizes no step was padded to

    @property
    def waste_share(self) -> float | None:
        """Padded tokens ÷ tokens the graphs ran (Σ padded), as the anatomy's ``padding_waste``."""
        ran = self.tokens + self.waste_tokens
        return self.waste_tokens / ran if ran else None

    @property
    def eager_time_share(self) -> float | None:
        """Steps run without a graph: their share of the window's time (:attr:`time_s`)."""
        return self.eager_time_s / self.time_s if self.time_s > 0 else None


def list_cost(counts: np.ndarray, times_s: np.ndarray, sizes: tuple[int, ...],
              weights: np.ndarray | None = None, window_s: float | None = None) -> ListCost:
    """The padding ``sizes`` costs on steps of ``counts`` tokens taking ``times_s`` seconds each.

    ``weights`` (default 1 per step) weighs each step's padded tokens in ``waste_weighted``;
    ``window_s``: the time the eager steps' share is of (default: Σ ``times_s``).
    """
    counts = np.asarray(counts, dtype=np.int64)
    times_s = np.asarray(times_s, dtype=np.float64)
    run = padded_tokens(counts, sizes)
    pad = run - counts
    w = np.ones(counts.size) if weights is None else np.asarray(weights, dtype=np.float64)
    eager = counts > sizes[-1] if sizes else np.ones(counts.size, dtype=bool)
    used = set(np.unique(run[~eager]).tolist())
    ok_times = np.nan_to_num(times_s, nan=0.0)
    return ListCost(tuple(sizes), int(counts.size), int(counts.sum()), int(pad.sum()), float((w * pad).sum()),
                    int(eager.sum()), float(ok_times[eager].sum()), float(ok_times.sum() if window_s is None else window_s),
                    tuple(s for s in sizes if s not in used))
