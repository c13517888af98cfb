"""Host sampling: the engine's process's CPU time and RSS, its children's CPU time, all CPUs' busy and
steal time and frequency.

The reader runs in the sampler process (``inproc.telemetry.gpu_process``) and reads the engine's
process by its pid from ``/proc`` through psutil; in the engine's own process (``pid`` None: a
sampler that could not start, the tests' inline readers) its CPU time comes from ``os.times()``.
RSS and ``process_cpu_s`` cover that process only; engine worker processes (tensor parallel) and
the sampler itself are its children, whose CPU time ``children_cpu_s`` holds (listed as each cell
starts, read at 1 Hz, plus the reaped ones'), so that the CPU other programs used can be told
apart (``inproc.telemetry.disturbed``).
"""

from __future__ import annotations

import os
from typing import Any

from inproc.measure.steps import on_ns_grid
from inproc.telemetry.series import Probe, ProbeSource, SeriesBuffer
from inproc.telemetry.trace import HOST_COLUMNS

# psutil.cpu_freq() reads one sysfs file per CPU (or parses /proc/cpuinfo), which on a
# 200-CPU host costs milliseconds: read it on every 10th sample only (1 Hz at 10 Hz).
CPU_FREQ_EVERY = 10

# psutil.cpu_times() fields that are not busy time. On Linux guest time is already
# counted inside user / nice, so it is left out rather than counted twice.
_NOT_BUSY = frozenset({"idle", "iowait", "guest", "guest_nice"})


def load_psutil() -> tuple[Any, str | None]:
    """The psutil module, or ``(None, reason)``."""
    try:
        import psutil
    except ImportError as exc:
        return None, f"psutil is not installed ({exc})"
    return psutil, None


def open_host_reader(capacity: int, pid: int | None = None) -> tuple["HostReader | None", str | None]:
    """A reader of process ``pid`` (None: this one) and the host, or ``(None, reason)``."""
    psutil, absent = load_psutil()
    if psutil is None:
        return None, absent
    try:
        return HostReader(psutil, capacity, pid=pid), None
    except psutil.Error as exc:  # that process is gone already
        return None, f"host sampling could not open process {pid} ({exc})"


class HostReader(ProbeSource):
    """Samples the host into a preallocated buffer."""

    def __init__(self, psutil: Any, capacity: int, pid: int | None = None) -> None:
        self._psutil = psutil
        self._process = psutil.Process(pid)
        self._own = pid is None or pid == os.getpid()
        self.probes = [
            Probe("process_cpu", ("process_cpu_s",), self._process_cpu_s),
            Probe("host_cpu", ("host_busy_s", "host_total_s"), self._host_cpu_s),
            Probe("rss", ("rss_bytes",), lambda: (self._process.memory_info().rss,)),
            Probe("cpu_freq", ("cpu_freq_mhz", "cpu_freq_max_mhz"), self._cpu_freq_mhz, every=CPU_FREQ_EVERY),
            Probe("children_cpu", ("children_cpu_s",), self._children_cpu_s, every=CPU_FREQ_EVERY),
            Probe("host_steal", ("host_steal_s",), self._steal_s),
        ]
        self.buffer = SeriesBuffer(HOST_COLUMNS, capacity)
        self._times: Any = None  # the last psutil.cpu_times(), read once per sample
        self._children: list[Any] = []  # this process's children, listed as each cell starts

    def _host_cpu_s(self) -> tuple[float, float]:
        """Cumulative (busy, total) CPU seconds over all CPUs."""
        times = self._times = self._psutil.cpu_times()
        # Sums only, no differences: a sum of non-decreasing floats never decreases,
        # while total - idle can step back by a rounding error between two samples.
        busy = 0.0
        for name, value in zip(times._fields, times):
            if name not in _NOT_BUSY:
                busy += value
        idle = times.idle + getattr(times, "iowait", 0.0)
        # The kernel counts in ticks (10 ms): on the nanosecond grid nothing is lost but the sums'
        # rounding noise, and the results file stores the counters as integer nanoseconds.
        return (on_ns_grid(busy), on_ns_grid(busy + idle))

    def _cpu_freq_mhz(self) -> tuple[float]:
        freq = self._psutil.cpu_freq()
        if freq is None:  # psutil answers None where the platform has no frequency source
            raise NotImplementedError("psutil.cpu_freq() gives no frequency on this machine")
        return (freq.current, freq.max or 0.0)

    def new_cell(self) -> None:
        """Start a cell; list this process's children once (listing reads every process's /proc entry, too
        slow for a sample: a child started mid-cell is counted from the next cell on)."""
        super().new_cell()
        self.list_children()

    def list_children(self) -> None:
        """Take this process's children (recursively) as the ones whose CPU time is read from now on."""
        try:
            self._children = self._process.children(recursive=True)
        except self._psutil.Error:
            self._children = []

    def _children_cpu_s(self) -> tuple[float]:
        """CPU seconds of this process's children: the live ones listed at the cell's start, and those reaped."""
        live = 0.0
        for child in self._children:
            try:
                t = child.cpu_times()
            except self._psutil.Error:  # it exited between the listing and the read
                continue
            live += t.user + t.system
        t = self._cpu_times()  # the reaped children's time: cutime, cstime
        return (on_ns_grid(live + t.children_user + t.children_system),)

    def _process_cpu_s(self) -> tuple[float]:
        """The sampled process's user + system CPU seconds (ticks as well: see :meth:`_host_cpu_s`)."""
        t = self._cpu_times()
        return (on_ns_grid(t.user + t.system),)

    def _cpu_times(self) -> Any:
        """The sampled process's CPU times and its reaped children's: ``os.times()`` in that process (~1 µs),
        else ``/proc/PID/stat`` through psutil (both have user, system, children_user, children_system)."""
        return os.times() if self._own else self._process.cpu_times()

    def _steal_s(self) -> tuple[float]:
        """Steal from the same reading as the busy time (the host_cpu probe runs just before)."""
        times = self._times
        if not hasattr(times, "steal"):
            raise NotImplementedError("psutil.cpu_times() has no steal time on this platform")
        return (on_ns_grid(times.steal),)

    def series(self):  # -> SampleSeries
        """This cell's samples as a frozen record."""
        return self.buffer.snapshot(self.probes)

