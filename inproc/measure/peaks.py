"""The device limits a step's bandwidth and FLOP/s are read against, and where each came from.

- GPU memory bandwidth: NVML's memory bus width × its maximum memory clock × 2 (data
  moves on both clock edges), from the run's machine record.
- GPU dense FLOP/s: :data:`DENSE_TFLOPS`, by GPU name and the run's compute dtype.
- CPU memory bandwidth: measured at run start (``inproc.telemetry.host_bandwidth``):
  bytes read + written by one thread copying an array larger than any cache. One core
  rarely saturates a socket, so this is a floor of the host's peak, not its datasheet figure.
- CPU FLOP/s: none (a fraction is then null, with the reason).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from inproc.types import EngineSettings

# Dense (no 2:4 sparsity) tensor-core peaks in TFLOP/s, by the NVML device name prefix and
# dtype. Sources: NVIDIA's H100 and H200 datasheets (the "with sparsity" figures halved:
# SXM BF16 1,979 → 989.5, FP8 3,958 → 1,979; H200 NVL BF16 1,671 → 835.5, FP8 3,341 → 1,670.5;
# H100 PCIe BF16 1,513 → 756.5, FP8 3,026 → 1,513; H100 NVL as H200 NVL) and the A100 datasheet (BF16 312 dense).
# Longest matching name first: "NVIDIA H200 NVL" before "NVIDIA H200".
DENSE_TFLOPS: dict[str, dict[str, float]] = {
    "NVIDIA H200 NVL": {"bf16": 835.5, "fp16": 835.5, "fp8": 1670.5},
    "NVIDIA H200": {"bf16": 989.5, "fp16": 989.5, "fp8": 1979.0},
    "NVIDIA H100 NVL": {"bf16": 835.5, "fp16": 835.5, "fp8": 1670.5},
    "NVIDIA H100 PCIe": {"bf16": 756.5, "fp16": 756.5, "fp8": 1513.0},
    "NVIDIA H100 80GB HBM3": {"bf16": 989.5, "fp16": 989.5, "fp8": 1979.0},
    "NVIDIA H100": {"bf16": 989.5, "fp16": 989.5, "fp8": 1979.0},
    "NVIDIA A100": {"bf16": 312.0, "fp16": 312.0},
}


@dataclass(frozen=True)
class Peak:
    """One limit: its value, how it was obtained, or why there is none."""

    value: float | None
    source: str  # "NVML: 6144-bit bus × 3,201 MHz × 2", "table: NVIDIA H200 bf16 dense", ...

    @property
    def known(self) -> bool:
        return self.value is not None and self.value > 0


@dataclass(frozen=True)
class Peaks:
    """The limits of the device a run's steps ran on (one GPU, or the host)."""

    device: str
    bandwidth_bytes_s: Peak
    flops: Peak


def compute_dtype(settings: EngineSettings) -> str:
    """The dtype the engine's matmuls ran in: fp8 for FP8 quantisation, else the model dtype."""
    quant = str(settings.quantization or "").lower()
    if "fp8" in quant:
        return "fp8"
    dtype = str(settings.dtype or "").lower()
    return {"bfloat16": "bf16", "float16": "fp16", "half": "fp16"}.get(dtype, dtype)


def gpu_peaks(device: Mapping[str, object], dtype: str) -> Peaks:
    """Peaks of one GPU from its machine record (NVML) and :data:`DENSE_TFLOPS`."""
    name = str(device.get("name") or "GPU")
    width, clock = device.get("memory_bus_width_bits"), device.get("max_mem_clock_mhz")
    if width and clock:
        bw = Peak(float(width) / 8 * float(clock) * 1e6 * 2,
                  f"NVML: {int(width)}-bit memory bus × {float(clock):,.0f} MHz max memory clock × 2")
    else:
        bw = Peak(None, "NVML reported no memory bus width or maximum memory clock for this GPU")
    entry = next((DENSE_TFLOPS[k] for k in sorted(DENSE_TFLOPS, key=len, reverse=True) if name.startswith(k)), None)
    if entry is None:
        flops = Peak(None, f"no dense FLOP/s entry for {name!r} in inproc's table (measure/peaks.py)")
    elif dtype not in entry:
        flops = Peak(None, f"no {dtype or 'unknown-dtype'} entry for {name!r} (table has {', '.join(entry)})")
    else:
        flops = Peak(entry[dtype] * 1e12, f"table: {name} {dtype} dense tensor-core peak (NVIDIA datasheet)")
    return Peaks(name, bw, flops)


def host_peaks(cpu: Mapping[str, object]) -> Peaks:
    """Peaks of the host: the bandwidth measured at run start; no FLOP/s figure."""
    measured = cpu.get("copy_bandwidth_bytes_s")
    bw = Peak(float(measured), str(cpu.get("copy_bandwidth_method") or "measured at run start")) if measured \
        else Peak(None, "no host copy bandwidth was measured for this run")
    return Peaks(str(cpu.get("model") or "host CPU"), bw, Peak(None, "inproc has no FLOP/s peak for CPUs"))


def run_peaks(gpu_devices: Sequence[Mapping[str, object]], cpu: Mapping[str, object],
              settings: EngineSettings) -> Peaks:
    """The peaks figures are read against: the first GPU's when the run had GPUs, else the host's."""
    if gpu_devices:
        return gpu_peaks(gpu_devices[0], compute_dtype(settings))
    return host_peaks(cpu)
