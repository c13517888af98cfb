"""The device limits a step's bandwidth and FLOP/s are read against, and where each came from.

- GPU memory bandwidth: NVML's memory bus width × its maximum memory clock × 2 (data
  moves on both clock edges), from the run's machine record; where NVML reported neither,
  the datasheet figure of :data:`DEVICE_PEAKS`.
- GPU dense FLOP/s: :data:`DEVICE_PEAKS`, by the exact NVML device name and the run's
  compute dtype (:func:`compute_dtype`: read from the kernels the engine chose). A device
  or dtype not in the table, or an unknown compute dtype, has no peak ("unknown", with the
  reason): never a neighbouring device's or dtype's figure.
- CPU memory bandwidth: measured at run start (``inproc.telemetry.host_bandwidth``):
  bytes read + written by one thread copying an array larger than any cache. One core
  rarely saturates a socket, so this is a floor of the host's peak, not its datasheet figure.
- CPU FLOP/s: none (a fraction is then null, with the reason).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from inproc.types import EngineSettings


#: Model dtypes as :data:`DEVICE_PEAKS` names them.
SHORT_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32"}


def short_dtype(dtype: object) -> str:
    """``torch.bfloat16`` / ``bfloat16`` -> ``bf16``; an unnamed dtype -> ""."""
    name = str(dtype or "").lower().removeprefix("torch.")
    return SHORT_DTYPES.get(name, name)


@dataclass(frozen=True)
class DeviceSpec:
    """One GPU's datasheet figures: dense tensor-core TFLOP/s by dtype, memory bandwidth, their source."""

    dense_tflops: Mapping[str, float]  # "bf16", "fp16", "fp8", "fp4": dense (no 2:4 sparsity)
    bandwidth_tb_s: float  # memory bandwidth, TB/s (10^12 bytes/s)
    source: str  # the datasheet the figures come from, and how they were read


# NVIDIA's datasheets give tensor-core figures "with sparsity" (2:4 structured sparsity
# doubles them); every figure below is that figure halved, except where NVIDIA states the
# dense figure itself (Blackwell Ultra's FP4, whose dense rate is three quarters of its
# sparse one). Keys are the exact names NVML reports (nvmlDeviceGetName); a name not here,
# e.g. another variant of the same chip, gets no FLOP/s peak rather than its sibling's.
_H100 = "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100/)"
_H200 = "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200/)"
_GH200 = "NVIDIA GH200 Grace Hopper Superchip datasheet (nvidia.com/en-us/data-center/grace-hopper-superchip/)"
_A100 = "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100/): BF16 624 TFLOPS with sparsity"
_RTX_STEPS = ("dense tensor FP16/BF16 = 4 × FP32, FP8 = 8 ×, FP4 = 16 × (GB202's tensor rates with FP32 "
              "accumulate; the FP4 step matches the Workstation Edition's 4,000 AI TOPS with sparsity)")


def _rtx_pro(fp32_tflops: float) -> dict[str, float]:
    """Dense tensor TFLOP/s of a GB202 RTX PRO card from its datasheet FP32 figure (see ``_RTX_STEPS``)."""
    return {"bf16": 4 * fp32_tflops, "fp16": 4 * fp32_tflops, "fp8": 8 * fp32_tflops, "fp4": 16 * fp32_tflops}


DEVICE_PEAKS: dict[str, DeviceSpec] = {
    # RTX PRO 6000 Blackwell (GB202, sm_120), three boards, each with its own NVML name.
    # NVIDIA's pages state the FP32 figure, the memory bandwidth and one "AI TOPS" figure
    # (FP4 with sparsity), not a BF16 or FP8 tensor figure; the dense tensor figures follow
    # from the FP32 figure at GB202's fixed steps (_RTX_STEPS).
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": DeviceSpec(
        _rtx_pro(120.0), 1.597,
        "NVIDIA RTX PRO 6000 Blackwell Server Edition datasheet "
        "(nvidia.com/en-us/data-center/rtx-pro-6000-blackwell-server-edition/): FP32 120 TFLOPS, "
        f"1,597 GB/s GDDR7; {_RTX_STEPS}"),
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition": DeviceSpec(
        _rtx_pro(125.0), 1.792,
        "NVIDIA RTX PRO 6000 Blackwell Workstation Edition datasheet / product page "
        "(nvidia.com/en-us/products/workstations/professional-desktop-gpus/rtx-pro-6000/): FP32 125 TFLOPS, "
        f"4,000 AI TOPS (FP4, sparse), 1,792 GB/s GDDR7; {_RTX_STEPS}"),
    # Max-Q (300 W): its FP32 figure could not be confirmed on an NVIDIA page here (third-party
    # tables give 110 TFLOPS), so it has no FLOP/s entry; the bandwidth is the family's 512-bit
    # GDDR7 at 28 Gbps, as NVIDIA announced it for the workstation boards.
    "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition": DeviceSpec(
        {}, 1.792,
        "NVIDIA RTX PRO 6000 Blackwell announcement: 1,792 GB/s GDDR7 for the workstation boards; "
        "no NVIDIA FP32 or tensor figure for the Max-Q Workstation Edition confirmed, so no FLOP/s entry"),
    "NVIDIA H200": DeviceSpec(
        {"bf16": 989.5, "fp16": 989.5, "fp8": 1979.0}, 4.8,
        f"{_H200}, H200 SXM: BF16 1,979 and FP8 3,958 TFLOPS with sparsity, 4.8 TB/s HBM3e; no FP4"),
    "NVIDIA H200 NVL": DeviceSpec(
        {"bf16": 835.5, "fp16": 835.5, "fp8": 1670.5}, 4.8,
        f"{_H200}, H200 NVL: BF16 1,671 and FP8 3,341 TFLOPS with sparsity, 4.8 TB/s HBM3e; no FP4"),
    # GH200: the Hopper GPU of a Grace Hopper superchip. NVML names the 96 GB HBM3 board by its
    # superchip's 480 GB of LPDDR5X, the 144 GB HBM3e board "144G HBM3e" (as nvidia-smi prints it;
    # some code spells it "144GB HBM3e", which is not matched).
    "NVIDIA GH200 480GB": DeviceSpec(
        {"bf16": 989.5, "fp16": 989.5, "fp8": 1979.0}, 4.0,
        f"{_GH200}, 96 GB HBM3: BF16 1,979 and FP8 3,958 TFLOPS with sparsity, 4 TB/s; no FP4"),
    "NVIDIA GH200 144G HBM3e": DeviceSpec(
        {"bf16": 989.5, "fp16": 989.5, "fp8": 1979.0}, 4.9,
        f"{_GH200}, 144 GB HBM3e: BF16 1,979 and FP8 3,958 TFLOPS with sparsity, 4.9 TB/s; no FP4"),
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
    # B200 as in HGX B200 (1,000 W). Bandwidth: NVIDIA's Blackwell datasheet gives 7.7 TB/s per
    # GPU (7,680-bit × 3,996 MHz × 2 = 7.67 TB/s); 8 TB/s is the DGX B200's 64 TB/s ÷ 8.
    "NVIDIA B200": DeviceSpec(
        {"fp4": 9000.0, "fp8": 4500.0, "bf16": 2250.0, "fp16": 2250.0}, 7.7,
        "NVIDIA HGX B200 datasheet (nvidia.com/en-us/data-center/hgx/), per GPU: FP4 18, FP8 9, FP16/BF16 4.5 "
        "PFLOPS with sparsity; NVIDIA Blackwell datasheet: 7.7 TB/s HBM3e per GPU"),
    # GB200: the Blackwell GPU of a GB200 superchip (1,200 W). NVIDIA states the superchip
    # (1 Grace CPU + 2 GPUs): FP4 40, FP8 20, FP16/BF16 10 PFLOPS with sparsity, 16 TB/s;
    # halved for sparsity and again per GPU. Some third-party tables copy the HGX B200's
    # figures (FP4 9, FP8 4.5 dense) for it; we keep NVIDIA's GB200 figures, since the GPU
    # runs at a higher power limit in GB200 than in HGX B200.
    "NVIDIA GB200": DeviceSpec(
        {"fp4": 10000.0, "fp8": 5000.0, "bf16": 2500.0, "fp16": 2500.0}, 8.0,
        "NVIDIA GB200 NVL72 datasheet (nvidia.com/en-us/data-center/gb200-nvl72/), GB200 superchip column "
        "÷ its 2 GPUs: FP4 40, FP8 20, FP16/BF16 10 PFLOPS with sparsity, 16 TB/s HBM3e"),
    # B300 (Blackwell Ultra) as in HGX B300, named "NVIDIA B300 SXM6 AC" by CUDA and NVML on HGX
    # B300 hosts (seen in public logs; no other B300 name confirmed). NVIDIA's HGX table gives
    # 8 GPUs FP4 144 PFLOPS with sparsity | 108 dense, FP8 72 and FP16/BF16 36 with sparsity.
    # Its per-GPU bandwidth is not confirmed here: the 8 TB/s is Blackwell Ultra's as NVIDIA
    # states it for GB300 NVL72 (576 TB/s ÷ 72); NVML's bus × clock replaces it where reported.
    "NVIDIA B300 SXM6 AC": DeviceSpec(
        {"fp4": 13500.0, "fp8": 4500.0, "bf16": 2250.0, "fp16": 2250.0}, 8.0,
        "NVIDIA HGX B300 datasheet (nvidia.com/en-us/data-center/hgx/) ÷ its 8 GPUs: FP4 144 PFLOPS with "
        "sparsity, 108 dense (stated), FP8 72, FP16/BF16 36 PFLOPS with sparsity; 8 TB/s as for GB300 "
        "(unconfirmed for HGX B300)"),
    # GB300: the Blackwell Ultra GPU of a GB300 superchip (1,400 W). Name as CUDA reports it
    # ("NVIDIA GB300", in public code and BMC inventories; no nvidia-smi print seen).
    "NVIDIA GB300": DeviceSpec(
        {"fp4": 15000.0, "fp8": 5000.0, "bf16": 2500.0, "fp16": 2500.0}, 8.0,
        "NVIDIA GB300 NVL72 datasheet (nvidia.com/en-us/data-center/gb300-nvl72/) ÷ its 72 GPUs: FP4 1,440 "
        "PFLOPS with sparsity, 1,080 dense (stated), FP8/FP6 720, FP16/BF16 360 PFLOPS with sparsity, "
        "576 TB/s HBM3e"),
    "NVIDIA A100-SXM4-80GB": DeviceSpec({"bf16": 312.0, "fp16": 312.0}, 2.039, f"{_A100}, 2,039 GB/s HBM2e; no FP8"),
    "NVIDIA A100-SXM4-40GB": DeviceSpec({"bf16": 312.0, "fp16": 312.0}, 1.555, f"{_A100}, 1,555 GB/s HBM2; no FP8"),
    "NVIDIA A100 80GB PCIe": DeviceSpec({"bf16": 312.0, "fp16": 312.0}, 1.935, f"{_A100}, 1,935 GB/s HBM2e; no FP8"),
    "NVIDIA A100-PCIE-40GB": DeviceSpec({"bf16": 312.0, "fp16": 312.0}, 1.555, f"{_A100}, 1,555 GB/s HBM2; no FP8"),
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


def compute_dtype(settings: EngineSettings) -> tuple[str, str]:
    """The dtype the engine's matmuls ran in, as :data:`DEVICE_PEAKS` names it, and where it came from.

    The engine adapter reads it from the kernels the engine chose for the model's layers
    (``settings.compute_dtype``; "unknown" when the kernels were not recognised). A file
    written before that was read has no such field: an unquantized model then ran in its
    model dtype, and a quantized one is "unknown", since a checkpoint's quantization does
    not say which kernel ran (FP4 and FP8 checkpoints often run weight-only through
    Marlin, in BF16).
    """
    if settings.compute_dtype:
        return settings.compute_dtype, settings.compute_dtype_source or "recorded by the engine adapter"
    dtype = str(settings.dtype or "").lower().removeprefix("torch.")
    if not settings.quantization and dtype:
        return short_dtype(dtype), (f"the model dtype ({dtype}): the results file records no "
                                                 "compute dtype and no quantization")
    return "unknown", (f"the results file records no compute dtype (written before inproc read it from the "
                       f"engine's kernels), and its quantization ({settings.quantization or 'none'}, "
                       f"model dtype {dtype or 'unrecorded'}) does not say which kernel ran")


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


def gpu_flops(name: str, spec: DeviceSpec | None, dtype: str, dtype_source: str = "") -> Peak:
    """The table's dense FLOP/s of ``name`` in ``dtype``; unknown, with the reason, when the table lacks either
    or the dtype is unknown (``dtype_source`` then says why)."""
    if dtype == "unknown":
        return Peak(None, f"the compute dtype is unknown ({dtype_source or 'no reason recorded'}); "
                          "no dtype's figure stands in")
    if spec is None:
        return Peak(None, f"no entry for {name!r} in inproc's peak table (measure/peaks.py); "
                          "no other device's figure stands in")
    if dtype not in spec.dense_tflops:
        return Peak(None, f"no {dtype or 'unknown-dtype'} entry for {name!r} (the table has "
                          f"{', '.join(spec.dense_tflops)}); no other dtype's figure stands in")
    tflops = spec.dense_tflops[dtype]
    why = f"; compute dtype {dtype_source}" if dtype_source else ""
    return Peak(tflops * 1e12, f"table: {name} {dtype} dense {tflops:,g} TFLOP/s ({spec.source}){why}")


def gpu_peaks(device: Mapping[str, object], dtype: str, dtype_source: str = "") -> Peaks:
    """Peaks of one GPU from its machine record (NVML) and :data:`DEVICE_PEAKS` (exact NVML name)."""
    name = str(device.get("name") or "GPU").strip()
    spec = DEVICE_PEAKS.get(name)
    return Peaks(name, gpu_bandwidth(device, spec), gpu_flops(name, spec, dtype, dtype_source))


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
        return gpu_peaks(gpu_devices[0], *compute_dtype(settings))
    return host_peaks(cpu)
