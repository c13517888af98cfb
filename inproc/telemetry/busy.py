"""Before the matrix: is the machine busy already? One warning, up front, with its fix (pyperf's habit).

:class:`BusyCheck` takes one host sample when a run starts and one when its engine is built (seconds
later, at no cost to the run), and judges the span between by the disturbance rule's thresholds for the
CPU other processes used (``inproc.telemetry.disturbed``). The steal it reads there is said once, as a
note; :class:`SteadySteal` keeps the run's steady steal, which each entry's steal is judged beyond.
"""
from __future__ import annotations

import time

from inproc.telemetry import metrics as m
from inproc.telemetry.disturbed import Disturbance, cpu_figures, other_cause
from inproc.telemetry.host_reader import open_host_reader
from inproc.telemetry.series import SampleSeries

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
        """The run's steady steal, once: ``note: the hypervisor took 0.8 % of ...``, or None where not read or
        where it rounds to nothing (0.0 %: a line that says nothing)."""
        if self.steal_share is None or self.steal_share < 0.0005:
            return None
        return (f"note: the hypervisor took {100 * self.steal_share:.1f} % of the CPU time on the engine's CPUs "
                f"(steal) while it was built; each cell is judged by the steal beyond that")


class SteadySteal:
    """The run's steady steal share, each entry's is judged beyond: the larger of the busy check's (over the build)
    and the median over the run's entries measured so far (whole entries, from their own host samples).

    Steal comes with the engine's own load: on a 2-vCPU cloud VM a build that keeps one CPU busy read none, while
    the cells that keep both busy read a median of 1-2 % with windows to 7 %. The median over the run's entries
    is that level; one burst moves it little.
    """

    def __init__(self) -> None:
        self.build_share: float | None = None  # the busy check's, set once the engine is built
        self._entries: list[float] = []

    def level(self) -> float | None:
        """The steady share now (None: nothing measured yet)."""
        found = [x for x in (self.build_share, _median(self._entries)) if x is not None]
        return max(found) if found else None

    def add(self, host: SampleSeries | None) -> None:
        """Take an entry's steal share over its whole sampling, first sample to last (skipped where it cannot be
        read)."""
        if host is None or host.t_s.size < 2:
            return
        try:
            share = cpu_figures(host, float(host.t_s[0]), float(host.t_s[-1]))["steal_share"]
        except (m.Absent, KeyError):
            return
        if share is not None:
            self._entries.append(share)


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2
