#!/usr/bin/env python3
"""Every GPU-side check, in one run of at most 8 minutes, into one JSON file.

  PYTHONPATH=. python scripts/gpu/gpu_check.py [OUT.json]     (default gpu_check.json; scripts/gpu_check.sh wraps it)

Needs a CUDA machine with torch and nvidia-ml-py; the matrix also needs transformers (no vLLM or SGLang). The checks, in order:

- ``telemetry``: NVML telemetry under a matmul load (``scripts/gpu/gpu_telemetry_check.py``);
- ``peak_table``: :data:`inproc.measure.peaks.DEVICE_PEAKS` has an entry for the device's NVML name;
- ``bandwidth``: the peak bandwidth against a measured copy (``scripts/gpu/gpu_bandwidth_check.py``);
- ``profiler``: the NVTX and cudaProfilerStart/Stop calls ``--nvtx`` and ``--profile cuda`` rely on
  (``scripts/gpu/gpu_profiler_check.py``); ``nsys``: the same under nsys, whose report must hold exactly
  the 3 bracketed steps' ranges (not run, and said so, where nsys is not on PATH);
- ``kernels``: the kernel pass over torch-only workloads (``scripts/gpu/gpu_kernel_check.py``), through the
  product's own profiler and reader: GEMM kernels are ``gemm``, SDPA's ``attention``, Triton's
  ``elementwise``, the copies ``memory``; eager, graph-replayed and compiled decode steps each get exactly
  their own activities, none unfiled;
- ``matrix``: a 3 × 3 speed-test matrix on transformers' continuous batching
  (``scripts/gpu/gpu_matrix_check.py``): statuses and reasons, tokens counted against the engine's, every
  activity of each kernel pass filed to a step, energy per token.

Exit 0 when every check passed, 1 when one failed (the file says which), 2 when it cannot run
here: one line saying why, and no file.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))

from gpu_check_steps import (  # noqa: E402
    Check, Deadline, kernels_check, nsys_check, peak_table_check, script_check,
)

DEFAULT_OUT = "gpu_check.json"
BUDGET_S = 470.0  # the whole run; each child check's own limit is cut to what is left
FORMAT = 1


def refusal() -> str | None:
    """Why the checks cannot run here (no torch, no CUDA device, no NVML), or None."""
    try:
        import torch
    except ImportError as exc:
        return f"torch is not installed ({exc})"
    if not torch.cuda.is_available():
        return f"torch {torch.__version__} sees no CUDA device"
    try:
        import pynvml

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
    except Exception as exc:  # noqa: BLE001 - NVML missing or failing: both mean "not here"
        return f"NVML is not usable ({type(exc).__name__}: {exc}); install nvidia-ml-py"
    return None


def device_facts() -> dict:
    """The machine the checks ran on, as torch and NVML name it."""
    import pynvml
    import torch

    pynvml.nvmlInit()
    try:
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        name, driver = pynvml.nvmlDeviceGetName(h), pynvml.nvmlSystemGetDriverVersion()
    finally:
        pynvml.nvmlShutdown()
    as_str = lambda v: v.decode() if isinstance(v, bytes) else str(v)  # noqa: E731 - older pynvml returns bytes
    return {"torch_name": torch.cuda.get_device_name(0), "nvml_name": as_str(name), "driver": as_str(driver),
            "torch": torch.__version__, "cuda": torch.version.cuda, "device_count": torch.cuda.device_count()}


def run_checks(deadline: Deadline) -> list[Check]:
    """Every check, in order; a check the budget no longer allows is failed as not run."""
    return [
        script_check("telemetry", "gpu_telemetry_check.py", ["--load-s", "10"], 150, deadline),
        peak_table_check(),
        script_check("bandwidth", "gpu_bandwidth_check.py", [], 90, deadline),
        script_check("profiler", "gpu_profiler_check.py", [], 60, deadline),
        nsys_check(deadline),
        kernels_check(deadline),
        script_check("matrix", "gpu_matrix_check.py", ["--budget-s", "240"], 300, deadline),
    ]


def write_atomic(path: Path, doc: dict) -> None:
    """Write ``doc`` as JSON through a temporary file, so a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and args[0].startswith("-")):
        print(f"gpu_check: unexpected arguments {' '.join(args)!r}; usage: gpu_check.py [OUT.json]", file=sys.stderr)
        return 2
    out = Path(args[0] if args else DEFAULT_OUT)
    why = refusal()
    if why:
        print(f"gpu_check: cannot run here: {why}; run it on a machine with CUDA torch and nvidia-ml-py",
              file=sys.stderr)
        return 2
    started = time.time()
    checks = run_checks(Deadline(time.monotonic() + BUDGET_S))
    failed = [c.name for c in checks if c.passed is False]
    write_atomic(out, {"format": FORMAT, "tool": "inproc scripts/gpu_check.py",
                       "created": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
                       "seconds": round(time.time() - started, 1), "device": device_facts(),
                       "passed": not failed, "failed": failed, "checks": [c.to_dict() for c in checks]})
    for c in checks:
        tag = "INFO" if c.passed is None else ("PASS" if c.passed else "FAIL")
        print(f"{tag:4}  {c.name} ({c.seconds:.0f} s): {c.detail}")
    print(f"{'FAIL' if failed else 'PASS'}: {len(failed)} check(s) failed {failed or ''}; wrote {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
