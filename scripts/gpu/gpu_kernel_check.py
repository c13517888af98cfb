#!/usr/bin/env python3
"""The kernel pass over torch-only CUDA workloads, through the product's own profiler and reader.

  PYTHONPATH=. python scripts/gpu/gpu_kernel_check.py      (scripts/gpu_check.sh runs it with the others)

Each part runs once outside the profiler (cuBLAS start-up, Triton compilation, graph capture),
then :data:`STEPS` times as steps of :class:`inproc.engines.torchprof.KernelProfiler`, the
kernel pass's own profiler, whose ``stop`` files the trace with :mod:`inproc.kernels.filing`:
no copy of either lives here. The parts:

- ``gemm``, ``sdpa`` (by default and per backend), ``triton`` (a compiled pointwise kernel),
  ``copy`` (memcpy in three directions and a fill): each passes when its expected category holds
  at least :data:`MIN_SHARE` of its device time;
- ``eager_step``, ``graph_step``, ``compiled_graph_step``: a decode-shaped step (a 2-layer
  Llama-8B-shaped stack at batch 32 over a static KV cache: GEMMs, SDPA, norms, argmax) run
  eagerly with no sync, replayed from a ``torch.cuda.CUDAGraph`` with no sync (the step mark
  closes before its kernels run), and the same step through ``torch.compile`` captured in a
  graph. Each passes when at most :data:`MAX_OTHER` of its device time is ``other``.

Every part must also be filed exactly: no activity unfiled, every step the same number of
activities (its own), none named after the step mark. Beside that, each part says how many of its
activities started outside every step mark (what filing by an activity's own start would lose).

Prints one JSON object; exit 0 when every part passed, 1 when one failed, 2 without CUDA.
"""
from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from inproc.kernels.categories import ATTENTION, ELEMENTWISE, GEMM, MEMORY, OTHER, category  # noqa: E402
from inproc.kernels.chrome import load_trace  # noqa: E402
from inproc.kernels.filing import DEVICE_CATS, MARK, FiledTrace, step_marks  # noqa: E402

STEPS = 5
MIN_SHARE = 0.9  # of a single-kind part's device time in its expected category
MAX_OTHER = 0.05  # of a whole step's device time left in ``other``
MIXED = "named"  # a whole step's parts: every category but other counts


@dataclass(frozen=True)
class KernelRow:
    """One kernel name of a part: its category, launches and device time over the profiled steps."""

    name: str
    category: str
    calls: int
    device_us: float


@dataclass(frozen=True)
class PartResult:
    """One part: what it expects, what ran, how it was filed, and whether the expectations held."""

    part: str
    expected: str
    passed: bool | None  # None: not run here (a backend or Triton missing), with the reason in detail
    share: float | None  # device time in the expected category ÷ the part's device time
    detail: str
    kernels: tuple[KernelRow, ...] = ()
    per_step: tuple[int, ...] = ()  # device activities filed to each step
    unfiled: int = 0
    own_start_outside: int = 0  # activities whose own start lies outside every step mark


def rows_of(filed: FiledTrace) -> tuple[KernelRow, ...]:
    """The pass's table summed over its steps, by device time."""
    out: dict[str, list] = {}
    t = filed.table
    for name, cat, calls, ns in zip(t.name, t.category, t.calls, t.device_ns):
        r = out.setdefault(name, [cat, 0, 0.0])
        r[1] += int(calls)
        r[2] += int(ns) / 1e3
    return tuple(sorted((KernelRow(n, c, k, round(us, 3)) for n, (c, k, us) in out.items()), key=lambda r: -r.device_us))


def own_start_outside(trace_path: str) -> int:
    """Device activities of the kept trace whose own start lies outside every step mark."""
    events = load_trace(trace_path)
    marks = step_marks(events, MARK)
    return sum(1 for e in events if e.cat in DEVICE_CATS
               and not any(m.start_ns <= e.start_ns < m.end_ns for m in marks))


def profile_part(torch, fn: Callable[[], object]) -> tuple[FiledTrace, int]:
    """``fn`` warmed up once, then :data:`STEPS` steps of the kernel pass's profiler, with no sync inside a step."""
    from inproc.engines.torchprof import KernelProfiler

    fn()
    torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        prof = KernelProfiler("cuda", tmp, "part")
        prof.start()
        for _ in range(STEPS):
            prof.step(fn)
        torch.cuda.synchronize()  # after the last mark: the kernels still running finish inside the profile
        filed, files = prof.stop()
        return filed, own_start_outside(files[0])


def judge(part: str, expected: str, kernels: tuple[KernelRow, ...], filed: FiledTrace | None = None,
          outside: int = 0, steps: int = STEPS) -> PartResult:
    """Pass when ``expected`` holds its share of the part's device time and (given the filing) every activity was
    filed, each step got the same number, and no row is the step mark."""
    total = sum(k.device_us for k in kernels)
    per_step = tuple(int(x) for x in filed.per_step_activities()) if filed is not None else ()
    unfiled = filed.unfiled if filed is not None else 0
    if not kernels or total <= 0:
        return PartResult(part, expected, False, None, "the profiler recorded no device kernel", kernels, per_step,
                          unfiled, outside)
    if expected == MIXED:
        share, need = 1 - sum(k.device_us for k in kernels if k.category == OTHER) / total, 1 - MAX_OTHER
    else:
        share, need = sum(k.device_us for k in kernels if k.category == expected) / total, MIN_SHARE
    problems = [] if share >= need else [f"{share:.1%} {expected} (need {need:.0%})"]
    if filed is not None:
        if unfiled:
            problems.append(filed.unfiled_text())
        if len(set(per_step)) != 1 or len(per_step) != steps or per_step[0] == 0:
            problems.append(f"activities per step {list(per_step)} (expect {steps} equal counts)")
        if any(k.name == MARK for k in kernels):
            problems.append("a row is named after the step mark")
    top = ", ".join(f"{k.name[:60]} -> {k.category}" for k in kernels[:3])
    filing = f"; per step {list(per_step)}, unfiled {unfiled}, own start outside the marks {outside}" if filed else ""
    detail = ("; ".join(problems) or f"{share:.1%} of {total:.0f} µs is {expected}") + filing + f"; top: {top}"
    return PartResult(part, expected, not problems, round(share, 4), detail, kernels, per_step, unfiled, outside)


def run_part(torch, part: str, expected: str, make: Callable[[], Callable[[], object]],
             optional: bool = False) -> PartResult:
    """Build and profile one part; an optional part that cannot run here is reported, not failed."""
    try:
        filed, outside = profile_part(torch, make())
    except Exception as exc:  # noqa: BLE001 - a part that cannot run is data, the others still run
        why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return PartResult(part, expected, None if optional else False, None, f"did not run: {why}")
    return judge(part, expected, rows_of(filed), filed, outside)


def decode_step(torch, layers: int = 2, batch: int = 32, ctx: int = 4096):
    """A decode-shaped step (Llama-8B-shaped layers in bf16 over a static KV cache), returning the argmax ids."""
    import torch.nn.functional as F

    h, nq, nkv, d, ffn, vocab = 4096, 32, 8, 128, 14336, 32000
    bf16, dev = torch.bfloat16, "cuda"
    w = lambda *s: torch.randn(*s, device=dev, dtype=bf16) * 0.02  # noqa: E731
    x = torch.randn(batch, h, device=dev, dtype=bf16)
    ws = [(w(h, (nq + 2 * nkv) * d), w(nq * d, h), w(h, 2 * ffn), w(ffn, h)) for _ in range(layers)]
    kv = [(w(batch, nkv, ctx, d), w(batch, nkv, ctx, d)) for _ in range(layers)]
    head = w(h, vocab)

    def step():
        y = x
        for (qkv_w, o_w, up_w, down_w), (k, v) in zip(ws, kv):
            a = F.rms_norm(y, (h,))
            q = (a @ qkv_w)[:, : nq * d].view(batch, nq, 1, d)
            att = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            y = y + att.reshape(batch, nq * d) @ o_w
            gate, up = (F.rms_norm(y, (h,)) @ up_w).chunk(2, dim=-1)
            y = y + (F.silu(gate) * up) @ down_w
        return (F.rms_norm(y, (h,)) @ head).argmax(dim=-1)
    return step


def graphed(torch, fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` captured once in a CUDA graph; each call replays it with no sync."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


def workload(torch) -> list[tuple[str, str, Callable[[], Callable[[], object]], bool]]:
    """(part, expected category, maker of the callable, optional) for every part of the workload."""
    import torch.nn.functional as F

    bf16 = torch.bfloat16
    no_triton = importlib.util.find_spec("triton") is None

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
        if no_triton:
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

    def compiled_graph():
        if no_triton:
            raise RuntimeError("triton is not installed")
        return graphed(torch, torch.compile(decode_step(torch)))

    return [("gemm", GEMM, gemm, False), ("sdpa", ATTENTION, sdpa(), False),
            *((f"sdpa[{b.lower()}]", ATTENTION, sdpa(b), True)
              for b in ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION")),
            ("triton", ELEMENTWISE, triton_pointwise, no_triton),
            ("copy", MEMORY, copies, False),
            ("eager_step", MIXED, lambda: decode_step(torch), False),
            ("graph_step", MIXED, lambda: graphed(torch, decode_step(torch)), False),
            ("compiled_graph_step", MIXED, compiled_graph, no_triton)]


def kernel_pass(torch) -> list[PartResult]:
    """Every part of :func:`workload`, profiled and judged."""
    return [run_part(torch, part, expected, make, optional) for part, expected, make, optional in workload(torch)]


def summary(results: list[PartResult]) -> dict:
    """The JSON form: per part its verdict, filing and kernels, and every name no rule matched."""
    unmatched = sorted({k.name for r in results for k in r.kernels if k.category == OTHER})
    return {"passed": all(r.passed is not False for r in results), "min_share": MIN_SHARE, "max_other": MAX_OTHER,
            "steps": STEPS, "parts": [asdict(r) for r in results], "unmatched": unmatched}


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
