"""scripts/gpu_check.sh and its parts, where no GPU is: the refusal, and the judging of real kernel names.

The GPU checks themselves run only on a CUDA machine (``bash scripts/gpu_check.sh``); here the
script must refuse with one line and exit 2, and write no file.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.spawn import child_env, run_child

ROOT = Path(__file__).resolve().parents[2]


def load(name: str):
    """A module of scripts/ by file name (scripts/gpu/ is not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "gpu" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


gpu_check = load("gpu_check")
steps = sys.modules["gpu_check_steps"]
kernel_check = load("gpu_kernel_check")


def needs_no_cuda() -> None:
    """Skip where the checks could run: there the refusal is not what the script does."""
    if gpu_check.refusal() is None:
        pytest.skip("CUDA torch and NVML are here: run bash scripts/gpu_check.sh instead")


def test_refuses_without_cuda_in_one_line_and_writes_nothing(tmp_path, capfd):
    needs_no_cuda()
    out = tmp_path / "gpu.json"
    capfd.readouterr()
    assert gpu_check.main([str(out)]) == 2
    got = capfd.readouterr()
    lines = (got.out + got.err).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu_check: cannot run here: "), lines
    assert "CUDA" in lines[0] or "torch" in lines[0]
    assert not out.exists() and not list(tmp_path.iterdir())


def test_bad_arguments_get_one_line_and_exit_2(capfd):
    capfd.readouterr()
    assert gpu_check.main(["--fast"]) == 2
    got = capfd.readouterr()
    assert got.err.strip().splitlines() == ["gpu_check: unexpected arguments '--fast'; usage: gpu_check.py [OUT.json]"]


@pytest.mark.engine  # starts a child (bash), though it builds no engine
def test_the_shell_wrapper_refuses_the_same_way(tmp_path):
    needs_no_cuda()
    out = tmp_path / "gpu.json"
    p = run_child(["bash", "scripts/gpu_check.sh", str(out)], timeout=120,
                  env=child_env(PYTHON=sys.executable))
    lines = (p.stdout + p.stderr).strip().splitlines()
    assert p.returncode == 2, lines
    assert len(lines) == 1 and lines[0].startswith("gpu_check: cannot run here: ")
    assert not out.exists()


def rows(*named: tuple[str, float]) -> tuple:
    """Kernel rows as the kernel pass makes them, from (real kernel name, device µs)."""
    return tuple(kernel_check.KernelRow(n, kernel_check.category(n), 5, us) for n, us in named)


def test_a_gemm_part_passes_on_cublas_names_and_fails_when_unmatched_time_dominates():
    ok = kernel_check.judge("gemm", "gemm", rows(("nvjet_tst_128x16_64x11_2x1_v_bz_TNT", 950.0),
                                                ("Memset (Device)", 50.0)))
    assert ok.passed is True and ok.share == pytest.approx(0.95)
    bad = kernel_check.judge("gemm", "gemm", rows(("nvjet_tst_128x16_64x11_2x1_v_bz_TNT", 800.0),
                                                 ("_compute_slot_mappings_kernel", 200.0)))
    assert bad.passed is False and bad.share == pytest.approx(0.8)
    assert kernel_check.judge("copy", "memory", ()).passed is False  # nothing recorded is a failure, not a pass
    out = kernel_check.summary([ok, bad, kernel_check.PartResult("triton", "elementwise", None, None, "did not run")])
    assert out["passed"] is False and out["unmatched"] == ["_compute_slot_mappings_kernel"]


def test_sdpa_backends_and_copies_as_torch_names_them_get_the_expected_category():
    sdpa = rows(("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t, "
                 "cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)", 400.0),
                ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_kernel0_0", 300.0))
    assert kernel_check.judge("sdpa", "attention", sdpa).passed is True
    copies = rows(("Memcpy DtoD (Device -> Device)", 100.0), ("Memcpy HtoD (Pinned -> Device)", 30.0),
                  ("Memcpy DtoH (Device -> Pinned)", 30.0),
                  ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>, "
                   "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<c10::BFloat16>, "
                   "at::detail::Array<char*, 1>)", 40.0))
    assert kernel_check.judge("copy", "memory", copies).share == pytest.approx(1.0)


def test_the_checks_filing_verdict_runs_on_the_products_reading_of_real_h200_traces():
    from inproc.kernels.chrome import events_of, load_trace
    from inproc.kernels.filing import file_events

    h200 = ROOT / "tests" / "fixtures" / "h200"
    for name, outside in (("graph_async", 214), ("compiled_graph_async", 197), ("eager_sync", 0)):
        path = str(h200 / f"{name}.json.gz")
        filed = file_events(load_trace(path))
        assert kernel_check.own_start_outside(path) == outside
        r = kernel_check.judge(name, kernel_check.MIXED, kernel_check.rows_of(filed), filed, outside, steps=4)
        assert r.passed is True and r.unfiled == 0 and len(set(r.per_step)) == 1, r.detail
    # A launch outside every mark fails the part, whatever its categories.
    lost = file_events(events_of({"traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "inproc step", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2, "dur": 1,
         "args": {"correlation": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 20, "dur": 1,
         "args": {"correlation": 2}},
        *({"ph": "X", "cat": "kernel", "name": "nvjet_tst_64x8_64x16_4x1_v_bz_TNN", "pid": 0, "tid": 7, "ts": 30 + c,
           "dur": 1, "args": {"correlation": c}} for c in (1, 2))]}))
    r = kernel_check.judge("gemm", "gemm", kernel_check.rows_of(lost), lost, steps=1)
    assert r.passed is False and "1 of 2 device activities not filed to a step" in r.detail


def test_nsys_step_ranges_are_counted_from_the_nvtx_summary_csv():
    # nsys stats --report nvtx_sum --format csv: a header line, then one row per range name.
    csv_text = ('Processing [check.sqlite] with [nvtx_sum.py]...\n'
                '"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)",'
                '"StdDev (ns)","Style","Range"\n'
                '34.1,1000,1,1000,1000,1000,1000,0,"PushPop","ctx=8K C=16 step=3"\n'
                '33.0,990,1,990,990,990,990,0,"PushPop","ctx=8K C=16 step=4"\n'
                '32.9,980,1,980,980,980,980,0,"PushPop","ctx=8K C=16 step=5"\n'
                '0.1,5,2,2,2,2,3,0,"PushPop","unrelated"\n')
    assert steps.nvtx_step_ranges(csv_text) == 3


def test_a_check_gets_what_is_left_of_the_budget():
    import time

    d = steps.Deadline(time.monotonic() + 100)
    assert 80 <= d.limit(200) <= 100 - steps.RESERVE_S
    assert d.limit(10) == 10
    assert steps.Deadline(time.monotonic()).limit(60) <= 0
