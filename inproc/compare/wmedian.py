"""The median of a multiset kept as values with counts, and of many reweightings of it, never expanded.

A cell's per-token gaps are mostly one value per decode step, shared by the C requests the
step served, so a window of 400,000 gaps holds a few thousand distinct values. The median
is read from the running sum of the counts at the middle rank(s), exactly as ``np.median``
of the expanded multiset: the middle value for an odd count, ``(low + high) / 2`` of the two
middle values for an even one (``np.median`` takes their mean, the same two operations).

For the block bootstrap, a resample weights unit u's values by the times u was drawn;
:func:`resampled_medians` finds each resample's middle ranks by bisection over the distinct
values, where the running weight at value j is ``draws · table[j]`` (:func:`rank_table`),
so a resample costs O(units × log values), not O(values).
"""
from __future__ import annotations

import numpy as np


def median_of_counts(values: np.ndarray, counts: np.ndarray) -> float:
    """``np.median(np.repeat(values, counts))`` exactly, with ``values`` sorted ascending (nan when empty)."""
    cum = np.cumsum(counts)
    total = int(cum[-1]) if cum.size else 0
    if total == 0 or np.isnan(values[-1]):  # np.median: nan when any value is
        return float("nan")
    low, high = values[np.searchsorted(cum, [(total + 1) // 2, total // 2 + 1])]
    return float(low if total % 2 == 1 else (low + high) / 2)


def rank_table(values: np.ndarray, unit_of: np.ndarray, counts: np.ndarray, n_units: int) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values, table): ``table[j, u]`` is how many of unit u's values are at most the j-th distinct value.

    ``values`` sorted ascending, ``unit_of`` and ``counts`` in the same order.
    """
    new = np.concatenate([[True], values[1:] != values[:-1]])
    index = np.cumsum(new) - 1  # each value's place among the distinct values
    distinct = values[new]
    flat = np.bincount(index * n_units + unit_of, weights=counts, minlength=distinct.size * n_units)
    return distinct, np.cumsum(flat.reshape(distinct.size, n_units).astype(np.int64), axis=0)


def resampled_medians(distinct: np.ndarray, table: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """Per row of ``draws`` (times each unit was drawn), the median of the values weighted by their unit's draws.

    The weighted multiset's median as :func:`median_of_counts` takes it; nan where nothing was drawn.
    """
    total = draws @ table[-1]
    low_at = _first_reaching(table, draws, (total + 1) // 2)  # 1-based ranks of the middle value(s)
    # The upper middle rank is mostly at the same value (ties: a step's gap is every request's); search the rest.
    high_at = low_at.copy()
    on = np.flatnonzero(np.einsum("ij,ij->i", draws, table[low_at]) < total // 2 + 1)
    high_at[on] = _first_reaching(table, draws[on], total[on] // 2 + 1)
    low, high = distinct[low_at], distinct[high_at]
    out = np.where(total % 2 == 1, low, (low + high) / 2)
    return np.where(total > 0, out, np.nan)


def _first_reaching(table: np.ndarray, rows: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """Per row, the first j whose running weight ``rows[i] · table[j]`` reaches ``ranks[i]`` (bisection; the last j if none)."""
    lo = np.zeros(ranks.size, dtype=np.int64)
    hi = np.full(ranks.size, table.shape[0] - 1, dtype=np.int64)
    for _ in range((table.shape[0] - 1).bit_length()):  # each round halves every [lo, hi]
        mid = (lo + hi) // 2
        reached = np.einsum("ij,ij->i", rows, table[mid]) >= ranks
        hi = np.where(reached, mid, hi)
        lo = np.where(reached, lo, np.minimum(mid + 1, hi))  # hi: none reaches (a resample of empty units)
    return lo
