"""The slow-step rule applied online, step by step as a window goes (``--break-at-slow-step``, ``--profile-slow``).

The rule is ``inproc.measure.slow``'s (:func:`~inproc.measure.slow.threshold_s`); here each window step is judged
as it ends, against the window steps of its kind before it, by :class:`OnlineSlow`, at little cost between two
engine steps.
"""
from __future__ import annotations

from bisect import insort

import numpy as np

from inproc.measure.slow import MIN_STEPS, Reference, threshold_s
from inproc.types import GRAPH_MODES, StepResult

#: Steps the online rule may leave unsorted into their kinds (:class:`OnlineSlow`).
PENDING = 4


def batch_kind(res: StepResult) -> tuple[int, int, int]:
    """A step's batch as the rule's kinds read it as the step ends: (decode requests, scheduled tokens, CUDA-graph
    mode: known only where the step returned its own batch's forward, -1 otherwise; -1 for anything not reported)."""
    b, fw = res.batch, res.forward
    mode = GRAPH_MODES.index(fw.graph_mode) if fw is not None and res.returned_lag == 0 and fw.graph_mode in GRAPH_MODES \
        else -1
    return b.num_decode_reqs if b else -1, res.num_scheduled_tokens, mode


class _Kind:
    """One kind's window steps so far: their times, sorted (``times``) but for the ``tail`` not sorted in yet, and
    their rows in window order."""

    __slots__ = ("name", "times", "tail", "rows")

    def __init__(self, name: str) -> None:
        self.name, self.times, self.tail, self.rows = name, [], [], []

    def sorted_times(self) -> list[float]:
        if self.tail:
            self.times.extend(self.tail)
            self.times.sort()
            self.tail.clear()
        return self.times


class OnlineSlow:
    """The rule applied as a window goes: each step against every window step of its kind before it.

    :meth:`judge` is called once per window step, in order, between two engine steps (where the
    engine has left this code cold in the CPU's caches), so it does as little as it can:

    - A step of the same batch shape as the one before, no longer than ``_bound``, is not slow
      whatever the steps not yet sorted in are, and is only put aside (two list appends); every
      :data:`PENDING` such steps are sorted in together. ``_bound`` is the floor's limit
      (``threshold_s(m, 0)``, the lowest any MAD gives) of a median ``m`` no larger than the shape
      kind's true one with up to PENDING more steps in it: adding p steps to n sorted ones moves
      the lower middle down by at most p places, so ``m`` is the sorted time at (n − 1) // 2 − PENDING.
    - Any other step sorts in what was put aside, then is judged exactly: the shape's kind keeps
      its times sorted (``bisect.insort``), its median read at an index; the decode batch's kind and
      the window's take new times unsorted and sort them only when a step is judged against them
      (a step whose shape has too few steps). The MAD is computed only for a step beyond the floor's
      limit, below which no step is slow.
    """

    def __init__(self) -> None:
        self._kinds: dict[tuple, _Kind] = {}
        self._shape: tuple[int, int, int] | None = None  # the last step's batch shape ...
        self._its: tuple[_Kind, ...] = ()  # ... and its three kinds, most specific first
        self._bound = -1.0  # a step of that shape no longer than this is not slow (none before the kind is large)
        self._aside_t: list[float] = []  # steps of that shape put aside: their times ...
        self._aside_r: list[int] = []  # ... and rows

    def judge(self, row: int, time_s: float, num_decode_reqs: int, num_scheduled_tokens: int,
              graph_mode: int) -> Reference | None:
        """The reference step ``row`` exceeded (it is slow), or None; then count the step under its kinds."""
        shape = (num_decode_reqs, num_scheduled_tokens, graph_mode)
        if time_s <= self._bound and shape == self._shape:
            self._aside_t.append(time_s)
            self._aside_r.append(row)
            if len(self._aside_r) >= PENDING:
                self._sort_in()
            return None
        self._sort_in()
        if shape != self._shape:
            self._shape, self._its = shape, tuple(self._kind(key) for key in (
                ("shape",) + shape, ("decode batch", num_decode_reqs), ("window",)))
        found = None
        for kind in self._its:
            n = len(kind.times) + len(kind.tail)
            if n >= MIN_STEPS:
                times = kind.sorted_times()
                med = times[n // 2] if n % 2 else (times[n // 2 - 1] + times[n // 2]) / 2
                if time_s > threshold_s(med, 0.0):
                    mad = float(np.median(np.abs(np.asarray(times) - med)))
                    if time_s > threshold_s(med, mad):
                        found = Reference(kind.name, np.asarray(kind.rows), med, mad)
                break
        self._aside_t.append(time_s)  # counted as the steps put aside are: nothing was aside before it
        self._aside_r.append(row)
        self._sort_in()
        return found

    def _sort_in(self) -> None:
        """The steps put aside (or the one just judged), sorted into their shape's kind (the other two take them
        unsorted), in window order; the bound set again."""
        if self._aside_r:
            times = self._its[0].times
            for t in self._aside_t:
                insort(times, t)
            for kind in self._its:
                kind.rows.extend(self._aside_r)
            self._its[1].tail.extend(self._aside_t)
            self._its[2].tail.extend(self._aside_t)
            self._aside_t.clear()
            self._aside_r.clear()
            self._set_bound()

    def _set_bound(self) -> None:
        times = self._its[0].times  # the shape's own kind (never a tail): judged against once it has MIN_STEPS
        low = (len(times) - 1) // 2 - PENDING
        self._bound = threshold_s(times[low], 0.0) if low >= 0 and len(times) >= MIN_STEPS else -1.0

    def _kind(self, key: tuple) -> _Kind:
        kind = self._kinds.get(key)
        if kind is None:
            kind = self._kinds[key] = _Kind(key[0])
        return kind
