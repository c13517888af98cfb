"""The peak table: each listed GPU (RTX PRO 6000 Blackwell Server Edition, H200, B200, GB200, H100 SXM) resolves
to its datasheet figures; anything else is unknown, with the reason.

Expected values are the datasheets' "with sparsity" figures halved, written out here by
hand (not read back from the table), so a typo in the table fails a test.
"""
from __future__ import annotations

import pytest

from inproc.measure.peaks import DEVICE_PEAKS, compute_dtype, gpu_peaks, host_peaks, run_peaks
from inproc.types import EngineSettings

RTX = "NVIDIA RTX PRO 6000 Blackwell Server Edition"

# name -> (bf16, fp8, fp4 or None) dense TFLOP/s, datasheet TB/s
LISTED = {
    RTX: (500.0, 1000.0, 2000.0, 1.6),
    "NVIDIA H200": (989.5, 1979.0, None, 4.8),
    "NVIDIA B200": (2250.0, 4500.0, 9000.0, 8.0),
    "NVIDIA GB200": (2500.0, 5000.0, 10000.0, 8.0),
    "NVIDIA H100 80GB HBM3": (989.5, 1979.0, None, 3.35),  # H100 SXM
}


@pytest.mark.parametrize("name", sorted(LISTED))
def test_every_listed_gpu_resolves_per_dtype(name):
    bf16, fp8, fp4, tb_s = LISTED[name]
    for dtype, tflops in (("bf16", bf16), ("fp8", fp8), ("fp4", fp4)):
        flops = gpu_peaks({"name": name}, dtype).flops
        if tflops is None:  # Hopper has no FP4 tensor cores: unknown, never the FP8 figure
            assert flops.value is None and "no fp4 entry" in flops.source and "fp8" in flops.source
        else:
            assert flops.value == pytest.approx(tflops * 1e12)
            assert flops.source.startswith(f"table: {name} {dtype} dense") and "datasheet" in flops.source
    bw = gpu_peaks({"name": name}, "bf16").bandwidth_bytes_s  # no NVML figures: the datasheet's
    assert bw.value == pytest.approx(tb_s * 1e12) and bw.source.startswith("datasheet:")


def test_table_entries_keep_the_precision_steps_and_name_a_datasheet():
    for name, spec in DEVICE_PEAKS.items():
        t = spec.dense_tflops
        assert t["bf16"] == t["fp16"], name
        if "fp8" in t:
            assert t["fp8"] == pytest.approx(2 * t["bf16"], rel=1e-3), name  # datasheets round
        if "fp4" in t:
            assert t["fp4"] == pytest.approx(2 * t["fp8"]), name
        assert "datasheet" in spec.source and spec.bandwidth_tb_s > 0, name


def test_nvml_bandwidth_wins_with_the_datasheet_beside_it():
    dev = {"name": "NVIDIA H200", "memory_bus_width_bits": 6144, "max_mem_clock_mhz": 3201}
    p = gpu_peaks(dev, "bf16")
    assert p.bandwidth_bytes_s.value == pytest.approx(6144 / 8 * 3201e6 * 2)  # 4.92 TB/s
    assert p.bandwidth_bytes_s.source.startswith("NVML:") and "datasheet: 4.8 TB/s" in p.bandwidth_bytes_s.source


@pytest.mark.parametrize("name", ["NVIDIA RTX PRO 6000 Blackwell Workstation Edition",  # a sibling of a listed GPU
                                  "NVIDIA H100 SXM5 64GB", "NVIDIA GB300", "NVIDIA H20", "GPU"])
def test_a_device_not_in_the_table_is_unknown(name):
    p = gpu_peaks({"name": name}, "bf16")
    assert p.flops.value is None and not p.flops.known
    assert f"no entry for {name!r}" in p.flops.source and "no other device's figure" in p.flops.source
    assert p.bandwidth_bytes_s.value is None and "no entry" in p.bandwidth_bytes_s.source


def test_a_dtype_not_in_the_table_is_unknown():
    for dtype in ("int8", "compressed-tensors", "fp32", ""):
        p = gpu_peaks({"name": RTX}, dtype)
        assert p.flops.value is None and "no other dtype's figure" in p.flops.source, dtype


def test_compute_dtype_maps_mxfp4_to_fp4_and_never_to_the_model_dtype():
    assert compute_dtype(EngineSettings(dtype="bfloat16", quantization="mxfp4")) == "fp4"
    assert compute_dtype(EngineSettings(dtype="bfloat16", quantization="modelopt_fp4")) == "fp4"
    assert compute_dtype(EngineSettings(dtype="bfloat16", quantization="fp8")) == "fp8"
    assert compute_dtype(EngineSettings(dtype="bfloat16", quantization=None)) == "bf16"
    assert compute_dtype(EngineSettings(dtype="float16", quantization="awq_marlin")) == "fp16"  # weight-only: fp16 matmuls
    assert compute_dtype(EngineSettings(dtype="bfloat16", quantization="compressed-tensors")) == "compressed-tensors"
    # The published vLLM matrix's setup (MXFP4 on RTX PRO 6000) gets the FP4 peak; on an H200 (no FP4) none.
    mxfp4 = EngineSettings(dtype="bfloat16", quantization="mxfp4")
    assert run_peaks([{"name": RTX}], {}, mxfp4).flops.value == pytest.approx(2000e12)
    h200 = run_peaks([{"name": "NVIDIA H200"}], {}, mxfp4).flops
    assert h200.value is None and "no fp4 entry for 'NVIDIA H200'" in h200.source


def test_host_peaks():
    host = host_peaks({"model": "x", "copy_bandwidth_bytes_s": 2e10, "copy_bandwidth_method": "measured"})
    assert host.bandwidth_bytes_s.value == 2e10 and host.flops.value is None
    assert run_peaks([], {"model": "x"}, EngineSettings()).bandwidth_bytes_s.value is None
