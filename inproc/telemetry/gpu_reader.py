"""GPU sampling through NVML. The only module that imports ``pynvml`` (lazily).

Any object with pynvml's function names can stand in for the binding (the tests use
``tests/fakes/fake_nvml.py``). Units as NVML gives them: power mW, energy mJ, clocks
MHz, temperature C, utilisation %, memory bytes, violation time ns.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Sequence

from inproc.telemetry.nvml_ids import (
    CLOCK_MEM,
    CLOCK_SM,
    FI_DEV_POWER_INSTANT,
    TEMPERATURE_GPU,
    VALUE_UNION_MEMBER,
    VIOLATION_POLICIES,
)
from inproc.telemetry.series import Probe, ProbeSource, SeriesBuffer, is_permanent
from inproc.telemetry.trace import GPU_COLUMNS, GpuTrace

# Violation times are cumulative counters that only feed window totals, so reading them
# on every 5th sample (2 Hz at 10 Hz) loses little; it saves 6 of ~14 NVML calls per
# sample, and each NVML call takes the driver's lock that the engine's own CUDA calls
# may be waiting for.
VIOLATION_EVERY = 5


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
    """Samples one GPU into a preallocated buffer; one probe per NVML call."""

    def __init__(self, nvml: Any, index: int, handle: Any, capacity: int) -> None:
        self._nvml = nvml
        self._handle = handle
        self.index = index
        self.name = _optional(lambda: nvml_text(nvml.nvmlDeviceGetName(handle))) or f"GPU {index}"
        self.uuid = _optional(lambda: nvml_text(nvml.nvmlDeviceGetUUID(handle)))
        self.default_sm_clock_mhz = _optional(
            lambda: float(nvml.nvmlDeviceGetDefaultApplicationsClock(handle, CLOCK_SM))
        )
        self.probes = self._make_probes()
        self.buffer = SeriesBuffer(GPU_COLUMNS, capacity)

    def _make_probes(self) -> list[Probe]:
        nvml, h = self._nvml, self._handle
        self._power = FirstSupported(
            ("instant", lambda: _field_number(nvml, h, FI_DEV_POWER_INSTANT) / 1000.0),
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
        # Energy first: the sample's timestamp is taken just before it, and the energy
        # window figure interpolates the counter at those timestamps.
        probes = [
            Probe("energy", ("energy_mj",), lambda: (nvml.nvmlDeviceGetTotalEnergyConsumption(h),)),
            Probe("power", ("power_w",), lambda: (self._power(),)),
            Probe("sm_clock", ("sm_clock_mhz",), lambda: (nvml.nvmlDeviceGetClockInfo(h, CLOCK_SM),)),
            Probe("mem_clock", ("mem_clock_mhz",), lambda: (nvml.nvmlDeviceGetClockInfo(h, CLOCK_MEM),)),
            Probe("temperature", ("temp_c",), lambda: (temperature(),)),
            Probe("utilization", ("gpu_util_pct", "mem_util_pct"), self._read_utilization),
            Probe("memory", ("mem_used_mib",), lambda: (nvml.nvmlDeviceGetMemoryInfo(h).used / 2**20,)),
            Probe("clocks_event_reasons", ("clocks_event_reasons",), lambda: (reasons(),)),
        ]
        for name, policy in VIOLATION_POLICIES:
            probes.append(
                Probe(
                    f"violation_{name}",
                    (f"violation_{name}_ns",),
                    self._violation_reader(policy),
                    every=VIOLATION_EVERY,
                )
            )
        return probes

    def _violation_reader(self, policy: int) -> Callable[[], tuple[int]]:
        """Reads the cumulative ns the clocks were held back by one NVML perf policy."""
        nvml, h = self._nvml, self._handle
        return lambda: (nvml.nvmlDeviceGetViolationStatus(h, policy).violationTime,)

    def _read_utilization(self) -> tuple[int, int]:
        rates = self._nvml.nvmlDeviceGetUtilizationRates(self._handle)
        return (rates.gpu, rates.memory)

    def trace(self) -> GpuTrace:
        """This cell's samples as a frozen record."""
        power_off = next(p for p in self.probes if p.name == "power").off_reason is not None
        return GpuTrace(
            index=self.index,
            name=self.name,
            uuid=self.uuid,
            default_sm_clock_mhz=self.default_sm_clock_mhz,
            power_source="none" if power_off else self._power.label,
            series=self.buffer.snapshot(self.probes),
        )


def _field_number(nvml: Any, handle: Any, field_id: int) -> float:
    """One nvmlDeviceGetFieldValues entry as a number; its error code raised as an error."""
    entry = nvml.nvmlDeviceGetFieldValues(handle, [field_id])[0]
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
