#!/usr/bin/env python3
"""The kernel pass over a torch-only CUDA workload: are real CUDA kernels categorized right?

  PYTHONPATH=. python scripts/gpu_kernel_check.py      (scripts/gpu_check.sh runs it with the others)

Each part of the workload (a bf16 GEMM; ``scaled_dot_product_attention``, by default and
per backend; a Triton kernel from ``torch.compile``; copies and a fill) runs once outside the
profiler (cuBLAS start-up, Triton compilation), then :data:`REPEATS` times under
``torch.profiler``. Every device kernel (and memcpy / memset) it launched is categorized
with :func:`inproc.kernels.categories.category`; the part passes when its expected category
holds at least :data:`MIN_SHARE` of the part's device time. Names no rule matches are listed.

Prints one JSON object; exit 0 when every part passed, 1 when one failed, 2 without CUDA.
"""
from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from inproc.kernels.categories import ATTENTION, ELEMENTWISE, GEMM, MEMORY, OTHER, category  # noqa: E402

REPEATS = 5
MIN_SHARE = 0.9  # of a part's device time in its expected category


@dataclass(frozen=True)
class KernelRow:
    """One kernel name of a part: its category, launches and device time over the profiled repeats."""

    name: str
    category: str
    calls: int
    device_us: float


@dataclass(frozen=True)
class PartResult:
    """One part of the workload: what it expects, what ran, and whether the expectation held."""

    part: str
    expected: str
    passed: bool | None  # None: not run here (a backend or Triton missing), with the reason in detail
    share: float | None  # device time in the expected category ÷ the part's device time
    detail: str
    kernels: tuple[KernelRow, ...] = ()


def device_kernels(prof) -> dict[str, list[float]]:
    """Per device kernel name: [launches, device µs], from a finished ``torch.profiler.profile``."""
    from torch.autograd import DeviceType

    events = prof.events()
    # GPU-side user annotations ("Torch-Compiled Region", record_function) are ranges, not kernels; where
    # torch does not flag them, they still carry the name of a CPU-side range.
    cpu_names = {e.name for e in events if e.device_type == DeviceType.CPU}
    out: dict[str, list[float]] = {}
    for e in events:
        if e.device_type != DeviceType.CUDA or getattr(e, "is_user_annotation", False) or e.name in cpu_names:
            continue
        row = out.setdefault(e.name, [0, 0.0])
        row[0] += 1
        row[1] += e.time_range.elapsed_us()
    return out


def profile_part(torch, fn: Callable[[], object]) -> tuple[KernelRow, ...]:
    """The kernels ``fn`` launches, warmed up once, then profiled over :data:`REPEATS` calls."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(REPEATS):
            fn()
        torch.cuda.synchronize()
    rows = (KernelRow(n, category(n), int(c), round(us, 3)) for n, (c, us) in device_kernels(prof).items())
    return tuple(sorted(rows, key=lambda r: -r.device_us))


def judge(part: str, expected: str, kernels: tuple[KernelRow, ...]) -> PartResult:
    """Pass when ``expected`` holds at least :data:`MIN_SHARE` of the part's device time."""
    total = sum(k.device_us for k in kernels)
    if not kernels or total <= 0:
        return PartResult(part, expected, False, None, "the profiler recorded no device kernel", kernels)
    share = sum(k.device_us for k in kernels if k.category == expected) / total
    top = ", ".join(f"{k.name[:60]} -> {k.category}" for k in kernels[:3])
    return PartResult(part, expected, share >= MIN_SHARE, round(share, 4),
                      f"{share:.1%} of {total:.0f} µs is {expected} (need {MIN_SHARE:.0%}); top: {top}", kernels)


def run_part(torch, part: str, expected: str, make: Callable[[], Callable[[], object]],
             optional: bool = False) -> PartResult:
    """Build and profile one part; an optional part that cannot run here is reported, not failed."""
    try:
        kernels = profile_part(torch, make())
    except Exception as exc:  # noqa: BLE001 - a part that cannot run is data, the others still run
        why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return PartResult(part, expected, None if optional else False, None, f"did not run: {why}")
    return judge(part, expected, kernels)


def workload(torch) -> list[tuple[str, str, Callable[[], Callable[[], object]], bool]]:
    """(part, expected category, maker of the callable, optional) for every part of the workload."""
    import torch.nn.functional as F

    bf16 = torch.bfloat16

    def gemm():
        a, b = (torch.randn(4096, 4096, device="cuda", dtype=bf16) for _ in range(2))
        return lambda: a @ b

    def sdpa(backend=None):
        def make():
            q, k, v = (torch.randn(8, 16, 1024, 128, device="cuda", dtype=bf16) for _ in range(3))
            if backend is None:
                return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
            from torch.nn.attention import SDPBackend, sdpa_kernel

            def call():
                with sdpa_kernel(getattr(SDPBackend, backend)):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return call
        return make

    def triton_pointwise():
        if importlib.util.find_spec("triton") is None:
            raise RuntimeError("triton is not installed")
        x = torch.randn(8192, 4096, device="cuda", dtype=bf16)
        fn = torch.compile(lambda t: F.silu(t) * t + 1.0)
        return lambda: fn(x)

    def copies():
        n = 64 * 2**20  # bf16 elements: 128 MiB
        src, dst = torch.ones(n, device="cuda", dtype=bf16), torch.empty(n, device="cuda", dtype=bf16)
        host = torch.ones(n // 8, dtype=bf16).pin_memory()

        def call():
            dst.copy_(src)  # Memcpy DtoD
            dst[: n // 8].copy_(host, non_blocking=True)  # Memcpy HtoD
            host.copy_(src[: n // 8], non_blocking=True)  # Memcpy DtoH
            dst.fill_(0.5)  # FillFunctor
        return call

    return [("gemm", GEMM, gemm, False), ("sdpa", ATTENTION, sdpa(), False),
            *((f"sdpa[{b.lower()}]", ATTENTION, sdpa(b), True)
              for b in ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION")),
            ("triton", ELEMENTWISE, triton_pointwise, importlib.util.find_spec("triton") is None),
            ("copy", MEMORY, copies, False)]


def kernel_pass(torch) -> list[PartResult]:
    """Every part of :func:`workload`, profiled and judged."""
    return [run_part(torch, part, expected, make, optional) for part, expected, make, optional in workload(torch)]


def summary(results: list[PartResult]) -> dict:
    """The JSON form: per part its verdict and kernels, and every name no rule matched."""
    unmatched = sorted({k.name for r in results for k in r.kernels if k.category == OTHER})
    return {"passed": all(r.passed is not False for r in results), "min_share": MIN_SHARE, "repeats": REPEATS,
            "parts": [asdict(r) for r in results], "unmatched": unmatched}


def main() -> int:
    try:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device")
    except Exception as exc:  # noqa: BLE001 - the check cannot run here
        print(json.dumps({"ran": False, "why": f"{type(exc).__name__}: {exc}"}))
        return 2
    out = summary(kernel_pass(torch))
    print(json.dumps(out))
    return 0 if out["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
