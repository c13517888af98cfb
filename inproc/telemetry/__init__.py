"""GPU and host telemetry, sampled per cell, turned into figures, and judged.

Usage by the driver::

    telemetry = open_telemetry(gpu_indices=None, hz=10.0)   # never raises for missing NVML
    telemetry.start_cell()
    ...  # measure; the window is [t_open_s, t_close_s] in time.perf_counter() seconds
    trace = telemetry.stop_cell()                           # raw samples, stored as is
    figures = cell_figures(trace, t_open_s, t_close_s, output_tokens)
    passed, reason = throttle_check(figures)
    telemetry.close()

Only ``gpu_reader.py`` imports ``pynvml`` and only ``host_reader.py`` / ``metadata.py``
import ``psutil``, both lazily: without them the run goes on and the missing part is
marked absent with its reason.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

from inproc.telemetry.figures import GpuFigures, TelemetryFigures, cell_figures
from inproc.telemetry.gpu_reader import GpuReader, load_nvml, select_handles, shutdown
from inproc.telemetry.host_reader import HostReader, load_psutil
from inproc.telemetry.judge import (
    FAILING_CAUSES,
    MAX_THROTTLED_SAMPLE_FRACTION,
    MIN_SM_CLOCK_FRACTION,
    throttle_check,
)
from inproc.telemetry.metadata import collect_metadata
from inproc.telemetry.sampler import (
    DEFAULT_HZ,
    INITIAL_CAPACITY_S,
    MAX_HZ,
    Telemetry,
    check_hz,
)
from inproc.telemetry.series import SampleSeries
from inproc.telemetry.trace import GpuTrace, TelemetryTrace


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


__all__ = [
    "DEFAULT_HZ",
    "FAILING_CAUSES",
    "MAX_HZ",
    "MAX_THROTTLED_SAMPLE_FRACTION",
    "MIN_SM_CLOCK_FRACTION",
    "GpuFigures",
    "GpuTrace",
    "SampleSeries",
    "Telemetry",
    "TelemetryFigures",
    "TelemetryTrace",
    "cell_figures",
    "collect_metadata",
    "open_telemetry",
    "throttle_check",
]
