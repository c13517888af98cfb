"""Synthetic records whose decode steps' token counts are known (for the graphs tests).

Built on the real CPU run ``tests/fixtures/cpu-vllm-small.json`` (its machine, profile and
capacity), with decode cells whose step traces are made here: C requests in flight, one
token per request per step, and each window step's forward reporting the given token count
(its ``CUDAGraphStat`` unpadded tokens) padded to the given capture list. Figures and
verdicts are derived by inproc's own definitions when the file is written and loaded.
"""
from __future__ import annotations

import dataclasses
import tomllib
from array import array
from pathlib import Path

import numpy as np

from inproc.graphs.padding import padded_tokens
from inproc.measure.steps import StepTrace, on_ns_grid_array
from inproc.measure.trace import CellTrace, RequestTrace
from inproc.plan.matrix import CellPlan
from inproc.record import derive
from inproc.record.io import load_results, write_results
from inproc.record.schema import RunRecord

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "tests" / "fixtures" / "cpu-vllm-small.json"
SHIPPED = ROOT / "launch_profiles" / "vllm-deepseek-v4.1-flash-rtxpro6000x8.toml"
WARMUP = 2  # steps before the window opens


def shipped_sizes() -> tuple[int, ...]:
    """The capture sizes of the shipped DeepSeek-V4.1-Flash profile (55, up to 768)."""
    with open(SHIPPED, "rb") as f:
        return tuple(tomllib.load(f)["engine_args"]["compilation-config"]["cudagraph_capture_sizes"])


def spec_counts(rng: np.random.Generator, c: int, k: int, n: int) -> np.ndarray:
    """Token counts of ``n`` decode steps of C requests with k drafts each, some cut (adaptive verification)."""
    drafts = rng.integers(0, k + 1, size=(n, c))
    drafts = np.where(rng.random((n, c)) < 0.6, k, drafts)  # most requests get all k drafts
    return (1 + drafts).sum(axis=1)


def trace(c: int, counts: np.ndarray, captured: tuple[int, ...], step_s: float = 0.01) -> CellTrace:
    """C requests in flight for WARMUP + len(counts) steps; window steps report ``counts``."""
    n = WARMUP + counts.size
    t_end = on_ns_grid_array(np.arange(1, n + 1) * step_s)
    t_start = on_ns_grid_array(t_end - step_s * 0.9)
    all_counts = np.concatenate([np.full(WARMUP, c), counts]).astype(np.int64)
    padded = padded_tokens(all_counts, captured)
    modes = np.where(all_counts <= (captured[-1] if captured else 0), 2, 0)  # FULL inside the list, NONE above
    steps = StepTrace.of(t_start_s=t_start, t_end_s=t_end, num_running=np.full(n, c), num_waiting=np.zeros(n),
                         num_scheduled_tokens=all_counts, num_preempted=np.zeros(n), num_prefill_reqs=np.zeros(n), num_decode_reqs=np.full(n, c),
                         num_decode_tokens=all_counts, num_unpadded_tokens=all_counts, num_padded_tokens=padded,
                         graph_mode=modes)
    reqs = [RequestTrace(f"r{i}", 256, n + 10, 0.0, True, array("i", range(n)), array("i", [1] * n),
                         array("i", ((np.arange(n) * 7919 + i * 104729) % 31000 + 100).tolist()))
            for i in range(c)]
    return CellTrace(steps, reqs, float(t_end[WARMUP - 1]), float(t_end[-1] - t_end[WARMUP - 1]), "all first tokens",
                     window_steps=counts.size)


def record(cells: dict[tuple[int, int], np.ndarray], captured: tuple[int, ...], k: int = 0,
           memory_bytes: int | None = None, capture_s: float | None = None) -> RunRecord:
    """A record of decode cells (context, C) → their window steps' token counts, made as ``captured`` pads them."""
    tmpl = load_results(TEMPLATE)
    decode = tuple(derive.decode_entry(CellPlan(L, C, 10_000, None), "shared", "", trace(C, np.asarray(n), captured),
                                       None, tmpl.capacity, tmpl.plan.loops) for (L, C), n in cells.items())
    settings = dataclasses.replace(tmpl.engine.settings, graph_capture_sizes=captured, graph_capture_memory_bytes=memory_bytes,
                                   graph_capture_s=capture_s, num_speculative_tokens=k or None,
                                   speculative_method="dspark" if k else None)
    engine = dataclasses.replace(tmpl.engine, settings=settings, build_s=300.0)
    plan = dataclasses.replace(tmpl.plan, settings=dataclasses.replace(tmpl.settings, cells=tuple(cells) or None))
    return dataclasses.replace(tmpl, engine=engine, plan=plan, prefill=(), decode=decode, finished=True, unreadable=())


def write(path: Path, rec: RunRecord) -> Path:
    write_results(path, rec)
    return path


def gpu_like(path: Path, seed: int = 3) -> Path:
    """The shipped DeepSeek-V4.1-Flash list (55 sizes, k = 5) on cells 8K × C, C = 1..128, counts seen up to 768."""
    rng = np.random.default_rng(seed)
    cells = {(8192, c): spec_counts(rng, c, 5, 120) for c in (1, 2, 4, 8, 16, 32, 64, 128)}
    return write(path, record(cells, shipped_sizes(), k=5, memory_bytes=3 * 2**30, capture_s=41.0))
