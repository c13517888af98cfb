"""The sampler: one background thread per cell that fills the GPU and host buffers.

The thread waits on an Event between ticks (the GIL is free while it waits), stamps
each sample with ``time.perf_counter()`` (the driver's clock for its windows), and
takes one sample as soon as it starts and one as it stops, so any window the driver
measures between ``start_cell`` and ``stop_cell`` is bracketed by samples.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Sequence

from inproc.errors import UsageError
from inproc.telemetry.gpu_reader import GpuReader, load_nvml, select_handles, shutdown
from inproc.telemetry.host_reader import HostReader, load_psutil
from inproc.telemetry.trace import TelemetryTrace

DEFAULT_HZ = 10.0
# NVML's readings do not refresh faster than every few tens of ms (utilisation is an
# average over 1/6 s to 1 s), so above 20 Hz samples repeat values while costing the
# measured process more GIL switches and more time under the driver's lock.
MAX_HZ = 20.0
# Buffers start with room for this many seconds and double when full.
INITIAL_CAPACITY_S = 120.0
_JOIN_TIMEOUT_S = 10.0


def check_hz(hz: float) -> float:
    """Validate a sampling rate given by the user."""
    if not 0 < hz <= MAX_HZ:
        raise UsageError(
            f"Bad telemetry rate {hz!r} Hz: it must be above 0 and at most {MAX_HZ:g} Hz "
            f"(faster only repeats NVML's readings). The default is {DEFAULT_HZ:g} Hz."
        )
    return float(hz)


class Telemetry:
    """GPU and host telemetry for a whole run; one sampler thread per cell."""

    def __init__(
        self,
        gpus: Sequence[GpuReader],
        gpu_absent_reason: str | None,
        host: HostReader | None,
        host_absent_reason: str | None,
        hz: float = DEFAULT_HZ,
        nvml: object | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.hz = check_hz(hz)
        self.gpus = tuple(gpus)
        self.gpu_absent_reason = gpu_absent_reason
        self.host = host
        self.host_absent_reason = host_absent_reason
        # Built once: sample_now() runs at every tick and should not allocate.
        self._all_readers: tuple[GpuReader | HostReader, ...] = self.gpus + ((host,) if host else ())
        self._nvml = nvml  # shut down on close
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._in_cell = False
        self._started_s = 0.0
        self._missed_ticks = 0
        self._sampler_cpu_s = 0.0

    @property
    def gpu_indices(self) -> tuple[int, ...]:
        return tuple(g.index for g in self.gpus)

    def start_cell(self, background: bool = True) -> None:
        """Begin a cell: blank the buffers and take the first sample.

        ``background=True`` starts the sampler thread and returns once it has taken its
        first sample. ``background=False`` takes that sample here and leaves further
        samples to :meth:`sample_now` (tests with a fake clock use this).
        """
        if self._in_cell:
            raise RuntimeError("start_cell() called twice without stop_cell()")
        for reader in self._all_readers:
            reader.new_cell()
        self._in_cell = True
        self._missed_ticks = 0
        self._sampler_cpu_s = 0.0
        self._started_s = self._clock()
        if not background:
            self.sample_now()
            return
        self._stop.clear()
        first_taken = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(first_taken,), name="inproc-telemetry", daemon=True
        )
        self._thread.start()
        first_taken.wait(_JOIN_TIMEOUT_S)

    def sample_now(self, closing: bool = False) -> None:
        """Take one sample of every source, each stamped just before its first read."""
        for reader in self._all_readers:
            reader.take(self._clock(), closing)

    def stop_cell(self) -> TelemetryTrace:
        """End the cell: take a last sample, stop the thread, return the raw trace."""
        if not self._in_cell:
            raise RuntimeError("stop_cell() called without start_cell()")
        if self._thread is not None:
            self._stop.set()
            # Bounded: a hung NVML call must not hang the run. In that (pathological)
            # case the snapshot below may race the thread's last writes.
            self._thread.join(_JOIN_TIMEOUT_S)
            self._thread = None
        else:
            self.sample_now(closing=True)
        self._in_cell = False
        return TelemetryTrace(
            hz=self.hz,
            started_s=self._started_s,
            stopped_s=self._clock(),
            sampler_cpu_s=self._sampler_cpu_s,
            missed_ticks=self._missed_ticks,
            gpus=tuple(g.trace() for g in self.gpus),
            gpu_absent_reason=self.gpu_absent_reason,
            host=None if self.host is None else self.host.series(),
            host_absent_reason=self.host_absent_reason,
        )

    def _run(self, first_taken: threading.Event) -> None:
        cpu0 = time.thread_time()  # this thread's own CPU time: the sampler's cost
        period = 1.0 / self.hz
        next_tick = self._clock()
        try:
            self.sample_now()
            first_taken.set()
            while True:
                next_tick += period
                now = self._clock()
                if now > next_tick:  # a sample overran the tick (GIL held elsewhere)
                    skipped = int((now - next_tick) / period) + 1
                    self._missed_ticks += skipped
                    next_tick += skipped * period
                if self._stop.wait(next_tick - now):
                    break
                self.sample_now()
            self.sample_now(closing=True)  # after the driver's window closed
        finally:
            first_taken.set()
            self._sampler_cpu_s = time.thread_time() - cpu0

    def close(self) -> None:
        """Stop any running cell and release NVML."""
        if self._in_cell:
            self.stop_cell()
        if self._nvml is not None:
            shutdown(self._nvml)
            self._nvml = None

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
) -> Telemetry:
    """Set up sampling of the given GPUs (NVML indices; None = the visible ones) and the host.

    ``nvml`` is a pynvml-shaped binding (None: import nvidia-ml-py's ``pynvml``). Missing
    NVML, psutil or GPUs never raise: that part is marked absent with the reason.
    """
    hz = check_hz(hz)
    capacity = int(hz * INITIAL_CAPACITY_S) + 2
    binding, gpu_absent = load_nvml(nvml)
    readers: list[GpuReader] = []
    if binding is not None:
        handles, gpu_absent = select_handles(binding, gpu_indices)
        readers = [GpuReader(binding, index, handle, capacity) for index, handle in handles]
        if not readers:
            shutdown(binding)
            binding = None
    host_reader: HostReader | None = None
    host_absent: str | None = "host sampling turned off"
    if host:
        psutil, host_absent = load_psutil()
        if psutil is not None:
            host_reader = HostReader(psutil, capacity)
    return Telemetry(readers, gpu_absent, host_reader, host_absent, hz=hz, nvml=binding, clock=clock)
