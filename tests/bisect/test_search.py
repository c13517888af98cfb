"""Which revision a bisect tries next, and what its verdicts say (pure functions of verdicts)."""
from __future__ import annotations

from inproc.bisect.oracle import BAD, GOOD, INSUFFICIENT, OTHER, SKIPPED
from inproc.bisect.search import first_bad, map_points, monotonic, next_target, transitions


def simulate(truth: list[str], skipped: set[int] = frozenset()) -> tuple[int | None, list[int], list[int]]:
    """Bisect a known list of verdicts (0 good, last bad): (found, could be, indices tried in order)."""
    last = len(truth) - 1
    verdicts = {0: GOOD, last: BAD}
    tried = []
    while (i := next_target(verdicts, last)) is not None:
        tried.append(i)
        verdicts[i] = SKIPPED if i in skipped else truth[i]
    found, could_be = first_bad(verdicts, last)
    return found, could_be, tried


def test_finds_the_first_bad_in_log2_steps():
    for first in range(1, 9):
        truth = [GOOD] * first + [BAD] * (9 - first)
        found, _, tried = simulate(truth)
        assert found == first
        assert len(tried) <= 3


def test_a_skipped_revision_is_stepped_around():
    truth = [GOOD] * 6 + [BAD] * 3
    found, _, tried = simulate(truth, skipped={4})
    assert tried[0] == 4 and 4 not in tried[1:]
    assert found == 6


def test_skipped_next_to_the_change_leaves_it_ambiguous():
    truth = [GOOD] * 6 + [BAD] * 3
    found, could_be, _ = simulate(truth, skipped={5})
    assert found is None and could_be == [5, 6]


def test_another_change_counts_as_not_bad():
    truth = [GOOD, GOOD, OTHER, OTHER, OTHER, BAD, BAD]
    assert simulate(truth)[0] == 5


def test_a_bump_before_the_regression_is_a_change_the_map_shows_and_the_bisect_follows_the_last():
    verdicts = {0: GOOD, 2: BAD, 4: GOOD, 6: BAD, 8: BAD, 5: GOOD, 3: INSUFFICIENT}
    assert not monotonic(verdicts)
    assert [(t.before, t.after, t.now) for t in transitions(verdicts)] == [(0, 2, BAD), (2, 4, GOOD), (5, 6, BAD)]
    assert first_bad(verdicts, 8) == (6, [6])


def test_map_points_are_spread_evenly_inside_the_range():
    assert map_points(8, 3) == [2, 4, 6]
    assert map_points(8, 1) == [4]
    assert map_points(2, 5) == [1]
    assert map_points(8, 0) == []
