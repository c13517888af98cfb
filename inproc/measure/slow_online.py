"""The slow-step rule applied online, step by step as a window goes (``--break-at-slow-step``, ``--profile-slow``).

The rule is ``inproc.measure.slow``'s (:func:`~inproc.measure.slow.threshold_s`); here each window step is judged
as it ends, against the window steps of its kind before it, by :class:`OnlineSlow`, at little cost between two
engine steps: most steps are found not slow from their time alone, their kind read later in bulk.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Hashable

import numpy as np

from inproc.measure.slow import MIN_STEPS, Reference, threshold_s
from inproc.types import GRAPH_MODES, StepResult

#: Steps the online rule may leave unsorted into their kinds (:class:`OnlineSlow`): at least PENDING, and up to
#: one in SPREAD of the window steps so far.
PENDING = 64
SPREAD = 8


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
    engine has left this code cold in the CPU's caches), so it does as little as it can. A step
    it can tell is not slow is only put aside (three list appends), its kind not read; the steps
    put aside are sorted into their kinds together, every ``_cap`` of them (max(:data:`PENDING`,
    :data:`SPREAD`-th of the window steps so far)) or before a step is judged exactly. Adding p
    steps to n sorted ones moves the lower middle down by at most p places, so a bound read with
    room for ``_cap`` steps holds whatever the steps put aside are. A step is put aside where:

    - it is no longer than ``_floor``, the floor's limit (``threshold_s(m, 0)``, the lowest any
      MAD gives) of the window's shortest step so far: every reference's median is at least that
      step's time, so no reference's limit is lower (the window's first step, with nothing before
      it, is never slow); or
    - its kind is the last step judged exactly's and it is no longer than ``_bound``, the floor's
      limit of a median ``m`` no larger than that kind's true one with up to ``_cap`` more steps
      in it: ``m`` is the kind's sorted time at (n − 1) // 2 − ``_cap`` (about its 3/8 quantile;
      the floor's limit is 3 medians, far above it).

    Any other step is judged exactly: the steps put aside sorted in first (each kind takes new
    times unsorted and sorts them, in one ``list.sort`` that merges them into the sorted run, when
    it is read: the shape's kind for its bound, the decode batch's and the window's only when a
    step is judged against them), the median read at an index. The MAD is computed only for a step
    beyond the floor's limit, below which no step is slow.

    ``kind_of`` reads a step's kind, (decode requests, scheduled tokens, CUDA-graph mode), from
    what :meth:`judge` is handed for it (:func:`batch_kind` of a ``StepResult``).
    """

    def __init__(self, kind_of: Callable[[Any], tuple[int, int, int]] = batch_kind) -> None:
        self._kind_of = kind_of
        self._kinds: dict[tuple, _Kind] = {}
        self._window = self._kind(("window",))
        self._shape: Hashable = None  # the kind of the last step judged exactly ...
        self._its: tuple[_Kind, ...] = ()  # ... its three kinds, most specific first ...
        self._bound = -1.0  # ... and the bound under which a step of it is not slow (none before the kind is large)
        self._shortest = math.inf  # the window's shortest step so far ...
        self._floor = math.inf  # ... and the floor's limit of it: no step this short is slow (the first: none)
        self._cap = PENDING  # steps put aside at most
        self._aside_r: list[int] = []  # steps put aside: their rows ...
        self._aside_t: list[float] = []  # ... times ...
        self._aside_s: list = []  # ... and what their kinds are read from

    def judge(self, row: int, time_s: float, step) -> Reference | None:
        """The reference step ``row`` exceeded (it is slow), or None; then count the step under its kinds. ``step``
        is what its kind is read from, only where the time alone does not tell."""
        if time_s > self._floor:
            shape = self._kind_of(step)
            if time_s > self._bound or shape != self._shape:
                return self._judged(row, time_s, shape)
        elif time_s < self._shortest:
            self._shortest, self._floor = time_s, threshold_s(time_s, 0.0)
        self._aside_r.append(row)
        self._aside_t.append(time_s)
        self._aside_s.append(step)
        if len(self._aside_r) >= self._cap:
            self._sort_in()
        return None

    def _judged(self, row: int, time_s: float, shape: tuple[int, int, int]) -> Reference | None:
        """Step ``row`` judged exactly against the steps before it, all sorted in; then counted."""
        self._sort_in()
        if shape != self._shape:
            self._shape, self._its = shape, self._kinds_of(shape)
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
        self._count(row, time_s, self._its)  # not the shortest: it is past three times that
        self._set_bound()
        return found

    def _sort_in(self) -> None:
        """The steps put aside, their kinds read, counted in window order; the bounds set again."""
        if not self._aside_r:
            return
        shape, its = self._shape, self._its
        for row, time_s, step in zip(self._aside_r, self._aside_t, self._aside_s):
            s = self._kind_of(step)
            if s != shape:
                shape, its = s, self._kinds_of(s)
            self._count(row, time_s, its)
        self._aside_r.clear()
        self._aside_t.clear()
        self._aside_s.clear()
        self._set_bound()

    @staticmethod
    def _count(row: int, time_s: float, its: tuple[_Kind, ...]) -> None:
        """One step under its three kinds, at their tails (sorted in when a kind's times are read)."""
        for kind in its:
            kind.tail.append(time_s)
            kind.rows.append(row)

    def _set_bound(self) -> None:
        """The bound of the last kind judged exactly, with room for the steps that may be put aside from now."""
        self._cap = cap = max(PENDING, len(self._window.rows) // SPREAD)
        if not self._its:
            return
        times = self._its[0].sorted_times()  # the shape's own kind: judged against once it has MIN_STEPS
        low = (len(times) - 1) // 2 - cap
        self._bound = threshold_s(times[low], 0.0) if low >= 0 and len(times) >= MIN_STEPS else -1.0

    def _kinds_of(self, shape: tuple[int, int, int]) -> tuple[_Kind, _Kind, _Kind]:
        """A step kind's three references, most specific first: its shape's, its decode batch's, the window's."""
        return self._kind(("shape",) + shape), self._kind(("decode batch", shape[0])), self._window

    def _kind(self, key: tuple) -> _Kind:
        kind = self._kinds.get(key)
        if kind is None:
            kind = self._kinds[key] = _Kind(key[0])
        return kind
