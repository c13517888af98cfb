#!/usr/bin/env python3
"""Check, on a real GPU with plain CUDA torch, the calls ``--nvtx`` and ``--profile cuda`` rely on.

  python scripts/gpu/gpu_profiler_check.py
  nsys profile --capture-range=cudaProfilerApi -o /tmp/check python scripts/gpu/gpu_profiler_check.py

It pushes and pops one NVTX range per fake "step" (matmuls) with inproc's own StepRanges,
the way the driver does, and brackets steps 3-5 with cudaProfilerStart/Stop through
``torch.cuda.profiler`` (what vLLM's and SGLang's "cuda" profilers call). Run under nsys,
the report must hold exactly those 3 steps' ranges. Needs no engine. Prints one JSON line;
exit 0 when every call worked, 2 when CUDA is not here.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from inproc.run.profiling import StepRanges  # noqa: E402
from inproc.types import BatchShape, ForwardStats, StepResult  # noqa: E402


def main() -> int:
    try:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("CUDA is not available")
    except Exception as e:  # noqa: BLE001
        print(json.dumps({"ran": False, "why": f"{type(e).__name__}: {e}"}))
        return 2
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    ranges = StepRanges(torch.cuda.nvtx, 8192, 16)
    timings = []
    for step in range(8):
        if step == 3:
            torch.cuda.profiler.start()  # cudaProfilerStart
        ranges.push(step)
        t = time.perf_counter()
        for _ in range(10):
            x = (x @ x).clamp_(-1, 1)
        torch.cuda.synchronize()
        timings.append(time.perf_counter() - t)
        ranges.pop(step, StepResult((), 16, 0, 16, batch=BatchShape(0, 0, 16, 16), forward=ForwardStats("FULL", 16, 16)))
        if step == 5:
            torch.cuda.profiler.stop()  # cudaProfilerStop
    print(json.dumps({"ran": True, "device": torch.cuda.get_device_name(0), "steps": 8, "profiled_steps": [3, 4, 5],
                      "step_ms": [round(s * 1000, 3) for s in timings]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
