"""The figures of a prefill row entry and of a decode cell, assembled from ``inproc.metrics``.

Nothing here measures or defines a figure: each field is the value of the metric
function named beside it, so the JSON, the report and comparisons share one definition.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from inproc.measure import anatomy as an
from inproc.measure.acceptance import AcceptanceFigures, acceptance_figures
from inproc.measure import metrics as m
from inproc.measure.anatomy import AnatomyFigures
from inproc.measure.kv import KvUsage, kv_usage
from inproc.measure.peaks import Peaks
from inproc.measure.slow import SlowFigures, slow_figures
from inproc.measure.trace import CellTrace


@dataclass(frozen=True)
class PrefillFigures:
    """Cold prefill at one context: medians over its samples."""

    ttft_ms: float | None  # median m.prefill_ttft_s × 1000
    prompt_tok_s: float | None  # median m.prompt_tok_s
    steps: int | None  # median m.prefill_steps
    samples: int
    cached_tokens: int  # max over samples of the engine's num_cached_tokens (must be 0)
    prefix_hits: int  # engine prefix-cache hit tokens over all samples (must be 0)


def prefill_figures(samples: list[CellTrace]) -> PrefillFigures:
    ttft = [t for t in (m.prefill_ttft_s(s) for s in samples) if t is not None]
    rate = [r for r in (m.prompt_tok_s(s) for s in samples) if r is not None]
    hits = [m.counter_delta(s, "prefix_hits") or 0 for s in samples]
    return PrefillFigures(
        ttft_ms=float(np.median(ttft) * 1000) if ttft else None,
        prompt_tok_s=float(np.median(rate)) if rate else None,
        steps=int(np.median([m.prefill_steps(s) for s in samples])) if samples else None,
        samples=len(samples),
        cached_tokens=max((s.requests[0].num_cached_tokens or 0) for s in samples) if samples else 0,
        prefix_hits=int(sum(hits)),
    )


@dataclass(frozen=True)
class DecodeFigures:
    """Sustained decode over the window; names follow the published matrices' columns."""

    total_tok_s: float  # m.total_tok_s
    per_request_tok_s: float | None  # m.per_request_tok_s
    ttft_ms: float | None  # m.ttft_ms_median
    tbt_ms: float | None  # m.tbt_ms_median
    avg_active: float  # m.avg_active
    completed: int  # m.completed_requests
    output_tokens: int  # m.output_tokens
    window_s: float  # m.measured_for_s
    max_waiting: int  # m.max_waiting
    harness_overhead: float  # m.harness_overhead
    preemptions: int | None  # an.preemptions
    spec_acceptance_rate: float | None  # m.spec_acceptance_rate
    spec_mean_acceptance_length: float | None  # m.spec_mean_acceptance_length
    anatomy: AnatomyFigures | None = None  # an.anatomy_figures
    kv: KvUsage | None = None  # inproc.measure.kv.kv_usage
    slow: SlowFigures | None = None  # inproc.measure.slow.slow_figures
    acceptance: AcceptanceFigures | None = None  # inproc.measure.acceptance.acceptance_figures (per-step drafts)

    def to_dict(self) -> dict:
        return asdict(self)


def _anatomy(trace: CellTrace, w: m.Window, bw: float | None, fl: float | None) -> AnatomyFigures:
    aw = m.anatomy_window(trace, w)
    return an.anatomy_figures(trace.steps, aw, bw, fl, own_pass=aw is not w)


def decode_figures(trace: CellTrace, peaks: Peaks | None = None, anatomy: bool = True,
                   kv_pool_blocks: int | None = None) -> DecodeFigures | None:
    """Figures of a decode cell, or None when its window never held a step.

    ``peaks``: the device limits the step anatomy's bandwidth and FLOP/s are read against.
    ``anatomy``: False for a run made with ``--anatomy off``; its anatomy is then None (absent).
    ``kv_pool_blocks``: the blocks requests can hold, which KV usage is read against.
    """
    w = m.window(trace)
    if w is None:
        return None
    bw = peaks.bandwidth_bytes_s.value if peaks else None
    fl = peaks.flops.value if peaks else None
    return DecodeFigures(
        total_tok_s=m.total_tok_s(trace, w),
        per_request_tok_s=m.per_request_tok_s(trace, w),
        ttft_ms=m.ttft_ms_median(trace),
        tbt_ms=m.tbt_ms_median(trace, w),
        avg_active=m.avg_active(trace, w),
        completed=m.completed_requests(trace, w),
        output_tokens=m.output_tokens(trace, w),
        window_s=m.measured_for_s(w),
        max_waiting=m.max_waiting(trace, w),
        harness_overhead=m.harness_overhead(trace, w),
        preemptions=an.preemptions(trace.steps, w),
        spec_acceptance_rate=m.spec_acceptance_rate(trace),
        spec_mean_acceptance_length=m.spec_mean_acceptance_length(trace),
        anatomy=_anatomy(trace, w, bw, fl) if anatomy else None,
        kv=kv_usage(trace.steps, w, kv_pool_blocks) if kv_pool_blocks else None,
        slow=slow_figures(trace.steps, w),
        acceptance=acceptance_figures(trace.steps, w.first_step, w.last_step, trace.forced_acceptance_length),
    )
