"""The device limits a step's bandwidth and FLOP/s are read against, and where each came from.

- GPU memory bandwidth: NVML's memory bus width × its maximum memory clock × 2 (data
  moves on both clock edges), from the run's machine record; where NVML reported neither,
  the datasheet figure of :data:`DEVICE_PEAKS`.
- GPU dense FLOP/s: :data:`DEVICE_PEAKS`, by the exact NVML device name and the run's
  compute dtype (:func:`compute_dtype`). A device or dtype not in the table has no peak
  ("unknown", with the reason): never a neighbouring device's or dtype's figure.
- CPU memory bandwidth: measured at run start (``inproc.telemetry.host_bandwidth``):
  bytes read + written by one thread copying an array larger than any cache. One core
  rarely saturates a socket, so this is a floor of the host's peak, not its datasheet figure.
- CPU FLOP/s: none (a fraction is then null, with the reason).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from inproc.types import EngineSettings


@dataclass(frozen=True)
class DeviceSpec:
    """One GPU's datasheet figures: dense tensor-core TFLOP/s by dtype, memory bandwidth, their source."""

    dense_tflops: Mapping[str, float]  # "bf16", "fp16", "fp8", "fp4": dense (no 2:4 sparsity)
    bandwidth_tb_s: float  # memory bandwidth, TB/s (10^12 bytes/s)
    source: str  # the datasheet the figures come from, and how they were read


# NVIDIA's datasheets give tensor-core figures "with sparsity" (2:4 structured sparsity
# doubles them); every figure below is that figure halved. Keys are the exact names NVML
# reports (nvmlDeviceGetName); a name not here, e.g. another variant of the same chip,
# gets no FLOP/s peak rather than its sibling's.
_H100 = "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100/)"
_H200 = "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200/)"
_A100 = "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100/): BF16 624 TFLOPS with sparsity"
DEVICE_PEAKS: dict[str, DeviceSpec] = {
    # RTX PRO 6000 Blackwell Server Edition (GB202, sm_120). Its datasheet states one tensor
    # figure, FP4 4 PFLOPS with sparsity, and 1.6 TB/s GDDR7. FP8 and BF16 follow from it at
    # the 2:1 steps the RTX Blackwell tensor cores run at (FP4 : FP8 : BF16 = 4 : 2 : 1 with
    # FP32 accumulate). Third-party tables computed from the Workstation Edition's 2,617 MHz
    # boost clock give 2,015 / 1,008 / 504 dense TFLOPS and 1.79 TB/s; we keep NVIDIA's own
    # Server Edition figures, as its clocks and memory speed differ from the Workstation's.
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": DeviceSpec(
        {"fp4": 2000.0, "fp8": 1000.0, "bf16": 500.0, "fp16": 500.0}, 1.6,
        "NVIDIA RTX PRO 6000 Blackwell Server Edition datasheet "
        "(nvidia.com/en-us/data-center/rtx-pro-6000-blackwell-server-edition/): FP4 4 PFLOPS with sparsity, "
        "FP8 and BF16 at the RTX Blackwell 4 : 2 : 1 steps, 1.6 TB/s GDDR7"),
    "NVIDIA H200": DeviceSpec(
        {"bf16": 989.5, "fp16": 989.5, "fp8": 1979.0}, 4.8,
        f"{_H200}, H200 SXM: BF16 1,979 and FP8 3,958 TFLOPS with sparsity, 4.8 TB/s HBM3e; no FP4"),
    "NVIDIA H200 NVL": DeviceSpec(
        {"bf16": 835.5, "fp16": 835.5, "fp8": 1670.5}, 4.8,
        f"{_H200}, H200 NVL: BF16 1,671 and FP8 3,341 TFLOPS with sparsity, 4.8 TB/s HBM3e; no FP4"),
    # H100 SXM5 reports its memory in its name.
    "NVIDIA H100 80GB HBM3": DeviceSpec(
        {"bf16": 989.5, "fp16": 989.5, "fp8": 1979.0}, 3.35,
        f"{_H100}, H100 SXM: BF16 1,979 and FP8 3,958 TFLOPS with sparsity, 3.35 TB/s HBM3; no FP4"),
    "NVIDIA H100 NVL": DeviceSpec(
        {"bf16": 835.5, "fp16": 835.5, "fp8": 1670.5}, 3.9,
        f"{_H100}, H100 NVL: BF16 1,671 and FP8 3,341 TFLOPS with sparsity, 3.9 TB/s HBM3; no FP4"),
    "NVIDIA H100 PCIe": DeviceSpec(
        {"bf16": 756.5, "fp16": 756.5, "fp8": 1513.0}, 2.0,
        f"{_H100}, H100 PCIe: BF16 1,513 and FP8 3,026 TFLOPS with sparsity, 2 TB/s HBM2e; no FP4"),
    # B200 as in HGX B200 (1,000 W). Some tables give 7.7 TB/s; NVIDIA's page states 8 TB/s per GPU.
    "NVIDIA B200": DeviceSpec(
        {"fp4": 9000.0, "fp8": 4500.0, "bf16": 2250.0, "fp16": 2250.0}, 8.0,
        "NVIDIA HGX B200 datasheet (nvidia.com/en-us/data-center/hgx/), per GPU: FP4 18, FP8 9, FP16/BF16 4.5 "
        "PFLOPS with sparsity, 8 TB/s HBM3e"),
    # GB200: the Blackwell GPU of a GB200 superchip (1,200 W). NVIDIA states the superchip
    # (1 Grace CPU + 2 GPUs): FP4 40, FP8 20, FP16/BF16 10 PFLOPS with sparsity, 16 TB/s;
    # halved for sparsity and again per GPU. Some third-party tables copy the HGX B200's
    # figures (FP4 9, FP8 4.5 dense) for it; we keep NVIDIA's GB200 figures, since the GPU
    # runs at a higher power limit in GB200 than in HGX B200.
    "NVIDIA GB200": DeviceSpec(
        {"fp4": 10000.0, "fp8": 5000.0, "bf16": 2500.0, "fp16": 2500.0}, 8.0,
        "NVIDIA GB200 NVL72 datasheet (nvidia.com/en-us/data-center/gb200-nvl72/), GB200 superchip column "
        "÷ its 2 GPUs: FP4 40, FP8 20, FP16/BF16 10 PFLOPS with sparsity, 16 TB/s HBM3e"),
    "NVIDIA A100-SXM4-80GB": DeviceSpec({"bf16": 312.0, "fp16": 312.0}, 2.039, f"{_A100}, 2,039 GB/s HBM2e; no FP8"),
    "NVIDIA A100-SXM4-40GB": DeviceSpec({"bf16": 312.0, "fp16": 312.0}, 1.555, f"{_A100}, 1,555 GB/s HBM2; no FP8"),
    "NVIDIA A100 80GB PCIe": DeviceSpec({"bf16": 312.0, "fp16": 312.0}, 1.935, f"{_A100}, 1,935 GB/s HBM2e; no FP8"),
    "NVIDIA A100-PCIE-40GB": DeviceSpec({"bf16": 312.0, "fp16": 312.0}, 1.555, f"{_A100}, 1,555 GB/s HBM2; no FP8"),
}

#: Quantisations that store weights in few bits but multiply in the model dtype.
WEIGHT_ONLY_QUANTIZATIONS = ("awq", "gptq", "marlin", "bitsandbytes", "gguf")


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
    """The dtype the engine's matmuls ran in, as :data:`DEVICE_PEAKS` names it.

    An FP4 format (MXFP4, NVFP4) is fp4 and an FP8 one fp8; a weight-only format
    (:data:`WEIGHT_ONLY_QUANTIZATIONS`) and no quantisation run in the model dtype. Any
    other quantisation keeps its own name, which no table entry holds: its peak is unknown.
    """
    quant = str(settings.quantization or "").lower()
    if "fp4" in quant:
        return "fp4"
    if "fp8" in quant:
        return "fp8"
    if quant and not any(w in quant for w in WEIGHT_ONLY_QUANTIZATIONS):
        return quant
    dtype = str(settings.dtype or "").lower()
    return {"bfloat16": "bf16", "float16": "fp16", "half": "fp16"}.get(dtype, dtype)


def _tb_s(value: float) -> str:
    return f"{value:g} TB/s"


def gpu_bandwidth(device: Mapping[str, object], spec: DeviceSpec | None) -> Peak:
    """NVML's bus width × maximum memory clock × 2; the datasheet's figure where NVML reported neither."""
    width, clock = device.get("memory_bus_width_bits"), device.get("max_mem_clock_mhz")
    beside = f" (datasheet: {_tb_s(spec.bandwidth_tb_s)})" if spec else ""
    if width and clock:
        return Peak(float(width) / 8 * float(clock) * 1e6 * 2,
                    f"NVML: {int(width)}-bit memory bus × {float(clock):,.0f} MHz max memory clock × 2{beside}")
    if spec:
        return Peak(spec.bandwidth_tb_s * 1e12, f"datasheet: {_tb_s(spec.bandwidth_tb_s)} ({spec.source}); "
                                                "NVML reported no memory bus width or clock")
    return Peak(None, "NVML reported no memory bus width or maximum memory clock for this GPU, "
                      "and inproc's peak table has no entry for it")


def gpu_flops(name: str, spec: DeviceSpec | None, dtype: str) -> Peak:
    """The table's dense FLOP/s of ``name`` in ``dtype``; unknown, with the reason, when the table lacks either."""
    if spec is None:
        return Peak(None, f"no entry for {name!r} in inproc's peak table (measure/peaks.py); "
                          "no other device's figure stands in")
    if dtype not in spec.dense_tflops:
        return Peak(None, f"no {dtype or 'unknown-dtype'} entry for {name!r} (the table has "
                          f"{', '.join(spec.dense_tflops)}); no other dtype's figure stands in")
    tflops = spec.dense_tflops[dtype]
    return Peak(tflops * 1e12, f"table: {name} {dtype} dense {tflops:,g} TFLOP/s ({spec.source})")


def gpu_peaks(device: Mapping[str, object], dtype: str) -> Peaks:
    """Peaks of one GPU from its machine record (NVML) and :data:`DEVICE_PEAKS` (exact NVML name)."""
    name = str(device.get("name") or "GPU").strip()
    spec = DEVICE_PEAKS.get(name)
    return Peaks(name, gpu_bandwidth(device, spec), gpu_flops(name, spec, dtype))


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
