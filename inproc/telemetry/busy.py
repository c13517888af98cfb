"""Before the matrix: is the machine busy already? One warning, up front, with its fix (pyperf's habit).

:class:`BusyCheck` takes one host sample when a run starts and one when its engine is built (seconds
later, at no cost to the run), and judges the span between by the disturbance rule's thresholds for the
CPU other processes used (``inproc.telemetry.disturbed``). The steal it reads there is the run's steady
steal: said once, as a note, and each cell's steal is judged beyond it.
"""
from __future__ import annotations

import time

from inproc.telemetry import metrics as m
from inproc.telemetry.disturbed import Disturbance, cpu_figures, other_cause
from inproc.telemetry.host_reader import open_host_reader

FIX = ("cells measured now may be disturbed (stop the other work or wait for it; "
       "--retry-disturbed N measures a disturbed cell again up to N times)")


class BusyCheck:
    """Samples the host at construction and again at :meth:`read`."""

    def __init__(self) -> None:
        self._reader, _ = open_host_reader(4)
        self.figures: dict[str, float | None] | None = None  # the span's CPU figures, once read
        if self._reader is not None:
            self._reader.new_cell()  # the CPUs this process may run on: the engine's, once built here
            self._t0 = time.perf_counter()
            self._reader.take(self._t0, closing=True)

    def read(self) -> None:
        """The second sample: the span's figures (none where the host cannot be read)."""
        if self._reader is None:
            return
        self._reader.list_children()  # the engine's workers, started while it was built
        t1 = time.perf_counter()
        self._reader.take(t1, closing=True)
        try:
            self.figures = cpu_figures(self._reader.series(), self._t0, t1)
        except m.Absent:
            self.figures = None

    @property
    def steal_share(self) -> float | None:
        """The hypervisor's share of the running time of this process's CPUs over the span (steal ÷ (busy −
        steal)), or None where it was not read."""
        return None if self.figures is None else self.figures["steal_share"]

    def warning(self) -> str | None:
        """``other processes are using 1.2 of 2 cores; cells measured now may be disturbed (...)``, or None."""
        if self.figures is None or not other_cause(Disturbance(**self.figures)):
            return None
        return f"other processes are using {self.figures['other_cores']:.1f} of {self.figures['host_cores']:.0f} cores; {FIX}"

    def steal_note(self) -> str | None:
        """The run's steady steal, once: ``note: the hypervisor took 0.8 % of ...``, or None where not read."""
        if self.steal_share is None:
            return None
        return (f"note: the hypervisor took {100 * self.steal_share:.1f} % of the CPU time on the engine's CPUs "
                f"(steal) while it was built; each cell is judged by the steal beyond that")
