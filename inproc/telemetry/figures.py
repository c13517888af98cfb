"""Per-cell telemetry figures, derived from a raw trace and the driver's window.

Each figure is None when its source is absent, and ``reasons`` then says why under
the figure's name. The definitions are the functions in ``metrics.py``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from functools import partial
from typing import Any, Callable, Mapping, Sequence, TypeVar

import inproc.telemetry.metrics as m
from inproc.telemetry.nvml_ids import VIOLATION_POLICIES
from inproc.telemetry.trace import EnergyRead, GpuTrace, TelemetryTrace


@dataclass(frozen=True)
class GpuFigures:
    """One GPU over one measurement window."""

    index: int
    name: str
    power_source: str  # "instant" | "average" | "none"
    default_sm_clock_mhz: float | None
    num_samples: int  # samples with timestamps inside the window
    energy_j: float | None  # from the counter read at the window's edges (energy_source "edges") or the series
    mean_power_w: float | None
    max_power_w: float | None
    mean_sm_clock_mhz: float | None
    mean_mem_clock_mhz: float | None
    max_temp_c: float | None
    mean_gpu_util_pct: float | None
    max_mem_used_mib: float | None
    throttle_fraction: Mapping[str, float] = field(default_factory=dict)  # cause -> share of samples
    violation_s: Mapping[str, float] = field(default_factory=dict)  # NVML policy -> seconds held back
    reasons: Mapping[str, str] = field(default_factory=dict)  # figure name -> why it is None / empty
    energy_source: str = ""  # "edges" (metrics.edge_energy_j), "series" (metrics.gpu_energy_j), "" absent

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GpuFigures:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class TelemetryFigures:
    """All GPUs and the host over one measurement window (a prefill or decode cell)."""

    window_s: float
    output_tokens: int | None
    gpus: tuple[GpuFigures, ...]
    energy_j: float | None  # all GPUs
    joules_per_token: float | None
    tokens_per_joule: float | None
    mean_power_w: float | None  # all GPUs, sum of per-GPU means
    max_gpu_power_w: float | None  # the highest single-GPU sample
    mean_sm_clock_mhz: float | None  # mean over GPUs
    max_temp_c: float | None
    throttle_fraction: Mapping[str, float]  # per cause, the worst GPU
    process_cpu_util_pct: float | None  # % of one core
    host_cpu_util_pct: float | None  # % of all CPUs
    max_rss_bytes: float | None
    mean_cpu_freq_mhz: float | None
    sampler_cpu_pct: float | None  # the sampler's CPU, % of one core over the cell (its own process since format 2)
    reasons: Mapping[str, str] = field(default_factory=dict)
    # What telemetry cost the engine's process over the window (metrics.inproc_telemetry_cpu_s):
    inproc_gpu_cpu_s: float | None = None  # the GPU telemetry's edge marks
    inproc_host_cpu_s: float | None = None  # the host sampling thread
    inproc_cpu_pct: float | None = None  # both, % of one core over the window
    sampler_cpu_s: float | None = None  # the GPU sampler process's CPU seconds over the cell
    notes: tuple[str, ...] = ()  # the sampler's own note (did not start / exited / lagged); a cost past the limit

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "TelemetryFigures":
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["gpus"] = tuple(GpuFigures.from_dict(g) for g in data["gpus"])
        values["notes"] = tuple(values.get("notes", ()))
        return cls(**values)


T = TypeVar("T")


class _Collector:
    """Runs metric functions, keeping each value or the reason it is absent."""

    def __init__(self) -> None:
        self.reasons: dict[str, str] = {}

    def get(self, name: str, compute: Callable[[], T]) -> T | None:
        try:
            return compute()
        except m.Absent as why:
            self.reasons[name] = str(why)
            return None

    def absent(self, name: str, reason: str) -> None:
        self.reasons[name] = reason


def gpu_figures(
    gpu: GpuTrace, t_open_s: float, t_close_s: float, default_sm_clock_mhz: float | None = None,
    reads: Sequence[EnergyRead] = (),
) -> GpuFigures:
    """Figures of one GPU over ``[t_open_s, t_close_s]``; energy from the edge ``reads`` when the trace has them."""
    s, c = gpu.series, _Collector()
    if reads:
        energy_j, source = c.get("energy_j", lambda: m.edge_energy_j(reads, gpu.index, t_open_s, t_close_s)), "edges"
    else:  # format 1: the counter sampled at 10 Hz, interpolated at the edges
        energy_j, source = c.get("energy_j", lambda: m.gpu_energy_j(s, t_open_s, t_close_s)), "series"

    def level(column: str, stat: Callable) -> Callable[[], float]:
        return lambda: stat(s, column, t_open_s, t_close_s)

    throttle = c.get("throttle_fraction", lambda: m.throttle_fractions(s, t_open_s, t_close_s))
    violation = {}
    for name, _ in VIOLATION_POLICIES:
        ns = c.get(f"violation_s.{name}", level(f"violation_{name}_ns", m.counter_delta))
        if ns is not None:
            violation[name] = ns / 1e9
    inside = (s.t_s >= t_open_s) & (s.t_s <= t_close_s)
    return GpuFigures(
        index=gpu.index,
        name=gpu.name,
        power_source=gpu.power_source,
        default_sm_clock_mhz=gpu.default_sm_clock_mhz
        if default_sm_clock_mhz is None
        else default_sm_clock_mhz,
        num_samples=int(inside.sum()),
        energy_j=energy_j,
        mean_power_w=c.get("mean_power_w", level("power_w", m.window_mean)),
        max_power_w=c.get("max_power_w", level("power_w", m.window_max)),
        mean_sm_clock_mhz=c.get("mean_sm_clock_mhz", level("sm_clock_mhz", m.window_mean)),
        mean_mem_clock_mhz=c.get("mean_mem_clock_mhz", level("mem_clock_mhz", m.window_mean)),
        max_temp_c=c.get("max_temp_c", level("temp_c", m.window_max)),
        mean_gpu_util_pct=c.get("mean_gpu_util_pct", level("gpu_util_pct", m.window_mean)),
        max_mem_used_mib=c.get("max_mem_used_mib", level("mem_used_mib", m.window_max)),
        throttle_fraction=throttle or {},
        violation_s=violation,
        reasons=c.reasons,
        energy_source=source if energy_j is not None else "",
    )


def cell_figures(
    trace: TelemetryTrace,
    t_open_s: float,
    t_close_s: float,
    output_tokens: int | None,
    default_sm_clock_mhz: float | None = None,
) -> TelemetryFigures:
    """Figures over the driver's window ``[t_open_s, t_close_s]`` (perf_counter seconds).

    ``output_tokens``: tokens generated inside the window (None for a prefill cell);
    ``default_sm_clock_mhz`` overrides the default SM clock NVML reported per GPU.
    """
    c = _Collector()
    gpus = tuple(gpu_figures(g, t_open_s, t_close_s, default_sm_clock_mhz, trace.energy_reads) for g in trace.gpus)
    no_gpu = f"GPU telemetry absent: {trace.gpu_absent_reason or 'no GPU sampled'}"

    def over_gpus(name: str, combine: Callable, out: str | None = None) -> float | None:
        if not gpus:
            c.absent(out or name, no_gpu)
            return None
        missing = [g for g in gpus if getattr(g, name) is None]
        if missing:
            g = missing[0]
            c.absent(out or name, f"GPU {g.index}: {g.reasons.get(name, 'absent')}")
            return None
        return float(combine([getattr(g, name) for g in gpus]))

    energy_j = over_gpus("energy_j", sum)
    per_token, per_joule = _token_figures(c, energy_j, output_tokens)
    throttle = _worst_throttle(c, gpus, no_gpu)
    host_values = _host_figures(c, trace, t_open_s, t_close_s)
    return TelemetryFigures(
        window_s=t_close_s - t_open_s,
        output_tokens=output_tokens,
        gpus=gpus,
        energy_j=energy_j,
        joules_per_token=per_token,
        tokens_per_joule=per_joule,
        mean_power_w=over_gpus("mean_power_w", sum),
        max_gpu_power_w=over_gpus("max_power_w", max, "max_gpu_power_w"),
        mean_sm_clock_mhz=over_gpus("mean_sm_clock_mhz", lambda v: sum(v) / len(v)),
        max_temp_c=over_gpus("max_temp_c", max),
        throttle_fraction=throttle,
        sampler_cpu_pct=(100.0 * trace.sampler_cpu_s / trace.duration_s) if trace.duration_s > 0 else None,
        reasons=c.reasons,
        sampler_cpu_s=trace.sampler_cpu_s if trace.gpus or trace.sampler_cpu_s else None,
        **host_values,
        **_cost_figures(c, trace, t_open_s, t_close_s),
    )


# A cell whose telemetry took more than this share of one core in the engine's process over its
# window says so in its notes (the engine's own Python scheduler competes for that core).
INPROC_COST_LIMIT = 0.005


def _cost_figures(c: _Collector, trace: TelemetryTrace, t_open_s: float, t_close_s: float) -> dict[str, Any]:
    notes = [trace.sampler_note] if trace.sampler_note else []
    costs = c.get("inproc_cpu_pct", lambda: m.inproc_telemetry_cpu_s(trace.marks, t_open_s, t_close_s))
    if costs is None or t_close_s <= t_open_s:
        return {"notes": tuple(notes)}
    gpu_s, host_s = costs
    share = (gpu_s + host_s) / (t_close_s - t_open_s)
    if share > INPROC_COST_LIMIT:
        notes.append(f"telemetry took {share:.2%} of a core in the engine's process over the window "
                     f"(GPU marks {gpu_s * 1e3:.2f} ms, host sampling {host_s * 1e3:.2f} ms; "
                     f"limit {INPROC_COST_LIMIT:.1%})")
    return {"inproc_gpu_cpu_s": gpu_s, "inproc_host_cpu_s": host_s, "inproc_cpu_pct": 100.0 * share,
            "notes": tuple(notes)}


def _worst_throttle(c: _Collector, gpus: tuple[GpuFigures, ...], no_gpu: str) -> dict[str, float]:
    """Per cause, the largest share of samples on any GPU."""
    throttle: dict[str, float] = {}
    for g in gpus:
        for cause, share in g.throttle_fraction.items():
            throttle[cause] = max(throttle.get(cause, 0.0), share)
    if not gpus:
        c.absent("throttle_fraction", no_gpu)
    elif not throttle:
        c.absent("throttle_fraction", f"GPU {gpus[0].index}: {gpus[0].reasons.get('throttle_fraction')}")
    return throttle


def _token_figures(
    c: _Collector, energy_j: float | None, output_tokens: int | None
) -> tuple[float | None, float | None]:
    names = ("joules_per_token", "tokens_per_joule")
    if output_tokens is None:
        why = "no output-token count for this cell (prefill)"
    elif output_tokens <= 0:
        why = "no output tokens in the window"
    elif energy_j is None:
        why = f"energy absent: {c.reasons.get('energy_j', '')}"
    elif energy_j <= 0:
        why = f"energy over the window is {energy_j:.3f} J"
    else:
        return energy_j / output_tokens, output_tokens / energy_j
    for name in names:
        c.absent(name, why)
    return None, None


def _host_figures(
    c: _Collector, trace: TelemetryTrace, t_open_s: float, t_close_s: float
) -> dict[str, float | None]:
    names = {
        "process_cpu_util_pct": lambda s: m.process_cpu_util_pct(s, t_open_s, t_close_s),
        "host_cpu_util_pct": lambda s: m.host_cpu_util_pct(s, t_open_s, t_close_s),
        "max_rss_bytes": lambda s: m.window_max(s, "rss_bytes", t_open_s, t_close_s),
        "mean_cpu_freq_mhz": lambda s: m.window_mean(s, "cpu_freq_mhz", t_open_s, t_close_s),
    }
    if trace.host is None:
        for name in names:
            c.absent(name, f"host telemetry absent: {trace.host_absent_reason or 'not sampled'}")
        return {name: None for name in names}
    host = trace.host
    return {name: c.get(name, partial(f, host)) for name, f in names.items()}
