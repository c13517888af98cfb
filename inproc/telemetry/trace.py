"""The raw telemetry of one cell, as stored in the results file.

Format history (``"format"`` in every trace dict):
  1 - first version: per-GPU and host sample series, arrays as base64(zlib(LE bytes)).
  2 - the GPU series from the sampler's own process; energy reads at the window edges
      (``energy_reads``), the engine's edge marks with the in-process telemetry CPU (``marks``),
      the sampler's note and placement, each GPU's field latencies. Format 1 still reads.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from inproc.telemetry.nvml_ids import VIOLATION_POLICIES
from inproc.telemetry.series import SampleSeries

TRACE_FORMAT = 2
READABLE_FORMATS = (1, 2)

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
    ("process_cpu_s", "f8"),  # user + system CPU of the engine's process, cumulative (/proc/PID/stat, or os.times())
    ("host_busy_s", "f8"),  # psutil.cpu_times(): all CPUs, non-idle seconds, cumulative
    ("host_total_s", "f8"),  # psutil.cpu_times(): all CPUs, all seconds, cumulative
    ("rss_bytes", "f8"),  # psutil.Process().memory_info().rss
    ("cpu_freq_mhz", "f8"),  # psutil.cpu_freq().current (mean over CPUs), every 10th sample
    ("cpu_freq_max_mhz", "f8"),  # psutil.cpu_freq().max (0 where the platform states none), with it
    ("children_cpu_s", "f8"),  # this process's children (engine workers): live ones' + reaped ones' CPU, 1 Hz
    ("host_steal_s", "f8"),  # psutil.cpu_times().steal: all CPUs, cumulative (Linux; absent elsewhere)
    # The CPUs the engine's tree may run on (its threads' affinity, taken as the cell starts), from the same
    # per-CPU reading (/proc/stat's cpuN lines): busy (steal included), all, and steal seconds, cumulative.
    ("tree_cpus_busy_s", "f8"),
    ("tree_cpus_total_s", "f8"),
    ("tree_cpus_steal_s", "f8"),
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
    # nvmlDeviceGetFieldValues field id (as text) -> the largest latencyUsec NVML reported for it in the cell
    field_latency_us: Mapping[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {
            "index": self.index,
            "name": self.name,
            "uuid": self.uuid,
            "default_sm_clock_mhz": self.default_sm_clock_mhz,
            "power_source": self.power_source,
            "field_latency_us": dict(self.field_latency_us),
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
            field_latency_us=dict(data.get("field_latency_us") or {}),
        )


@dataclass(frozen=True)
class EnergyRead:
    """One read of a GPU's cumulative energy counter at a window's edge, by the sampler process.

    ``label``: start / stop (the entry's sampling began / ended: a prefill entry's window edges) or
    open / close (a decode window opened / closed); ``t_mark_s`` the engine's timestamp of that edge;
    ``t_s`` / ``t_end_s`` the clock just before / after the read (perf_counter seconds).
    """

    gpu: int
    label: str
    t_mark_s: float
    t_s: float
    t_end_s: float
    energy_mj: int


@dataclass(frozen=True)
class Mark:
    """An edge the engine's process marked, with the CPU seconds telemetry had taken in that process so far
    this cell: ``gpu_cpu_s`` the GPU telemetry's (the marks' own pipe writes), ``host_cpu_s`` the host
    sampling thread's."""

    label: str
    t_s: float
    gpu_cpu_s: float
    host_cpu_s: float


@dataclass(frozen=True, eq=False)
class TelemetryTrace:
    """Everything sampled during one cell (prefill or decode), raw.

    ``started_s`` / ``stopped_s`` are ``perf_counter()`` at ``start_cell`` / ``stop_cell``;
    the sampler takes one sample at each end, so any window inside them is bracketed.
    ``sampler_cpu_s`` is the CPU time the sampler used over the cell: since format 2 the GPU
    sampler process's own; format 1, the in-process sampler thread's (GPU and host).
    ``inproc_cpu_s`` is what telemetry took inside the engine's process over the cell (the host
    sampling thread and the edge marks); ``marks`` hold it at each edge, so any window's share
    is known. ``sampler_note`` names a sampler that did not start, died or lagged.
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
    energy_reads: tuple[EnergyRead, ...] = ()
    marks: tuple[Mark, ...] = ()
    inproc_cpu_s: float | None = None
    sampler_note: str | None = None
    sampler_placement: str | None = None
    gpu_others: tuple[str, ...] = ()  # compute processes not of this tree on a sampled GPU, read at the end
    # The run's steady steal as this entry began (``inproc.telemetry.busy.SteadySteal``): the share of the
    # engine's CPUs' running time the hypervisor took over the build and the entries before; each window's steal
    # is judged beyond it.
    steady_steal_share: float | None = None

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
            "energy_reads": [asdict(r) for r in self.energy_reads],
            "marks": [asdict(m) for m in self.marks],
            "inproc_cpu_s": self.inproc_cpu_s,
            "sampler_note": self.sampler_note,
            "sampler_placement": self.sampler_placement,
            "gpu_others": list(self.gpu_others),
            "steady_steal_share": self.steady_steal_share,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "TelemetryTrace":
        version = data.get("format")
        if version not in READABLE_FORMATS:
            raise ValueError(
                f"telemetry trace format {version!r} is not supported (this inproc reads {READABLE_FORMATS})"
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
            energy_reads=tuple(EnergyRead(**r) for r in data.get("energy_reads") or ()),
            marks=tuple(Mark(**m) for m in data.get("marks") or ()),
            inproc_cpu_s=data.get("inproc_cpu_s"),
            sampler_note=data.get("sampler_note"),
            sampler_placement=data.get("sampler_placement"),
            gpu_others=tuple(data.get("gpu_others") or ()),
            steady_steal_share=data.get("steady_steal_share"),
        )
