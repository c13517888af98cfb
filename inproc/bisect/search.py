"""Which target to try next, and what the verdicts so far say: pure functions of indices and verdicts.

Targets are indexed oldest first: 0 is the good revision, ``last`` the bad one. A verdict
of "other" (slower for another reason) counts as not bad; "skipped" (failed to build or
run) and "insufficient data" are tried no more and decide nothing, as ``git bisect skip``.

With verdicts that are not monotonic (a map found a bad revision with a good one after it),
the bisect follows the **last** change from good to bad: the one the bad revision carries.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from inproc.bisect.oracle import BAD, GOOD, INSUFFICIENT, OTHER, SKIPPED

NOT_BAD = (GOOD, OTHER)
CLOSED = (SKIPPED, INSUFFICIENT)


def map_points(last: int, count: int) -> list[int]:
    """``count`` indices spread evenly strictly between 0 and ``last`` (fewer when the range is short)."""
    points = [round(k * last / (count + 1)) for k in range(1, count + 1)]
    return sorted({p for p in points if 0 < p < last})


@dataclass(frozen=True)
class Bracket:
    """The last change from good to bad so far: ``good`` is not bad, ``bad`` is, nothing decided between."""

    good: int
    bad: int

    def open(self, verdicts: Mapping[int, str]) -> list[int]:
        """Indices between the two still to try."""
        return [i for i in range(self.good + 1, self.bad) if i not in verdicts]


def bracket(verdicts: Mapping[int, str], last: int) -> Bracket:
    """The latest not-bad index and the first bad index after it (``last`` is bad)."""
    good = max((i for i, v in verdicts.items() if v in NOT_BAD and i < last), default=0)
    bad = min((i for i, v in verdicts.items() if v == BAD and i > good), default=last)
    return Bracket(good, bad)


def next_target(verdicts: Mapping[int, str], last: int) -> int | None:
    """The open index nearest the middle of the bracket (the lower on a tie); None when none is left."""
    b = bracket(verdicts, last)
    candidates = b.open(verdicts)
    if not candidates:
        return None
    middle = (b.good + b.bad) / 2
    return min(candidates, key=lambda i: (abs(i - middle), i))


def first_bad(verdicts: Mapping[int, str], last: int) -> tuple[int | None, list[int]]:
    """(the first bad index, when the bracket is closed on both sides; else None, the indices it could be)."""
    b = bracket(verdicts, last)
    if b.open(verdicts):
        return None, []
    between = [i for i in range(b.good + 1, b.bad + 1)]
    return (b.bad, [b.bad]) if len(between) == 1 else (None, between)


@dataclass(frozen=True)
class Transition:
    """Two neighbouring decided targets whose verdicts differ: a change lies between them."""

    before: int
    after: int
    was: str
    now: str


def transitions(verdicts: Mapping[int, str]) -> list[Transition]:
    """Every change between decided targets in order (skipped and insufficient ones are passed over)."""
    decided = sorted((i, v) for i, v in verdicts.items() if v in (GOOD, BAD, OTHER))
    return [Transition(a, b, va, vb) for (a, va), (b, vb) in zip(decided, decided[1:]) if va != vb]


def monotonic(verdicts: Mapping[int, str]) -> bool:
    """No good revision after a bad one."""
    decided = sorted((i, v) for i, v in verdicts.items() if v in (GOOD, BAD, OTHER))
    seen_bad = False
    for _, v in decided:
        if v == BAD:
            seen_bad = True
        elif seen_bad:
            return False
    return True
