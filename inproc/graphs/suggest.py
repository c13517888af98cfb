"""The least-waste list of at most K capture sizes for the token counts a run saw: exact, by dynamic programming.

What is minimized (``weights``, one per step):

- ``--weight tokens`` (each step weighs 1): the padded tokens Σ over the steps of
  (padded − unpadded), each window step counted once, so a count seen often weighs more;
- ``--weight time`` (each step weighs its ``Engine.step()`` time in seconds): Σ step time ×
  (padded − unpadded), in token·seconds, so a padded token of a slow step (a long context,
  a large batch) weighs more than one of a fast step.

The method: sort the distinct counts seen, v_1 < … < v_n. A list of sizes cuts them into
runs; every count of a run is padded to the run's size, and no size needs to lie between two
counts (lowering it to the largest count it serves pads less), so the sizes are chosen among
the counts seen and the largest count seen, v_n, is always one of them: no step runs without
a graph. ``best[k][j]``, the least waste of v_1..v_j with k sizes the last of which is v_j, is
``min over i of best[k−1][i−1] + cost(i, j)`` with ``cost(i, j) = v_j × W(i..j) − Σ w·v over
i..j`` (prefix sums): a 1-D partition, exact, O(K·n²) (numpy over i). The tests check it
against every K-subset of n ≤ 12 counts.

``multiple``: sizes must be multiples of it (an engine that rounds its sizes up so, as vLLM's
FULL decode graphs are rounded to multiples of 1 + k under speculative decoding): a run's size is
then its largest count rounded up, and the same recursion holds with that size in ``cost``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: --weight choices: what each step's padded tokens are multiplied by.
WEIGHTS = ("tokens", "time")


@dataclass(frozen=True)
class Pick:
    """A list of sizes and the waste it reaches on the counts it was chosen for."""

    sizes: tuple[int, ...]
    waste_weighted: float  # Σ weight × (padded − unpadded), the minimized quantity
    waste_tokens: int  # Σ (padded − unpadded), each step counted once


def _grouped(counts: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct counts, and per count the Σ weights and the number of steps."""
    values, inverse, steps = np.unique(np.asarray(counts, dtype=np.int64), return_inverse=True, return_counts=True)
    w = np.bincount(inverse, weights=np.asarray(weights, dtype=np.float64), minlength=values.size)
    return values, w, steps


def round_up(values: np.ndarray, multiple: int) -> np.ndarray:
    """``values`` rounded up to multiples of ``multiple``."""
    return -(-np.asarray(values, dtype=np.int64) // multiple) * multiple


#: Up to this many distinct counts the table is filled a whole row at a time (an n × n matrix of costs).
MATRIX_MAX = 2048


def _table(values: np.ndarray, w: np.ndarray, k_max: int, multiple: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """``best[k-1][j]`` and the start ``i`` of the last run, for k = 1..k_max (see the module docstring)."""
    pw = np.concatenate([[0.0], np.cumsum(w)])
    ps = np.concatenate([[0.0], np.cumsum(w * values.astype(np.float64))])
    v = round_up(values, multiple).astype(np.float64)  # the size a run ending at v_j is padded to
    n = v.size
    best, start = [v * pw[1:] - ps[1:]], [np.zeros(n, dtype=np.int64)]  # k = 1: one run v_1..v_j
    # cost[i, j]: the run v_i..v_j padded to v_j (meaningful for i <= j; the rest is masked below).
    cost = None
    if n <= MATRIX_MAX:
        cost = v[None, :] * (pw[None, 1:] - pw[:-1, None]) - (ps[None, 1:] - ps[:-1, None])
        cost[np.tril_indices(n, -1)] = np.inf
    for k in range(2, k_max + 1):
        prev = np.full(n, np.inf)
        prev[k - 1:] = best[-1][k - 2:n - 1]  # prev[i] = best[k-1][i-1]: k-1 sizes end at v_{i-1}
        if cost is not None:
            cand = prev[:, None] + cost
            arg = np.argmin(cand, axis=0)
            cur = cand[arg, np.arange(n)]
        else:
            cur, arg = _row_by_row(prev, v, pw, ps, k)
        best.append(cur)
        start.append(arg)
    return best, start


def _row_by_row(prev: np.ndarray, v: np.ndarray, pw: np.ndarray, ps: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """One level of the table, j by j (numpy over i), for more counts than fit a matrix."""
    n = v.size
    cur, arg = np.full(n, np.inf), np.zeros(n, dtype=np.int64)
    for j in range(k - 1, n):
        i = np.arange(k - 1, j + 1)  # the last run is v_i..v_j
        cand = prev[i] + v[j] * (pw[j + 1] - pw[i]) - (ps[j + 1] - ps[i])
        at = int(np.argmin(cand))
        cur[j], arg[j] = cand[at], i[at]
    return cur, arg


def _trace(values: np.ndarray, start: list[np.ndarray], k: int, multiple: int) -> tuple[int, ...]:
    sizes, j = [], values.size - 1
    for level in range(k, 0, -1):
        sizes.append(int(round_up(values[j], multiple)))
        j = int(start[level - 1][j]) - 1
    return tuple(sorted(set(sizes)))


def _padding(values: np.ndarray, sizes: tuple[int, ...]) -> np.ndarray:
    grid = np.asarray(sizes, dtype=np.int64)
    return grid[np.searchsorted(grid, values)] - values


def least_waste_curve(counts: np.ndarray, weights: np.ndarray, k_max: int, multiple: int = 1) -> tuple[Pick, ...]:
    """For K = 1..``k_max``: the least-waste list of at most K sizes (always covering the largest
    count), each the exact optimum; from K = number of distinct counts on, every count is a size."""
    if k_max < 1 or multiple < 1:
        raise ValueError("k_max and multiple must be 1 or more")
    values, w, steps = _grouped(counts, weights)
    if values.size == 0:
        return ()
    levels = min(k_max, values.size)
    best, start = _table(values, w, levels, multiple)
    picks, top = [], None
    for k in range(1, k_max + 1):
        if k <= levels:
            sizes = _trace(values, start, k, multiple)
            pad = _padding(values, sizes)
            # Summed again from the list itself: the table's prefix sums of time weights carry rounding.
            pick = Pick(sizes, float((w * pad).sum()), int((steps * pad).sum()))
            top = pick if top is None or pick.waste_weighted < top.waste_weighted else top
        picks.append(top)  # at most K: a longer list that pads no less is not taken
    return tuple(picks)


def least_waste(counts: np.ndarray, weights: np.ndarray, k: int, multiple: int = 1) -> Pick:
    """The least-waste list of at most ``k`` sizes (see the module docstring)."""
    return least_waste_curve(counts, weights, k, multiple)[-1]
