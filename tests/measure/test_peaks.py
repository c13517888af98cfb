"""The peak table: each listed GPU (the RTX PRO 6000 Blackwell boards, H200, GH200, B200, GB200, B300, GB300,
H100 SXM) resolves to its datasheet figures; anything else is unknown, with the reason.

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
    RTX: (480.0, 960.0, 1920.0, 1.597),  # from FP32 120 TFLOPS at 4 / 8 / 16 ×
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition": (500.0, 1000.0, 2000.0, 1.792),  # FP32 125 TFLOPS
    "NVIDIA H200": (989.5, 1979.0, None, 4.8),
    "NVIDIA GH200 480GB": (989.5, 1979.0, None, 4.0),
    "NVIDIA GH200 144G HBM3e": (989.5, 1979.0, None, 4.9),
    "NVIDIA B200": (2250.0, 4500.0, 9000.0, 7.7),
    "NVIDIA GB200": (2500.0, 5000.0, 10000.0, 8.0),
    "NVIDIA B300 SXM6 AC": (2250.0, 4500.0, 13500.0, 8.0),  # FP4 dense as NVIDIA states it: 108 / 8
    "NVIDIA GB300": (2500.0, 5000.0, 15000.0, 8.0),  # FP4 dense as NVIDIA states it: 1,080 / 72
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


# Blackwell Ultra runs dense FP4 at three times its FP8 rate; NVIDIA states that dense figure.
FP4_STEP = {"NVIDIA B300 SXM6 AC": 3.0, "NVIDIA GB300": 3.0}


def test_table_entries_keep_the_precision_steps_and_name_a_datasheet():
    for name, spec in DEVICE_PEAKS.items():
        t = spec.dense_tflops
        assert t.get("bf16") == t.get("fp16"), name
        if "fp8" in t:
            assert t["fp8"] == pytest.approx(2 * t["bf16"], rel=1e-3), name  # datasheets round
        if "fp4" in t:
            assert t["fp4"] == pytest.approx(FP4_STEP.get(name, 2.0) * t["fp8"]), name
        assert "datasheet" in spec.source or "announcement" in spec.source, name
        assert spec.bandwidth_tb_s > 0, name


def test_a_board_without_a_confirmed_flops_figure_has_bandwidth_only():
    p = gpu_peaks({"name": "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"}, "bf16")
    assert p.flops.value is None and "no bf16 entry" in p.flops.source
    assert p.bandwidth_bytes_s.value == pytest.approx(1.792e12)


def test_nvml_bandwidth_wins_with_the_datasheet_beside_it():
    dev = {"name": "NVIDIA H200", "memory_bus_width_bits": 6144, "max_mem_clock_mhz": 3201}
    p = gpu_peaks(dev, "bf16")
    assert p.bandwidth_bytes_s.value == pytest.approx(6144 / 8 * 3201e6 * 2)  # 4.92 TB/s
    assert p.bandwidth_bytes_s.source.startswith("NVML:") and "datasheet: 4.8 TB/s" in p.bandwidth_bytes_s.source


@pytest.mark.parametrize("name", ["NVIDIA RTX PRO 6000 Blackwell",  # a sibling of listed GPUs, not an NVML name
                                  "NVIDIA H100 SXM5 64GB", "NVIDIA GH200 144GB HBM3e", "NVIDIA B300", "NVIDIA H20", "GPU"])
def test_a_device_not_in_the_table_is_unknown(name):
    p = gpu_peaks({"name": name}, "bf16")
    assert p.flops.value is None and not p.flops.known
    assert f"no entry for {name!r}" in p.flops.source and "no other device's figure" in p.flops.source
    assert p.bandwidth_bytes_s.value is None and "no entry" in p.bandwidth_bytes_s.source


def test_a_dtype_not_in_the_table_is_unknown():
    for dtype in ("int8", "compressed-tensors", "fp32", ""):
        p = gpu_peaks({"name": RTX}, dtype)
        assert p.flops.value is None and "no other dtype's figure" in p.flops.source, dtype


def test_compute_dtype_is_what_the_engine_recorded_never_the_checkpoint_quantization():
    # MXFP4 weights run through Marlin: BF16 math, so the BF16 peak, not the FP4 one.
    marlin = EngineSettings(dtype="bfloat16", quantization="mxfp4", compute_dtype="bf16",
                            compute_dtype_source="from the layer methods the engine chose: bf16 100% (Mxfp4MoEMethod (MARLIN))")
    assert compute_dtype(marlin) == ("bf16", marlin.compute_dtype_source)
    flops = run_peaks([{"name": RTX}], {}, marlin).flops
    assert flops.value == pytest.approx(480e12) and "Mxfp4MoEMethod (MARLIN)" in flops.source
    native = EngineSettings(dtype="bfloat16", quantization="mxfp4", compute_dtype="fp4", compute_dtype_source="x")
    assert run_peaks([{"name": RTX}], {}, native).flops.value == pytest.approx(1920e12)
    h200 = run_peaks([{"name": "NVIDIA H200"}], {}, native).flops  # Hopper has no FP4 tensor cores
    assert h200.value is None and "no fp4 entry for 'NVIDIA H200'" in h200.source


def test_an_unknown_compute_dtype_has_no_flops_peak_and_says_why():
    unknown = EngineSettings(dtype="bfloat16", quantization="fp8", compute_dtype="unknown",
                             compute_dtype_source="from the layer methods the engine chose: unknown 100% (FooMethod)")
    flops = run_peaks([{"name": "NVIDIA H200"}], {}, unknown).flops
    assert flops.value is None and "compute dtype is unknown" in flops.source and "FooMethod" in flops.source
    assert run_peaks([{"name": "NVIDIA H200"}], {}, unknown).bandwidth_bytes_s.value == pytest.approx(4.8e12)


@pytest.mark.parametrize("quantization", ["mxfp4", "modelopt_fp4", "fp8", "awq_marlin", "compressed-tensors"])
def test_a_file_without_the_field_reads_a_quantized_model_as_unknown(quantization):
    old = EngineSettings(dtype="bfloat16", quantization=quantization)  # as files written before the field load
    dtype, why = compute_dtype(old)
    assert dtype == "unknown" and quantization in why and "records no compute dtype" in why
    assert run_peaks([{"name": RTX}], {}, old).flops.value is None


def test_a_file_without_the_field_reads_an_unquantized_model_in_its_dtype():
    assert compute_dtype(EngineSettings(dtype="bfloat16"))[0] == "bf16"
    assert compute_dtype(EngineSettings(dtype="float16"))[0] == "fp16"
    assert compute_dtype(EngineSettings())[0] == "unknown"  # nothing recorded at all
    assert run_peaks([{"name": "NVIDIA H200"}], {}, EngineSettings(dtype="bfloat16")).flops.value == pytest.approx(989.5e12)


def test_host_peaks():
    host = host_peaks({"model": "x", "copy_bandwidth_bytes_s": 2e10, "copy_bandwidth_method": "measured"})
    assert host.bandwidth_bytes_s.value == 2e10 and host.flops.value is None
    assert run_peaks([], {"model": "x"}, EngineSettings()).bandwidth_bytes_s.value is None
