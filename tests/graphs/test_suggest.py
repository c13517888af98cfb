"""The least-waste list against brute force: every list of K out of n sizes, n <= 12, on random counts (fixed seeds)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from inproc.graphs import suggest
from inproc.graphs.padding import padded_tokens
from inproc.graphs.suggest import least_waste, least_waste_curve, round_up


def brute_force(counts: np.ndarray, weights: np.ndarray, k_max: int, multiple: int = 1) -> list[float]:
    """For k = 1..k_max, the least Σ weight × (padded − unpadded) over every list of at most k sizes
    chosen among the counts seen (rounded up to ``multiple``) that covers the largest count."""
    candidates = np.unique(round_up(np.unique(counts), multiple))
    top = int(candidates[-1])
    exact = [np.inf] * (k_max + 1)  # exact[k]: the best list of exactly k sizes
    for size in range(1, min(k_max, candidates.size) + 1):
        for rest in itertools.combinations(candidates[:-1].tolist(), size - 1):
            sizes = tuple(rest) + (top,)
            exact[size] = min(exact[size], float((weights * (padded_tokens(counts, sizes) - counts)).sum()))
    return [min(exact[1:k + 1]) for k in range(1, k_max + 1)]


def _case(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 13))
    values = np.sort(rng.choice(np.arange(1, 200), size=n, replace=False))
    counts = rng.choice(values, size=int(rng.integers(n, 60)))
    counts[: n] = values  # every value seen at least once: n distinct counts
    return counts, rng.uniform(0.001, 0.05, counts.size)


@pytest.mark.parametrize("seed", range(40))
def test_the_curve_is_the_brute_force_optimum_for_every_k(seed):
    counts, times = _case(seed)
    n = np.unique(counts).size
    for weights in (np.ones(counts.size), times):
        curve = least_waste_curve(counts, weights, n + 2)
        truth = brute_force(counts, weights, n + 2)
        for k, pick in enumerate(curve, start=1):
            assert pick.waste_weighted == pytest.approx(truth[k - 1], rel=1e-12, abs=1e-9)
            assert len(pick.sizes) <= k and pick.sizes[-1] == counts.max()  # nothing runs without a graph
            # The waste it reports is the waste of the list it returns.
            assert pick.waste_tokens == int((padded_tokens(counts, pick.sizes) - counts).sum())
            assert pick.waste_weighted == pytest.approx(float((weights * (padded_tokens(counts, pick.sizes) - counts)).sum()))
        assert curve[n - 1].waste_weighted == 0  # a size per count pads nothing


@pytest.mark.parametrize("seed", range(12))
def test_with_sizes_rounded_to_a_multiple(seed):
    counts, _ = _case(100 + seed)
    ones = np.ones(counts.size)
    truth = brute_force(counts, ones, 5, 6)
    for k in (1, 2, 3, 5):
        pick = least_waste(counts, ones, k, multiple=6)
        assert all(s % 6 == 0 for s in pick.sizes) and pick.sizes[-1] >= counts.max()
        assert pick.waste_weighted == pytest.approx(truth[k - 1])


def test_the_curve_never_rises_and_time_weighs_slow_steps():
    counts = np.array([3, 3, 3, 5, 8])
    # Tokens: one size of 8 pads 5+5+5+3 = 18; the best two sizes are 3 and 8 (pads 3).
    curve = least_waste_curve(counts, np.ones(5), 3)
    assert [p.waste_tokens for p in curve] == [18, 3, 0] and curve[1].sizes == (3, 8)
    # By time: the step of 5 tokens is 100 times slower, so its padding is what two sizes avoid.
    slow = least_waste(counts, np.array([0.01, 0.01, 0.01, 1.0, 0.01]), 2)
    assert slow.sizes == (5, 8) and slow.waste_tokens == 6


@pytest.mark.parametrize("seed", range(8))
def test_the_row_by_row_table_is_the_brute_force_optimum(seed, monkeypatch):
    """More distinct counts than MATRIX_MAX fill the table j by j; forced here on small cases, that path must
    reach the same optimum (a wrong argument to it, or the matrix used where it is None, fails)."""
    monkeypatch.setattr(suggest, "MATRIX_MAX", 0)
    counts, times = _case(200 + seed)
    n = np.unique(counts).size
    for weights, multiple in ((np.ones(counts.size), 1), (times, 1), (np.ones(counts.size), 4)):
        truth = brute_force(counts, weights, n + 1, multiple)
        for k, pick in enumerate(least_waste_curve(counts, weights, n + 1, multiple), start=1):
            assert pick.waste_weighted == pytest.approx(truth[k - 1], rel=1e-12, abs=1e-9)


def test_the_matrix_is_used_up_to_matrix_max_distinct_counts_and_not_beyond(monkeypatch):
    """Five distinct counts: a limit of 5 fills the matrix, 4 goes row by row (``<`` for ``<=`` fails), both exact."""
    counts = np.array([1, 2, 4, 7, 11, 11])
    used, real = [], suggest._row_by_row
    monkeypatch.setattr(suggest, "_row_by_row", lambda *args: used.append(args[-1]) or real(*args))
    for limit, row_by_row in ((5, False), (4, True)):
        used.clear()
        monkeypatch.setattr(suggest, "MATRIX_MAX", limit)
        pick = least_waste(counts, np.ones(counts.size), 3)
        assert bool(used) is row_by_row
        # 1 -> 2 and 4 -> 7: 1 + 3 tokens, the brute force's optimum.
        assert pick.sizes == (2, 7, 11) and pick.waste_tokens == 4 == brute_force(counts, np.ones(6), 3)[2]


@pytest.mark.parametrize("k_max, multiple", [(0, 1), (1, 0)])
def test_k_or_multiple_below_one_is_refused_with_the_reason(k_max, multiple):
    """Either below 1 is refused (``and`` for ``or`` lets one through), in these words."""
    with pytest.raises(ValueError, match=r"^k_max and multiple must be 1 or more$"):
        least_waste_curve(np.array([3, 5]), np.ones(2), k_max, multiple)


def test_a_longer_list_that_pads_no_less_is_not_taken():
    """The step of 3 tokens weighs nothing, so a size for it saves no weighted waste: K = 2 keeps the one
    size (``<=`` for ``<``, or always taking the longer list, returns (3, 8)). Given any weight, 3 is taken."""
    assert [p.sizes for p in least_waste_curve(np.array([3, 8]), np.array([0.0, 1.0]), 2)] == [(8,), (8,)]
    assert [p.sizes for p in least_waste_curve(np.array([3, 8]), np.array([1e-6, 1.0]), 2)] == [(8,), (3, 8)]
