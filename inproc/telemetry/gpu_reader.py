"""GPU sampling through NVML. The only module that imports ``pynvml`` (lazily).

Any object with pynvml's function names can stand in for the binding (the tests use
``tests/fakes/fake_nvml.py``). Units as NVML gives them: power mW, energy mJ, clocks
MHz, temperature C, utilisation %, memory bytes, violation time ns.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Sequence

from inproc.telemetry.nvml_ids import (
    CLOCK_MEM,
    CLOCK_SM,
    FI_DEV_PERF_POLICY_FIRST,
    FI_DEV_POWER_INSTANT,
    TEMPERATURE_GPU,
    VALUE_UNION_MEMBER,
    VIOLATION_POLICIES,
)
from inproc.telemetry.series import Probe, ProbeSource, SeriesBuffer, is_permanent
from inproc.telemetry.trace import GPU_COLUMNS, GpuTrace

# Violation times are cumulative counters that only feed window totals: the sampler process reads
# them at every window edge (a full sample there, ``gpu_process.GpuSampling.edge``), so between the
# edges every 20th sample (0.5 Hz at 10 Hz) is enough for the plots. On the H200 the six
# nvmlDeviceGetViolationStatus calls took 0.65-0.83 ms each; the six counters as
# nvmlDeviceGetFieldValues fields 74-79 take one call (0.82 ms for 74-81).
VIOLATION_EVERY = 20
# The cumulative energy counter costs about 3 ms a read however it is read (the call, field
# 83 or 191) and changes only every 100 ms. A window's energy comes from reads at its edges
# (``read_energy``); the series reads it every 50th sample only (0.2 Hz at 10 Hz), for the plots.
ENERGY_EVERY = 50


class FieldValueError(Exception):
    """One entry of nvmlDeviceGetFieldValues came back with an error code."""

    def __init__(self, field_id: int, value: int) -> None:
        super().__init__(f"field {field_id} returned NVML error {value}")
        self.value = value  # same attribute as pynvml's NVMLError, so is_permanent() reads it


def load_nvml(nvml: Any = None) -> tuple[Any, str | None]:
    """Import (unless given) and initialise the binding; ``(None, reason)`` when it can't."""
    if nvml is None:
        try:
            import pynvml  # nvidia-ml-py; loads libnvidia-ml, absent on CPU machines
        except ImportError as exc:
            return None, f"NVML unavailable: nvidia-ml-py is not installed ({exc}; pip install 'inproc[nvml]')"
        nvml = pynvml
    try:
        nvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return None, f"NVML unavailable: {type(exc).__name__}: {exc}"
    return nvml, None


def select_handles(nvml: Any, gpu_indices: Sequence[int] | None) -> tuple[list[tuple[int, Any]], str | None]:
    """NVML (index, handle) pairs to sample, or ``([], reason)``.

    ``gpu_indices`` are NVML indices (PCI bus order). None means the GPUs this process
    can see: CUDA_VISIBLE_DEVICES when set (integers or GPU-UUIDs), else all. CUDA's own
    order matches NVML's for identical GPUs (its tie-break is the PCI bus id).
    """
    try:
        count = int(nvml.nvmlDeviceGetCount())
    except Exception as exc:
        return [], f"NVML could not count GPUs: {type(exc).__name__}: {exc}"
    if gpu_indices is None:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        if visible is None:
            gpu_indices = range(count)
        else:
            return _visible_handles(nvml, visible, count)
    pairs = []
    for index in gpu_indices:
        if not 0 <= index < count:
            return [], f"GPU index {index} is not present: NVML sees {count} GPUs (indices 0-{count - 1})"
        try:
            pairs.append((index, nvml.nvmlDeviceGetHandleByIndex(index)))
        except Exception as exc:
            return [], f"NVML could not open GPU {index}: {type(exc).__name__}: {exc}"
    if not pairs:
        return [], "no GPU selected"
    return pairs, None


def _visible_handles(nvml: Any, visible: str, count: int) -> tuple[list[tuple[int, Any]], str | None]:
    entries = [e.strip() for e in visible.split(",") if e.strip()]
    if not entries:
        return [], "CUDA_VISIBLE_DEVICES is empty: this process sees no GPU"
    if all(e.isdigit() for e in entries):
        return select_handles(nvml, [int(e) for e in entries])
    if all(e.startswith("GPU-") for e in entries):
        by_uuid = {}
        for index in range(count):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            by_uuid[nvml_text(nvml.nvmlDeviceGetUUID(handle))] = (index, handle)
        missing = [e for e in entries if e not in by_uuid]
        if missing:
            return [], f"CUDA_VISIBLE_DEVICES names GPUs NVML does not see: {', '.join(missing)}"
        return [by_uuid[e] for e in entries], None
    return [], f"CUDA_VISIBLE_DEVICES={visible!r} (MIG or mixed entries): per-GPU telemetry not supported"


class FirstSupported:
    """Equivalent NVML queries in order of preference; the first the driver answers is kept.

    A permanent error (not supported, no such function) moves on to the next query for
    good; any other error is raised, leaving a gap in that sample only.
    """

    def __init__(self, *calls: tuple[str, Callable[[], Any]]) -> None:
        self._calls = list(calls)

    @property
    def label(self) -> str:
        return self._calls[0][0]

    def __call__(self) -> Any:
        while True:
            try:
                return self._calls[0][1]()
            except Exception as exc:
                if len(self._calls) == 1 or not is_permanent(exc):
                    raise
                self._calls.pop(0)


class GpuReader(ProbeSource):
    """Samples one GPU into a preallocated buffer; one probe per NVML call (the violations: one call for six)."""

    def __init__(self, nvml: Any, index: int, handle: Any, capacity: int) -> None:
        self._nvml = nvml
        self._handle = handle
        self.index = index
        self.name = _optional(lambda: nvml_text(nvml.nvmlDeviceGetName(handle))) or f"GPU {index}"
        self.uuid = _optional(lambda: nvml_text(nvml.nvmlDeviceGetUUID(handle)))
        self.default_sm_clock_mhz = _optional(
            lambda: float(nvml.nvmlDeviceGetDefaultApplicationsClock(handle, CLOCK_SM))
        )
        self.field_latency_us: dict[int, int] = {}  # field id -> largest latencyUsec NVML reported this cell
        # "fields" (74-79 in one call, times violation_scale to ns) or "calls" (six GetViolationStatus)
        self.violation_source, self.violation_scale = _violation_source(nvml, handle)
        self.probes = self._make_probes()
        self.buffer = SeriesBuffer(GPU_COLUMNS, capacity)

    @property
    def handle(self) -> Any:
        """The NVML device handle (for one-off queries beside the sampling: ``gpu_procs``)."""
        return self._handle

    @property
    def nvml(self) -> Any:
        """The binding the handle belongs to (for the same one-off queries)."""
        return self._nvml

    def _make_probes(self) -> list[Probe]:
        nvml, h = self._nvml, self._handle
        self._power = FirstSupported(
            ("instant", lambda: self._fields([FI_DEV_POWER_INSTANT])[0] / 1000.0),
            ("average", lambda: nvml.nvmlDeviceGetPowerUsage(h) / 1000.0),
        )
        # Newer bindings deprecate the older name of each pair; older drivers lack the newer.
        temperature = FirstSupported(
            ("v", lambda: nvml.nvmlDeviceGetTemperatureV(h, TEMPERATURE_GPU)),
            ("legacy", lambda: nvml.nvmlDeviceGetTemperature(h, TEMPERATURE_GPU)),
        )
        reasons = FirstSupported(  # "throttle reasons" were renamed "clocks event reasons"
            ("event", lambda: nvml.nvmlDeviceGetCurrentClocksEventReasons(h)),
            ("throttle", lambda: nvml.nvmlDeviceGetCurrentClocksThrottleReasons(h)),
        )
        probes = [
            Probe("energy", ("energy_mj",), lambda: (self.read_energy()[2],), every=ENERGY_EVERY),
            Probe("power", ("power_w",), lambda: (self._power(),)),
            Probe("sm_clock", ("sm_clock_mhz",), lambda: (nvml.nvmlDeviceGetClockInfo(h, CLOCK_SM),)),
            Probe("mem_clock", ("mem_clock_mhz",), lambda: (nvml.nvmlDeviceGetClockInfo(h, CLOCK_MEM),)),
            Probe("temperature", ("temp_c",), lambda: (temperature(),)),
            Probe("utilization", ("gpu_util_pct", "mem_util_pct"), self._read_utilization),
            Probe("memory", ("mem_used_mib",), lambda: (nvml.nvmlDeviceGetMemoryInfo(h).used / 2**20,)),
            Probe("clocks_event_reasons", ("clocks_event_reasons",), lambda: (reasons(),)),
        ]
        if self.violation_source == "fields":
            columns = tuple(f"violation_{name}_ns" for name, _ in VIOLATION_POLICIES)
            return probes + [Probe("violations", columns, self._violation_fields, every=VIOLATION_EVERY)]
        for name, policy in VIOLATION_POLICIES:  # a driver without the fields: one call per policy
            probes.append(Probe(f"violation_{name}", (f"violation_{name}_ns",), self._violation_reader(policy),
                                every=VIOLATION_EVERY))
        return probes

    def read_energy(self) -> tuple[float, float, int]:
        """``(t_start_s, t_end_s, mJ)``: one read of the cumulative energy counter, between two clock reads.

        The counter (nvmlDeviceGetTotalEnergyConsumption, mJ since the driver loaded) changes
        about every 100 ms, so a read returns the energy as of its last update, 0-100 ms old.
        """
        t0 = time.perf_counter()
        value = int(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle))
        return t0, time.perf_counter(), value

    def _fields(self, field_ids: list[int]) -> list[float]:
        """Values of ``field_ids`` from one nvmlDeviceGetFieldValues call; each field's latencyUsec is kept."""
        entries = self._nvml.nvmlDeviceGetFieldValues(self._handle, field_ids)
        out = []
        for fid, entry in zip(field_ids, entries):
            latency = int(getattr(entry, "latencyUsec", 0) or 0)
            self.field_latency_us[fid] = max(latency, self.field_latency_us.get(fid, 0))
            out.append(_entry_number(fid, entry))
        return out

    def _violation_fields(self) -> tuple[float, ...]:
        """The six policies' cumulative violation times (ns) in one call: fields 74-79."""
        ids = [FI_DEV_PERF_POLICY_FIRST + policy for _, policy in VIOLATION_POLICIES]
        return tuple(v * self.violation_scale for v in self._fields(ids))

    def _violation_reader(self, policy: int) -> Callable[[], tuple[int]]:
        """Reads the cumulative ns the clocks were held back by one NVML perf policy (drivers without the fields)."""
        nvml, h = self._nvml, self._handle
        return lambda: (nvml.nvmlDeviceGetViolationStatus(h, policy).violationTime,)

    def _read_utilization(self) -> tuple[int, int]:
        rates = self._nvml.nvmlDeviceGetUtilizationRates(self._handle)
        return (rates.gpu, rates.memory)

    def new_cell(self) -> None:
        super().new_cell()
        self.field_latency_us = {}

    @property
    def power_source(self) -> str:
        """Where the power readings come from (the power probe's source), "none" where that probe is off."""
        return self._power.label if next(p for p in self.probes if p.name == "power").off_reason is None else "none"

    def trace(self) -> GpuTrace:
        """This cell's samples as a frozen record."""
        return GpuTrace(
            index=self.index,
            name=self.name,
            uuid=self.uuid,
            default_sm_clock_mhz=self.default_sm_clock_mhz,
            power_source=self.power_source,
            series=self.buffer.snapshot(self.probes),
        )


def _violation_source(nvml: Any, handle: Any) -> tuple[str, float]:
    """``("fields", factor to ns)`` where the driver serves fields 74-79, else ``("calls", 1.0)``.

    Asked once per GPU. nvmlDeviceGetViolationStatus documents nanoseconds; the fields' unit is
    not documented. Both count since boot, so read a moment apart they agree when the units
    agree; a ratio near 1,000 means microseconds. With no counter past a second (nothing to
    compare) the fields are taken as ns.
    """
    for _, policy in VIOLATION_POLICIES:
        try:  # the field first: where the driver does not serve it, nothing else is asked
            entry = nvml.nvmlDeviceGetFieldValues(handle, [FI_DEV_PERF_POLICY_FIRST + policy])[0]
            field = _entry_number(FI_DEV_PERF_POLICY_FIRST + policy, entry)
        except Exception:
            return "calls", 1.0
        try:
            call_ns = float(nvml.nvmlDeviceGetViolationStatus(handle, policy).violationTime)
        except Exception:
            return "fields", 1.0
        if call_ns > 1e9 and field > 0:  # over a second held back: enough to tell ns from µs
            return "fields", 1000.0 if 500.0 < call_ns / field < 2000.0 else 1.0
    return "fields", 1.0


def _entry_number(field_id: int, entry: Any) -> float:
    """One nvmlDeviceGetFieldValues entry as a number; its error code raised as an error."""
    if entry.nvmlReturn != 0:
        raise FieldValueError(field_id, entry.nvmlReturn)
    member = VALUE_UNION_MEMBER.get(int(entry.valueType))
    if member is None:
        raise FieldValueError(field_id, -1)
    return float(getattr(entry.value, member))


def nvml_text(value: Any) -> str:
    """A string NVML returned, as str."""
    # Older nvidia-ml-py returns bytes for strings, newer returns str.
    return value.decode() if isinstance(value, bytes) else str(value)


def _optional(read: Any) -> Any:
    try:
        return read()
    except Exception:
        return None


def shutdown(nvml: Any) -> None:
    """Release NVML (pynvml counts init/shutdown pairs)."""
    try:
        nvml.nvmlShutdown()
    except Exception:
        pass
