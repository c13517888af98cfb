"""The sampler: GPUs and host in a process of their own, the engine's process only marking window edges.

GPU telemetry (power, clocks, temperature, utilisation, memory, clocks-event reasons, violation
counters) and the host (the engine's process's CPU time and RSS, its children's CPU time, all
CPUs' busy, steal time and frequency) are read by ``inproc.telemetry.gpu_process``, spawned once
per run: NVML calls burn the CPU (3 ms for the energy counter, 0.8 ms for the violation counters,
on the H200), a psutil host sample 70-430 µs, and in the engine's process that CPU would compete
with the Python scheduler that sets the headline. A window's energy comes from the GPUs' energy
counters read at its edges (:meth:`Telemetry.mark`), where the host is sampled too; the sampler
samples at ``hz`` between them, and once as the cell starts and as it stops, so any window
between ``start_cell`` and ``stop_cell`` is bracketed by samples. Every sample is stamped with
``time.perf_counter()``, one clock for both processes.

Where the sampler process cannot start, or the tests read a stand-in NVML inline, the host (and
inline GPUs) are sampled by one background thread of this process instead, which waits on an
Event between ticks (the GIL is free while it waits) and samples at each window edge.

What telemetry costs the engine's process is measured, not assumed: the CPU time of each
:meth:`Telemetry.mark` and, where it runs, the host thread's CPU clock, kept with every mark, so each
window's share is known (``inproc.telemetry.metrics.inproc_telemetry_cpu_s``).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Sequence

from inproc.errors import UsageError
from inproc.telemetry.busy import SteadySteal
from inproc.telemetry.gpu_sampler import GpuCell, GpuProcess
from inproc.telemetry.gpu_procs import own_pids
from inproc.telemetry.host_reader import HostReader, open_host_reader
from inproc.telemetry.inline_gpus import InlineGpus, open_inline
from inproc.telemetry.trace import Mark, TelemetryTrace

DEFAULT_HZ = 10.0
# NVML's readings do not refresh faster than every few tens of ms (utilisation is an
# average over 1/6 s to 1 s), so above 20 Hz samples repeat values while costing more.
MAX_HZ = 20.0
# Buffers start with room for this many seconds and double when full.
INITIAL_CAPACITY_S = 120.0
_JOIN_TIMEOUT_S = 10.0
# The in-process host thread's rate (only where the sampler process does not run), whatever --telemetry-hz
# asks of the GPUs. One psutil sample costs the process that takes it 70-430 µs of CPU (a 2-core VM, a
# 16-core H200 host): 0.1-0.4 % of a core at 10 Hz. Every window edge (``Telemetry.mark``) adds a sample,
# so a window's host CPU figures (the disturbance rule's) are read at its edges whatever the rate.
HOST_HZ = 10.0


def _capacity(hz: float) -> int:
    """Samples a cell's buffer starts with room for: INITIAL_CAPACITY_S at ``hz``, two to spare."""
    return int(hz * INITIAL_CAPACITY_S) + 2


def check_hz(hz: float) -> float:
    """Validate a sampling rate given by the user."""
    if not 0 < hz <= MAX_HZ:
        raise UsageError(
            f"Bad telemetry rate {hz!r} Hz: it must be above 0 and at most {MAX_HZ:g} Hz "
            f"(faster only repeats NVML's readings). The default is {DEFAULT_HZ:g} Hz."
        )
    return float(hz)


class Telemetry:
    """GPU and host telemetry for a whole run: the GPU sampler process, and one host thread per cell."""

    def __init__(
        self,
        gpu: GpuProcess | InlineGpus | None,
        gpu_absent_reason: str | None,
        host: HostReader | None,
        host_absent_reason: str | None,
        hz: float = DEFAULT_HZ,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.hz = check_hz(hz)
        self._gpu = gpu
        self.gpu_absent_reason = gpu_absent_reason
        self.host = host  # an in-process reader; None where the sampler process reads the host (or nothing does)
        self.host_absent_reason = host_absent_reason
        self._clock = clock
        self._stop = threading.Event()
        self._wake = threading.Event()  # a window edge: the host thread samples at once
        self._thread: threading.Thread | None = None
        self._in_cell = False
        self._started_s = 0.0
        self._missed_ticks = 0
        self._host_cpu_s = 0.0  # the host thread's CPU, once it ended
        self._host_cpu0_s = 0.0
        self._mark_cpu_s = 0.0  # CPU of this cell's mark() calls
        self._marks: list[Mark] = []
        self._start_note: str | None = None
        # The run's steady steal (the build's share, then the entries'), copied into each trace as it ends.
        self.steady_steal = SteadySteal()

    @property
    def gpus(self) -> tuple[Any, ...]:
        """The sampled GPUs (their NVML indices in ``gpu_indices``)."""
        if isinstance(self._gpu, InlineGpus):
            return tuple(self._gpu.readers)
        return tuple(self._gpu.gpus) if self._gpu is not None else ()

    @property
    def gpu_indices(self) -> tuple[int, ...]:
        if isinstance(self._gpu, InlineGpus):
            return tuple(r.index for r in self._gpu.readers)
        return tuple(g["index"] for g in self.gpus)

    def start_cell(self, background: bool = True) -> None:
        """Begin a cell: the sampler process's start reads and first sample; the host thread's first sample
        where this process samples the host or inline GPUs.

        ``background=False`` leaves further samples to :meth:`sample_now` (tests with a fake clock).
        """
        if self._in_cell:
            raise RuntimeError("start_cell() called twice without stop_cell()")
        if isinstance(self._gpu, GpuProcess) and self._gpu.samples_host and not self._gpu.alive:
            self._host_in_this_process()
        if self.host is not None:
            self.host.new_cell()
        self._in_cell = True
        self._missed_ticks, self._host_cpu_s, self._mark_cpu_s, self._marks = 0, 0.0, 0.0, []
        self._started_s = self._clock()
        self._start_note = self._gpu.start(self._started_s) if self._gpu is not None else None
        if not background:
            self.sample_now()
        elif self.host is not None or isinstance(self._gpu, InlineGpus):  # else the sampler process reads all
            self._stop.clear()
            self._wake.clear()
            first_taken = threading.Event()
            self._thread = threading.Thread(target=self._run, args=(first_taken,), name="inproc-telemetry",
                                            daemon=True)
            self._thread.start()
            first_taken.wait(_JOIN_TIMEOUT_S)
        self._marks.append(Mark("start", self._started_s, 0.0, self._host_thread_cpu_s()))

    def _host_in_this_process(self) -> None:
        """The sampler process died: this process's own thread samples the host from now on (at its cost)."""
        self._gpu.samples_host = False
        self.host, self.host_absent_reason = open_host_reader(_capacity(self.hz))

    def mark(self, label: str, t_s: float | None = None) -> None:
        """A window edge at ``t_s`` (now when None): the sampler reads every energy counter and samples the host.

        Costs the calling thread one pipe write (a few µs); the reads run in the sampler's process.
        """
        cpu0 = time.thread_time()
        t_s = self._clock() if t_s is None else t_s
        if self._gpu is not None:
            self._gpu.edge(label, t_s)
        self._wake.set()  # the host thread's sample at this edge (taken on its own thread's CPU)
        self._mark_cpu_s += time.thread_time() - cpu0
        self._marks.append(Mark(label, t_s, self._mark_cpu_s, self._host_thread_cpu_s()))

    def inproc_cpu_s(self) -> float:
        """CPU seconds telemetry has taken in this process this cell: the host thread's and the marks'."""
        return self._host_thread_cpu_s() + self._mark_cpu_s

    def _host_thread_cpu_s(self) -> float:
        """The host sampling thread's CPU this cell, read from its CPU clock while it runs (Linux)."""
        thread = self._thread
        if thread is not None and thread.ident is not None and hasattr(time, "pthread_getcpuclockid"):
            try:
                return time.clock_gettime(time.pthread_getcpuclockid(thread.ident)) - self._host_cpu0_s
            except OSError:  # the thread just ended: its final figure is in _host_cpu_s
                pass
        return self._host_cpu_s

    def sample_now(self, closing: bool = False) -> None:
        """One host sample (and, for inline GPUs, one GPU sample), stamped just before its first read."""
        if self.host is not None:
            self.host.take(self._clock(), closing)
        if isinstance(self._gpu, InlineGpus):
            self._gpu.sample(closing)

    def stop_cell(self) -> TelemetryTrace:
        """End the cell: the host's last sample, the GPU sampler's closing sample and reads; the raw trace."""
        if not self._in_cell:
            raise RuntimeError("stop_cell() called without start_cell()")
        self._marks.append(Mark("stop", self._clock(), self._mark_cpu_s, self._host_thread_cpu_s()))
        if self._thread is not None:
            self._stop.set()
            self._wake.set()
            # Bounded: a hung psutil call must not hang the run.
            self._thread.join(_JOIN_TIMEOUT_S)
            self._thread = None
        else:
            self.sample_now(closing=True)
        inproc = self.inproc_cpu_s()
        stopped = self._clock()
        # The GPUs' other compute processes are read against this tree's pids as the entry ends (``gpu_procs``).
        cell = self._gpu.stop(stopped, own_pids()) if self._gpu is not None else GpuCell((), (), None, 0, None)
        self._in_cell = False
        trace = TelemetryTrace(
            hz=self.hz,
            started_s=self._started_s,
            stopped_s=stopped,
            sampler_cpu_s=cell.cpu_s if cell.cpu_s is not None else 0.0,
            missed_ticks=cell.missed_ticks + self._missed_ticks,
            gpus=cell.gpus,
            gpu_absent_reason=self.gpu_absent_reason,
            host=cell.host if self.host is None else self.host.series(),
            host_absent_reason=self.host_absent_reason,
            energy_reads=cell.energy_reads,
            marks=tuple(self._marks),
            inproc_cpu_s=inproc,
            sampler_note=self._start_note or cell.note,
            sampler_placement=self._gpu.placement if self._gpu is not None else None,
            gpu_others=cell.others,
            steady_steal_share=self.steady_steal.level(),  # before this entry's own steal joins it
        )
        self.steady_steal.add(trace.host)
        return trace

    def _run(self, first_taken: threading.Event) -> None:
        """The host thread: a sample at each tick of :data:`HOST_HZ` (``hz`` with inline GPUs, sampled alike) and
        at each window edge, then the closing sample."""
        self._host_cpu0_s = time.thread_time()  # this thread's own CPU: the host sampling's cost
        period = 1.0 / (self.hz if isinstance(self._gpu, InlineGpus) else min(self.hz, HOST_HZ))
        next_tick = self._clock()
        try:
            self.sample_now()
            first_taken.set()
            next_tick += period
            while True:
                now = self._clock()
                if now > next_tick:  # a sample overran the tick (GIL held elsewhere)
                    skipped = int((now - next_tick) / period) + 1
                    self._missed_ticks += skipped
                    next_tick += skipped * period
                woke = self._wake.wait(next_tick - now)
                if self._stop.is_set():
                    break
                if woke:
                    self._wake.clear()  # a window edge: one sample now; the ticks go on as they were
                else:
                    next_tick += period
                self.sample_now()
            self.sample_now(closing=True)  # after the driver's window closed
        finally:
            first_taken.set()
            self._host_cpu_s = time.thread_time() - self._host_cpu0_s

    def close(self) -> None:
        """Stop any running cell, the GPU sampler and NVML."""
        if self._in_cell:
            self.stop_cell()
        if self._gpu is not None:
            self._gpu.close()
            self._gpu = None

    def __enter__(self) -> "Telemetry":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_telemetry(
    gpu_indices: Sequence[int] | None = None,
    hz: float = DEFAULT_HZ,
    nvml: Any = None,
    host: bool = True,
    clock: Callable[[], float] = time.perf_counter,
    binding: str | None = None,
) -> Telemetry:
    """Set up sampling of the given GPUs (NVML indices; None = the visible ones) and the host.

    The GPUs and the host are read by the sampler process, the GPUs through the binding module
    ``binding`` (None: the ``INPROC_NVML_BINDING`` environment variable, else nvidia-ml-py's
    ``pynvml``). ``nvml``, a pynvml-shaped object, reads them inside this process instead, and the
    host with them (tests). Where the sampler process does not start, the host is read in this
    process. Missing NVML, psutil or GPUs, or a sampler that does not start, never raise: that part
    is absent with the reason.
    """
    hz = check_hz(hz)
    capacity = _capacity(hz)
    gpu: GpuProcess | InlineGpus | None = None
    host_inline = host
    host_absent: str | None = "host sampling turned off"
    if nvml is not None:
        gpu, gpu_absent = open_inline(nvml, gpu_indices, capacity, clock)
    else:
        gpu = GpuProcess(hz, binding, list(gpu_indices) if gpu_indices is not None else None, host=host)
        gpu_absent = gpu.gpu_absent_reason
        if gpu.absent_reason is not None:
            gpu = None
        elif host:
            host_inline, host_absent = False, gpu.host_absent_reason
    host_reader: HostReader | None = None
    if host_inline:
        host_reader, host_absent = open_host_reader(capacity)
    return Telemetry(gpu, gpu_absent, host_reader, host_absent, hz=hz, clock=clock)
