"""NVML enum values and bit masks the telemetry uses, as plain data.

These are ABI-stable numbers from NVIDIA's ``nvml.h`` (the same values nvidia-ml-py
exports). They live here so that figures, checks, tests and the fake binding can use
them without importing ``pynvml``; only ``gpu_reader.py`` talks to the binding.
"""

from __future__ import annotations

# nvmlDeviceGetFieldValues field id: instantaneous board power in mW. Where the driver
# does not serve it, nvmlDeviceGetPowerUsage gives power averaged over ~1 s on Ampere+
# (instantaneous on older parts), also in mW.
FI_DEV_POWER_INSTANT = 186

# nvmlDeviceGetFieldValues field ids 74-79: NVML_FI_DEV_PERF_POLICY_POWER + the perf policy
# (nvmlPerfPolicyType_t 0-5 below), the same cumulative counters nvmlDeviceGetViolationStatus
# reads, six in one call. (80 and 81 are the TOTAL_* aggregates, not read.)
FI_DEV_PERF_POLICY_FIRST = 74

# nvmlClockType_t
CLOCK_SM = 1
CLOCK_MEM = 2

# nvmlTemperatureSensors_t: the GPU die sensor.
TEMPERATURE_GPU = 0

# nvmlReturn_t codes that mean "this device/driver will never answer this query":
# the field is switched off for the session instead of being retried every sample.
ERROR_NOT_SUPPORTED = 3
ERROR_NO_PERMISSION = 4
ERROR_FUNCTION_NOT_FOUND = 13
PERMANENT_ERRORS = frozenset({ERROR_NOT_SUPPORTED, ERROR_NO_PERMISSION, ERROR_FUNCTION_NOT_FOUND})

# nvmlValueType_t -> member of the nvmlValue_t union that holds the value.
VALUE_UNION_MEMBER = {
    0: "dVal",
    1: "uiVal",
    2: "ulVal",
    3: "ullVal",
    4: "sllVal",
    5: "siVal",
    6: "usVal",
}

# nvmlDeviceGetCurrentClocksEventReasons bits (called "throttle reasons" before CUDA 12.2).
# Names are the NVML names in snake case; every bit is kept in the raw samples.
CLOCKS_EVENT_REASONS: tuple[tuple[str, int], ...] = (
    ("gpu_idle", 0x1),
    ("applications_clocks_setting", 0x2),
    ("sw_power_cap", 0x4),
    ("hw_slowdown", 0x8),
    ("sync_boost", 0x10),
    ("sw_thermal_slowdown", 0x20),
    ("hw_thermal_slowdown", 0x40),
    ("hw_power_brake_slowdown", 0x80),
    ("display_clock_setting", 0x100),
)

# nvmlPerfPolicyType_t for nvmlDeviceGetViolationStatus: cumulative time (ns) the clocks
# were held below target by each policy. The TOTAL_* aggregates (10, 11) are left out.
VIOLATION_POLICIES: tuple[tuple[str, int], ...] = (
    ("power", 0),
    ("thermal", 1),
    ("sync_boost", 2),
    ("board_limit", 3),
    ("low_utilization", 4),
    ("reliability", 5),
)

# nvmlGpuTopologyLevel_t, for the metadata's topology summary.
TOPOLOGY_LEVELS = {
    0: "internal",  # same board
    10: "single",  # one PCIe switch between them
    20: "multiple",  # several PCIe switches
    30: "hostbridge",  # same PCIe host bridge
    40: "node",  # same NUMA node / CPU
    50: "system",  # across CPU sockets (SMP interconnect)
}

# Upper bound on NVLink links per GPU in current NVML headers (H100/H200 have 18);
# links past the device's own count answer with an error, which the metadata skips.
NVLINK_MAX_LINKS = 36
