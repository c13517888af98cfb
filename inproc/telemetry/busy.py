"""Before the matrix: is the machine busy already? One warning, up front, with its fix (pyperf's habit).

:class:`BusyCheck` takes one host sample when a run starts and one when its engine is built (seconds
later, at no cost to the run), and judges the span between by the disturbance rule's CPU
thresholds (``inproc.telemetry.disturbed``): the CPU other processes used, and steal.
"""
from __future__ import annotations

import time

from inproc.telemetry import metrics as m
from inproc.telemetry.disturbed import Disturbance, causes, cpu_figures
from inproc.telemetry.host_reader import open_host_reader

FIX = ("cells measured now may be disturbed (stop the other work or wait for it; "
       "--retry-disturbed N measures a disturbed cell again up to N times)")


class BusyCheck:
    """Samples the host at construction and again at :meth:`warning`."""

    def __init__(self) -> None:
        self._reader, _ = open_host_reader(4)
        if self._reader is not None:
            self._reader.new_cell()
            self._t0 = time.perf_counter()
            self._reader.take(self._t0, closing=True)

    def warning(self) -> str | None:
        """``other processes are using 1.2 of 2 cores; cells measured now may be disturbed (...)``, or None."""
        if self._reader is None:
            return None
        self._reader.list_children()  # the engine's workers, started while it was built
        t1 = time.perf_counter()
        self._reader.take(t1, closing=True)
        try:
            cpu = cpu_figures(self._reader.series(), self._t0, t1)
        except m.Absent:
            return None
        found = causes(Disturbance(**cpu))
        if not found:
            return None
        if found[0].startswith("other processes"):
            head = f"other processes are using {cpu['other_cores']:.1f} of {cpu['host_cores']:.0f} cores"
        else:
            head = found[0].removesuffix(" during the window")
        return f"{head}; {FIX}"
