"""FAKE NVML binding with the H200's per-call costs: a stand-in for nvidia-ml-py's ``pynvml``, no GPU.

It is a module (not an object) so that the GPU sampler's own process can import it by name:
``open_telemetry(binding="tests.fakes.h200_nvml")`` or ``INPROC_NVML_BINDING=tests.fakes.h200_nvml``.
``INPROC_FAKE_NVML_GPUS`` (default 1) sets how many GPUs it shows.

The costs are the medians measured for one call on an idle H200 (driver 580.159.04), read from
``tests/fixtures/h200/nvml_call_ms.json``: the total-energy counter 3.1 ms however it is read
(the call, field 83 or field 191), the eight violation fields 74-81 in one
``nvmlDeviceGetFieldValues`` call 0.82 ms, ``nvmlDeviceGetViolationStatus`` 0.75 ms a call,
everything else microseconds. On the H200 that time is CPU burnt inside the driver with the GIL
released (a ctypes call). Here it is burnt the same way: by SHA-256 over a buffer
(``hashlib`` releases the GIL for inputs over 2 KiB), sized at import from a timed hash, so the
calling thread uses a core for that long while other Python threads run. ``time.sleep`` would
wait instead of burning and hide the cost; a Python busy loop would hold the GIL, which a ctypes
call does not.

The readings: GPU ``i`` draws ``POWER_W[i]`` watts, constant. Its energy counter is in mJ and,
like the H200's, changes once every ``COUNTER_PERIOD_S`` (100 ms): at time ``t`` (``time.perf_counter()``,
the same clock in every process of the machine on Linux) it reads
``floor(t / 0.1) * 0.1 * POWER_W[i] * 1000``. So the exact energy between two instants is known
(:func:`true_energy_j`) and a figure from two counter reads is off by at most one update's energy
(:func:`counter_resolution_j`). Power-capped clocks-event bit set, other readings constant.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from pathlib import Path
from types import SimpleNamespace

COUNTER_PERIOD_S = 0.1  # the H200's counter changed every 100.0 ms (batched_fields.energy_updates_call)
_MEASURED = json.loads((Path(__file__).resolve().parent.parent / "fixtures" / "h200" / "nvml_call_ms.json").read_text())
ENERGY_MS = _MEASURED["probes"]["energy"]["median_ms"]  # nvmlDeviceGetTotalEnergyConsumption
VIOLATION_CALL_MS = _MEASURED["raw_median_ms"]["GetViolationStatus"]
VIOLATION_FIELDS_MS = _MEASURED["batched_fields"]["fields_74_81_violations"]["median_ms"]
FIELD_MS = _MEASURED["batched_fields"]["field_186_power_instant"]["median_ms"]
SW_POWER_CAP = 0x4
NOT_SUPPORTED = 3
_VIOLATION_FIELDS = range(74, 82)
_ENERGY_FIELDS = (83, 191)


def _calibrate() -> float:
    """Bytes SHA-256 hashes per millisecond on this machine (best of a few, so a busy moment does not inflate it)."""
    buf = bytes(1 << 20)
    best = math.inf
    for _ in range(5):
        t0 = time.thread_time()
        hashlib.sha256(buf).digest()
        best = min(best, time.thread_time() - t0)
    return (1 << 20) / max(best * 1000.0, 1e-6)


_BYTES_PER_MS = _calibrate()
_BUFFER = bytes(int(_BYTES_PER_MS * 20))  # room for the longest cost burnt (20 ms)


def burn(ms: float) -> None:
    """Use a core for about ``ms`` milliseconds with the GIL released (SHA-256 of a slice of a buffer)."""
    n = int(_BYTES_PER_MS * ms)
    if n > 2048:  # shorter inputs are hashed holding the GIL; microsecond costs need no burning
        hashlib.sha256(memoryview(_BUFFER)[:n]).digest()


def num_gpus() -> int:
    return int(os.environ.get("INPROC_FAKE_NVML_GPUS", "1"))


def power_w(index: int) -> float:
    return 300.0 + 50.0 * index


def counter_mj(index: int, t_s: float) -> int:
    """The energy counter's value at ``t_s``: it last changed at the previous multiple of 100 ms."""
    return int(math.floor(t_s / COUNTER_PERIOD_S) * COUNTER_PERIOD_S * power_w(index) * 1000.0)


def true_energy_j(index: int, t0_s: float, t1_s: float) -> float:
    return power_w(index) * (t1_s - t0_s)


def counter_resolution_j(index: int) -> float:
    """The energy of one counter update: how far a difference of two reads can be from the truth, each way."""
    return power_w(index) * COUNTER_PERIOD_S


class NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(f"fake NVML error {value}")
        self.value = value


class _Handle:
    def __init__(self, index: int) -> None:
        self.index = index


def nvmlInit() -> None:
    pass


def nvmlShutdown() -> None:
    pass


def nvmlDeviceGetCount() -> int:
    return num_gpus()


def nvmlDeviceGetHandleByIndex(index: int) -> _Handle:
    return _Handle(index)


def nvmlDeviceGetName(h: _Handle) -> str:
    return "Fake H200 (H200 call costs, not a GPU)"


def nvmlDeviceGetUUID(h: _Handle) -> str:
    return f"GPU-fake-h200-{h.index}"


def nvmlDeviceGetDefaultApplicationsClock(h: _Handle, clock: int) -> int:
    return 1980 if clock == 1 else 3201


def nvmlDeviceGetTotalEnergyConsumption(h: _Handle) -> int:
    burn(ENERGY_MS)
    return counter_mj(h.index, time.perf_counter())


def nvmlDeviceGetFieldValues(h: _Handle, field_ids: list[int]) -> list[SimpleNamespace]:
    ids = list(field_ids)
    cost = FIELD_MS
    if any(f in _VIOLATION_FIELDS for f in ids):
        cost = VIOLATION_FIELDS_MS
    if any(f in _ENERGY_FIELDS for f in ids):
        cost += ENERGY_MS
    burn(cost)
    now = time.perf_counter()
    return [_field(h, f, now) for f in ids]


def _field(h: _Handle, fid: int, now: float) -> SimpleNamespace:
    entry = SimpleNamespace(fieldId=fid, nvmlReturn=0, valueType=3, latencyUsec=0, value=SimpleNamespace(ullVal=0))
    if fid == 186:  # power instant, mW
        entry.valueType, entry.value = 1, SimpleNamespace(uiVal=int(power_w(h.index) * 1000))
    elif fid in _VIOLATION_FIELDS:  # power-capped the whole time: the power policy's ns grow with the clock
        entry.value.ullVal = int(now * 1e9) if fid == 74 else 0
        entry.latencyUsec = 875 if fid == 75 else 0  # as the H200 answered
    elif fid in _ENERGY_FIELDS:
        entry.value.ullVal = counter_mj(h.index, now)
        entry.latencyUsec = 3742
    else:
        entry.nvmlReturn = NOT_SUPPORTED
    return entry


def nvmlDeviceGetViolationStatus(h: _Handle, policy: int) -> SimpleNamespace:
    burn(VIOLATION_CALL_MS)
    return SimpleNamespace(referenceTime=0, violationTime=int(time.perf_counter() * 1e9) if policy == 0 else 0)


def nvmlDeviceGetPowerUsage(h: _Handle) -> int:
    return int(power_w(h.index) * 1000)


def nvmlDeviceGetClockInfo(h: _Handle, clock: int) -> int:
    return 1755 if clock == 1 else 3201


def nvmlDeviceGetTemperatureV(h: _Handle, sensor: int) -> int:
    return 55


def nvmlDeviceGetUtilizationRates(h: _Handle) -> SimpleNamespace:
    return SimpleNamespace(gpu=100, memory=60)


def nvmlDeviceGetMemoryInfo(h: _Handle) -> SimpleNamespace:
    return SimpleNamespace(total=141 * 2**30, free=61 * 2**30, used=80 * 2**30)


def nvmlDeviceGetCurrentClocksEventReasons(h: _Handle) -> int:
    return SW_POWER_CAP
