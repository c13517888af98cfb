"""FakeNvml: a FAKE stand-in for nvidia-ml-py's ``pynvml`` that replays recorded sequences.

It is not NVML and talks to no GPU. It has the pynvml function names the telemetry
calls, and answers each call with the next value of a recorded sequence:

* ``FakeGpu.replay[key]`` is a list; the k-th call of that query answers item k (the
  last item repeats once the list is used up). An exception instance in the list is
  raised instead (a sample that fails). A key with no list answers "Not Supported".
  A callable instead of a list is called for each answer (an energy counter that follows
  a fake clock, however often it is read).
* The instantaneous-power field answers through ``nvmlDeviceGetFieldValues`` as the
  real API does: an error there is the entry's ``nvmlReturn``, not an exception.

Keys: energy_mj, power_instant_mw, power_average_mw, sm_clock_mhz, mem_clock_mhz,
temp_c, util (gpu %, memory %), mem_used_bytes, clocks_event_reasons, and
violation_<policy>_ns for each policy name in ``inproc.telemetry.nvml_ids``, and
compute_processes ([(pid, used bytes or None), ...]: nvmlDeviceGetComputeRunningProcesses).
``calls[key]`` counts the calls made, so tests can see what was (not) retried.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from inproc.telemetry.nvml_ids import CLOCK_MEM, CLOCK_SM, FI_DEV_POWER_INSTANT, VIOLATION_POLICIES

NOT_SUPPORTED = 3
UNKNOWN = 999
_POLICY_NAMES = {code: name for name, code in VIOLATION_POLICIES}


class FakeNvmlError(Exception):
    """Shaped like pynvml.NVMLError: the NVML return code is in ``value``."""

    def __init__(self, value: int) -> None:
        super().__init__(f"fake NVML error {value}")
        self.value = value


@dataclass
class FakeGpu:
    """One fake GPU: identity, static answers, and the replayed sequences."""

    name: str = "Fake H200 (not a GPU)"
    uuid: str = "GPU-fake-0000"
    default_sm_clock_mhz: int = 1980
    memory_bus_width_bits: int = 6144  # the real H200's (HBM3e)
    max_mem_clock_mhz: int = 3201
    replay: dict[str, list[Any]] = field(default_factory=dict)
    calls: Counter = field(default_factory=Counter)

    def answer(self, key: str) -> Any:
        self.calls[key] += 1
        seq = self.replay.get(key)
        if not seq:
            raise FakeNvmlError(NOT_SUPPORTED)
        value = seq() if callable(seq) else seq[min(self.calls[key] - 1, len(seq) - 1)]
        if isinstance(value, BaseException):
            raise value
        return value


class FakeNvml:
    """A fake pynvml module: replays ``FakeGpu`` sequences (see the module docstring)."""

    NVMLError = FakeNvmlError

    def __init__(self, gpus: list[FakeGpu] | None = None, init_error: Exception | None = None) -> None:
        self.gpus = gpus if gpus is not None else [FakeGpu()]
        self.init_error = init_error
        self.init_calls = 0
        self.shutdown_calls = 0

    # -- session ---------------------------------------------------------------------
    def nvmlInit(self) -> None:
        self.init_calls += 1
        if self.init_error is not None:
            raise self.init_error

    def nvmlShutdown(self) -> None:
        self.shutdown_calls += 1

    def nvmlSystemGetDriverVersion(self) -> str:
        return "999.99.99-fake"

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return 12040

    # -- devices ---------------------------------------------------------------------
    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:
        return self.gpus[index]

    def nvmlDeviceGetName(self, gpu: FakeGpu) -> bytes:
        return gpu.name.encode()  # old bindings return bytes; the reader must decode

    def nvmlDeviceGetUUID(self, gpu: FakeGpu) -> str:
        return gpu.uuid

    def nvmlDeviceGetDefaultApplicationsClock(self, gpu: FakeGpu, clock: int) -> int:
        return gpu.default_sm_clock_mhz if clock == CLOCK_SM else 2619

    def nvmlDeviceGetMemoryBusWidth(self, gpu: FakeGpu) -> int:
        return gpu.memory_bus_width_bits

    def nvmlDeviceGetMaxClockInfo(self, gpu: FakeGpu, clock: int) -> int:
        if clock != 2:  # NVML_CLOCK_MEM
            raise FakeNvmlError(NOT_SUPPORTED)
        return gpu.max_mem_clock_mhz

    def nvmlDeviceGetPowerManagementLimit(self, gpu: FakeGpu) -> int:
        return 700_000

    def nvmlDeviceGetEccMode(self, gpu: FakeGpu) -> list[int]:
        return [1, 1]

    def nvmlDeviceGetPersistenceMode(self, gpu: FakeGpu) -> int:
        return 1

    # -- samples ---------------------------------------------------------------------
    def nvmlDeviceGetFieldValues(self, gpu: FakeGpu, field_ids: list[int]) -> list[SimpleNamespace]:
        out = []
        for fid in field_ids:
            entry = SimpleNamespace(fieldId=fid, nvmlReturn=0, valueType=1, value=SimpleNamespace(uiVal=0))
            if fid != FI_DEV_POWER_INSTANT:
                entry.nvmlReturn = NOT_SUPPORTED
            else:
                try:
                    entry.value.uiVal = gpu.answer("power_instant_mw")
                except FakeNvmlError as err:
                    entry.nvmlReturn = err.value
            out.append(entry)
        return out

    def nvmlDeviceGetPowerUsage(self, gpu: FakeGpu) -> int:
        return gpu.answer("power_average_mw")

    def nvmlDeviceGetTotalEnergyConsumption(self, gpu: FakeGpu) -> int:
        return gpu.answer("energy_mj")

    def nvmlDeviceGetClockInfo(self, gpu: FakeGpu, clock: int) -> int:
        return gpu.answer({CLOCK_SM: "sm_clock_mhz", CLOCK_MEM: "mem_clock_mhz"}[clock])

    def nvmlDeviceGetTemperature(self, gpu: FakeGpu, sensor: int) -> int:
        return gpu.answer("temp_c")

    def nvmlDeviceGetComputeRunningProcesses(self, gpu: FakeGpu) -> list[SimpleNamespace]:
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in gpu.answer("compute_processes")]

    def nvmlDeviceGetUtilizationRates(self, gpu: FakeGpu) -> SimpleNamespace:
        gpu_pct, mem_pct = gpu.answer("util")
        return SimpleNamespace(gpu=gpu_pct, memory=mem_pct)

    def nvmlDeviceGetMemoryInfo(self, gpu: FakeGpu) -> SimpleNamespace:
        used = gpu.answer("mem_used_bytes")
        return SimpleNamespace(total=141 * 2**30, free=141 * 2**30 - used, used=used)

    def nvmlDeviceGetCurrentClocksEventReasons(self, gpu: FakeGpu) -> int:
        return gpu.answer("clocks_event_reasons")

    def nvmlDeviceGetViolationStatus(self, gpu: FakeGpu, policy: int) -> SimpleNamespace:
        ns = gpu.answer(f"violation_{_POLICY_NAMES[policy]}_ns")
        return SimpleNamespace(referenceTime=0, violationTime=ns)


class FakeClock:
    """A settable stand-in for time.perf_counter."""

    def __init__(self, t_s: float = 100.0) -> None:
        self.t_s = t_s

    def __call__(self) -> float:
        return self.t_s

    def advance(self, dt_s: float) -> None:
        self.t_s += dt_s
