"""The raw telemetry of one cell, as stored in the results file.

Format history (``"format"`` in every trace dict):
  1 - first version: per-GPU and host sample series, arrays as base64(zlib(LE bytes)).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from inproc.telemetry.nvml_ids import VIOLATION_POLICIES
from inproc.telemetry.series import SampleSeries

TRACE_FORMAT = 1

# Columns of a GPU series: (name, numpy dtype). Units are in the names; sources are the
# NVML calls in gpu_reader.py. The energy counter and reason bits stay uint64 so that a
# counter wrap and every bit survive exactly.
GPU_COLUMNS: tuple[tuple[str, str], ...] = (
    ("energy_mj", "u8"),  # nvmlDeviceGetTotalEnergyConsumption: mJ since driver load
    ("power_w", "f8"),  # NVML_FI_DEV_POWER_INSTANT, else nvmlDeviceGetPowerUsage (avg)
    ("sm_clock_mhz", "f8"),  # nvmlDeviceGetClockInfo(SM)
    ("mem_clock_mhz", "f8"),  # nvmlDeviceGetClockInfo(MEM)
    ("temp_c", "f8"),  # nvmlDeviceGetTemperature(GPU)
    ("gpu_util_pct", "f8"),  # nvmlDeviceGetUtilizationRates().gpu
    ("mem_util_pct", "f8"),  # nvmlDeviceGetUtilizationRates().memory
    ("mem_used_mib", "f8"),  # nvmlDeviceGetMemoryInfo().used / 2**20
    ("clocks_event_reasons", "u8"),  # nvmlDeviceGetCurrentClocksEventReasons bit mask
) + tuple((f"violation_{name}_ns", "f8") for name, _ in VIOLATION_POLICIES)  # cumulative ns

# Columns of the host series.
HOST_COLUMNS: tuple[tuple[str, str], ...] = (
    ("process_cpu_s", "f8"),  # os.times() user + system of this process, cumulative
    ("host_busy_s", "f8"),  # psutil.cpu_times(): all CPUs, non-idle seconds, cumulative
    ("host_total_s", "f8"),  # psutil.cpu_times(): all CPUs, all seconds, cumulative
    ("rss_bytes", "f8"),  # psutil.Process().memory_info().rss
    ("cpu_freq_mhz", "f8"),  # psutil.cpu_freq().current (mean over CPUs), every 10th sample
)


@dataclass(frozen=True, eq=False)
class GpuTrace:
    """One GPU's samples over one cell, with what was known about it at open."""

    index: int  # NVML index (PCI bus order)
    name: str
    uuid: str | None
    default_sm_clock_mhz: float | None  # nvmlDeviceGetDefaultApplicationsClock(SM)
    power_source: str  # "instant" (field value), "average" (nvmlDeviceGetPowerUsage), "none"
    series: SampleSeries

    def to_dict(self) -> dict[str, object]:
        return {
            "index": self.index,
            "name": self.name,
            "uuid": self.uuid,
            "default_sm_clock_mhz": self.default_sm_clock_mhz,
            "power_source": self.power_source,
            "series": self.series.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "GpuTrace":
        return cls(
            index=int(data["index"]),
            name=str(data["name"]),
            uuid=data.get("uuid"),
            default_sm_clock_mhz=data.get("default_sm_clock_mhz"),
            power_source=str(data.get("power_source", "none")),
            series=SampleSeries.from_dict(data["series"]),
        )


@dataclass(frozen=True, eq=False)
class TelemetryTrace:
    """Everything sampled during one cell (prefill or decode), raw.

    ``started_s`` / ``stopped_s`` are ``perf_counter()`` at ``start_cell`` / ``stop_cell``;
    the sampler takes one sample at each end, so any window inside them is bracketed.
    ``sampler_cpu_s`` is the CPU time the sampler thread itself used (its cost).
    """

    hz: float
    started_s: float
    stopped_s: float
    sampler_cpu_s: float
    missed_ticks: int  # ticks skipped because a sample ran past the next tick
    gpus: tuple[GpuTrace, ...]
    gpu_absent_reason: str | None  # set when there is no GPU series at all
    host: SampleSeries | None
    host_absent_reason: str | None

    @property
    def duration_s(self) -> float:
        return self.stopped_s - self.started_s

    def to_dict(self) -> dict[str, object]:
        return {
            "format": TRACE_FORMAT,
            "hz": self.hz,
            "started_s": self.started_s,
            "stopped_s": self.stopped_s,
            "sampler_cpu_s": self.sampler_cpu_s,
            "missed_ticks": self.missed_ticks,
            "gpu_absent_reason": self.gpu_absent_reason,
            "gpus": [g.to_dict() for g in self.gpus],
            "host_absent_reason": self.host_absent_reason,
            "host": None if self.host is None else self.host.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "TelemetryTrace":
        version = data.get("format")
        if version != TRACE_FORMAT:
            raise ValueError(
                f"telemetry trace format {version!r} is not supported (this inproc reads {TRACE_FORMAT})"
            )
        host = data.get("host")
        return cls(
            hz=float(data["hz"]),
            started_s=float(data["started_s"]),
            stopped_s=float(data["stopped_s"]),
            sampler_cpu_s=float(data["sampler_cpu_s"]),
            missed_ticks=int(data.get("missed_ticks", 0)),
            gpus=tuple(GpuTrace.from_dict(g) for g in data["gpus"]),
            gpu_absent_reason=data.get("gpu_absent_reason"),
            host=None if host is None else SampleSeries.from_dict(host),
            host_absent_reason=data.get("host_absent_reason"),
        )
