"""The garbage collector's pauses, per engine step, through ``gc.callbacks``.

CPython calls every function in ``gc.callbacks`` with ``("start", info)`` before a
collection and ``("stop", info)`` after it, on the thread that triggered it, with the
GIL held throughout (every other thread waits). :class:`GcWatch` keeps, between two
:meth:`GcWatch.take` calls, the number of collections that stopped, the oldest generation
collected and their summed time (``perf_counter_ns`` from "start" to "stop").

The decode loop (``inproc.run.decode``) takes twice around each step: right before the
step's first clock read (what accumulated in the gap since the previous step's end) and
right after its second (what ran inside ``Engine.step()``). That is as far as it can tell
whose a collection is: a collection is triggered by whichever allocation crosses the
threshold, on whatever thread, so one inside the step is charged to the engine even when
the garbage it walks was left by the driver, and one in the gap is charged to the driver
even when it runs inside an engine call the driver makes there (``add_request``, ``abort``,
the counters). A collection in another process (a TP worker) is not seen at all.

Cost: a callback is a Python call per collection phase (a few hundred nanoseconds against
a collection's tens of microseconds), and a take is a tuple and three stores per step;
``scripts/bench.py anatomy`` measures it switched on and off inside one engine.
"""
from __future__ import annotations

import gc
import time

from inproc.measure.steps import NO_GC


class GcWatch:
    """Collections between two :meth:`take` calls; installed in ``gc.callbacks`` by :meth:`start`."""

    def __init__(self) -> None:
        self.count = 0
        self.generation = -1
        self.ns = 0
        self._t = 0
        self.on = False

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t = time.perf_counter_ns()
            return
        self.ns += time.perf_counter_ns() - self._t
        self.count += 1
        g = info.get("generation", -1)
        if g > self.generation:
            self.generation = g

    def start(self) -> None:
        """Install the callback (once) and forget what came before."""
        if not self.on:
            gc.callbacks.append(self._callback)
            self.on = True
        self.take()

    def stop(self) -> None:
        """Remove the callback; :meth:`take` then returns "not recorded"."""
        if self.on:
            gc.callbacks.remove(self._callback)
            self.on = False

    def take(self) -> tuple[int, int, int]:
        """(collections, oldest generation or -1, nanoseconds) since the last take; (-1, -1, -1) when off."""
        if not self.on:
            return NO_GC[:3]
        out = (self.count, self.generation, self.ns)
        self.count, self.generation, self.ns = 0, -1, 0
        return out
