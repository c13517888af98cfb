"""The garbage collector's pauses, per engine step, through ``gc.callbacks``.

CPython calls every function in ``gc.callbacks`` with ``("start", info)`` before a
collection and ``("stop", info)`` after it, on the thread that triggered it, with the
GIL held throughout (every other thread waits). :class:`GcWatch` logs each collection
(``perf_counter_ns`` at its start and its stop, the generation collected) and nothing else:
the decode loop does no GC bookkeeping per step, and the log is filed to the steps in bulk
when the cell's rows are frozen (:meth:`GcWatch.columns`).

A collection is charged by when it stopped: to the step whose ``Engine.step()`` call it
stopped inside (between the step's two clock reads), or to the gap before that step (after
the previous step's end: the driver filing tokens and refilling, ``add_request``). That is
as far as it can tell whose a collection is: a collection is triggered by whichever
allocation crosses the threshold, on whatever thread, so one inside the step is charged to
the engine even when the garbage it walks was left by the driver, and one in the gap is
charged to the driver even when it runs inside an engine call the driver makes there
(``add_request``, ``abort``, the counters). A collection in another process (a TP worker)
is not seen at all.

Cost: a callback is a Python call per collection phase (a few hundred nanoseconds against
a collection's tens of microseconds); the loop's steps pay nothing else.
``scripts/bench.py fidelity`` measures it switched on and off inside one engine.
"""
from __future__ import annotations

import gc
import time
from array import array

import numpy as np

from inproc.measure.steps import GC_INTS, NO_GC

_NS = time.perf_counter_ns


class GcWatch:
    """Collections logged while installed in ``gc.callbacks`` (:meth:`start` to :meth:`stop`)."""

    def __init__(self) -> None:
        self._log = array("q")  # per collection: start ns, stop ns, generation
        self._t = 0
        self._taken = 0  # collections already returned by :meth:`take`
        self.on = False

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t = _NS()
            return
        self._log.extend((self._t, _NS(), info.get("generation", -1)))

    def start(self) -> None:
        """Install the callback (once) and forget what came before."""
        if not self.on:
            gc.callbacks.append(self._callback)
            self.on = True
        del self._log[:]
        self._taken = 0

    def stop(self) -> None:
        """Remove the callback; what was logged stays for :meth:`columns`; :meth:`take` returns "not recorded"."""
        if self.on:
            gc.callbacks.remove(self._callback)
            self.on = False

    def collections(self) -> np.ndarray:
        """The log so far, one row per collection: start ns, stop ns, generation."""
        return np.frombuffer(self._log, dtype=np.int64).reshape(-1, 3).copy()

    def take(self) -> tuple[int, int, int]:
        """(collections, oldest generation or -1, nanoseconds) since the last take; (-1, -1, -1) when off.

        For loops that charge collections as they go (``scripts/bench_anatomy.py``); the decode
        loop files the whole log at once (:meth:`columns`)."""
        if not self.on:
            return NO_GC[:3]
        log = self.collections()[self._taken:]
        self._taken += len(log)
        if not len(log):
            return 0, -1, 0
        return len(log), int(log[:, 2].max()), int((log[:, 1] - log[:, 0]).sum())

    def columns(self, t_start_s: np.ndarray, t_end_s: np.ndarray, t0: float) -> dict[str, np.ndarray]:
        """The steps' :data:`GC_INTS` from the log: steps ``[t_start_s, t_end_s]`` in seconds from ``t0``
        (the ``perf_counter`` reading they are relative to), in order; see the module docstring."""
        return charge(self.collections(), np.asarray(t_start_s, dtype=np.float64),
                      np.asarray(t_end_s, dtype=np.float64), t0)


def charge(log: np.ndarray, t_start_s: np.ndarray, t_end_s: np.ndarray, t0: float) -> dict[str, np.ndarray]:
    """Collections (rows of start ns, stop ns, generation) charged to steps by their stop: inside step i
    when it stopped in ``(t_start_s[i], t_end_s[i]]``, to the gap before step i when in
    ``(t_end_s[i - 1], t_start_s[i]]`` (before the first step's start: its gap); after the last step: none."""
    n = len(t_start_s)
    edges = np.empty(2 * n)
    edges[0::2], edges[1::2] = t_start_s, t_end_s
    stop_s = log[:, 1] * 1e-9 - t0
    pos = np.searchsorted(edges, stop_s, side="left")
    keep = pos < 2 * n
    pos, gen, ns = pos[keep], log[keep, 2], (log[keep, 1] - log[keep, 0])
    # Slot 2i: the gap before step i; slot 2i + 1: inside it.
    count, generation, total = np.zeros(2 * n, np.int64), np.full(2 * n, -1, np.int64), np.zeros(2 * n, np.int64)
    np.add.at(count, pos, 1)
    np.maximum.at(generation, pos, gen)
    np.add.at(total, pos, ns)
    inside, gap = slice(1, None, 2), slice(0, None, 2)
    values = (count[inside], generation[inside], total[inside], count[gap], generation[gap], total[gap])
    return dict(zip(GC_INTS, values))
