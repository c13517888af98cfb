"""A decode cell's compact summary (``inproc.record.compact``), made from its raw records.

Every value is one of the definitions in ``inproc.measure.metrics`` and ``inproc.measure.anatomy``
applied to the window, or a mean of a step column over the window's steps; nothing is
measured here. The sub-windows are cut by the caller's rule (``inproc compare``'s default
``SubWindowing()``, which this layer does not import).
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

from inproc.kernels.summary import KernelSummary, summarize
from inproc.measure import anatomy as an
from inproc.measure import metrics as m
from inproc.measure.metrics import Window
from inproc.measure.trace import CellTrace
from inproc.measure.steps import StepTrace
from inproc.record.compact import BatchTimes, CellAnatomy, CellSamples, CellSummary
from inproc.record.schema import DecodeEntry
from inproc.types import Capacity


class Cutting(Protocol):
    """How a window is cut into sub-windows (``inproc.compare.samples.SubWindowing``)."""

    steps: int | None

    def cut(self, entry: DecodeEntry, w: Window) -> list[Window]: ...

    def sub_s_for(self, window_s: float) -> float | None: ...


def cell_summary(entry: DecodeEntry, capacity: Capacity, cutting: Cutting) -> CellSummary:
    """The cell's figures, samples and anatomy; a cell without a window keeps only its status (in the run)."""
    if entry.summary is not None and entry.trace is None:
        return entry.summary  # already compact (read from a summary or a compact baseline)
    w = m.window(entry.trace) if entry.trace is not None else None
    f = entry.figures
    if w is None or f is None:
        return CellSummary(None, None, None, None, None, entry.throttled, entry.disturbed)
    return CellSummary(f.total_tok_s, f.tbt_ms, f.ttft_ms, cell_samples(entry, w, cutting),
                       cell_anatomy(entry, w, capacity), entry.throttled, entry.disturbed)


def cell_samples(entry: DecodeEntry, w: Window, cutting: Cutting) -> CellSamples:
    """Sub-window tokens and seconds, the per-token gaps as (value, count), every TTFT."""
    trace = entry.trace
    subs = cutting.cut(entry, w)
    values, counts, units = gap_counts(trace, w, subs)
    by_submit = sorted(trace.requests, key=lambda r: r.submit_s)
    ttft = [v for v in (m.ttft_s(trace, r) for r in by_submit) if v is not None]
    return CellSamples(
        cutting.sub_s_for(trace.window_target_s), cutting.steps, m.output_tokens_each(trace, subs),
        np.array([m.measured_for_s(s) for s in subs], dtype=np.float64),
        values, counts, units, np.asarray(ttft, dtype=np.float64))


def gap_counts(trace: CellTrace, w: Window, subs: list[Window]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The window's per-token gaps (exactly :func:`~inproc.measure.metrics.tbt_intervals_s`'s multiset), by the
    sub-window of their arrival: (values, counts, sub-windows), one row per distinct (sub-window, value), in that order.

    A gap is fixed by its arrival step, the request's arrival before it and the tokens it
    brought (the value is (t_end[step] − t_end[before]) ÷ tokens, as tbt_intervals_s takes it);
    every request a step served right after the step before shares one such key, so keys
    are counted first and a value is computed once per key, never once per token.
    """
    ends, last_steps = trace.steps.t_end_s, np.array([s.last_step for s in subs])
    steps, counts, req = m.arrivals(trace)
    keep = (steps >= w.first_step) & (steps <= w.last_step)
    steps, counts, req = steps[keep], counts[keep], req[keep]
    follows = req[1:] == req[:-1]  # an arrival after the same request's previous one in the window
    step, before, tokens = steps[1:][follows], steps[:-1][follows], counts[1:][follows]
    usual = (step - before == 1) & (tokens == 1)
    per_step = np.bincount(step[usual], minlength=ends.size)
    at = np.flatnonzero(per_step)
    k_step, k_before, k_tokens, n = _counted_keys(step[~usual], before[~usual], tokens[~usual], ends.size)
    values = np.concatenate([(ends[at] - ends[at - 1]) / 1, (ends[k_step] - ends[k_before]) / k_tokens])  # ÷ tokens
    weights = np.concatenate([per_step[at], n * k_tokens])
    units = np.searchsorted(last_steps, np.concatenate([at, k_step])).astype(np.int64)
    order = np.lexsort((values, units))
    values, weights, units = values[order], weights[order], units[order]
    first = np.flatnonzero(np.concatenate([[True], (units[1:] != units[:-1]) | (values[1:] != values[:-1])]))
    if values.size == 0:  # no request arrived twice in the window
        return values, weights.astype(np.int64), units
    return values[first], np.add.reduceat(weights, first).astype(np.int64), units[first]  # equal values: one row


def _counted_keys(step: np.ndarray, before: np.ndarray, tokens: np.ndarray, n_steps: int):
    """The distinct (step, before, tokens) triples and how many times each occurs."""
    span = int(tokens.max()) + 1 if tokens.size else 1
    keys, n = np.unique((step * n_steps + before) * span + tokens, return_counts=True)
    return keys // span // n_steps, keys // span % n_steps, keys % span, n


def _mean_host_s(steps: StepTrace, rows: np.ndarray) -> float | None:
    host = steps.schedule_s[rows] + steps.update_s[rows]
    return None if host.size == 0 or np.isnan(host).any() else float(host.mean())


def batch_times(steps: StepTrace, w: Window) -> tuple[BatchTimes, ...]:
    """Per batch size (requests in the batch the step formed, as in batch_size_histogram): steps, mean times."""
    rows = np.arange(w.first_step, w.last_step + 1)
    shaped = steps.num_prefill_reqs[rows] + steps.num_decode_reqs[rows]
    sizes = np.where(steps.num_prefill_reqs[rows] >= 0, shaped, steps.num_running[rows])
    step_s = steps.t_end_s[rows] - steps.t_start_s[rows]
    out = []
    for size in np.unique(sizes):
        sel = rows[sizes == size]
        out.append(BatchTimes(int(size), int(sel.size), float(step_s[sizes == size].mean()), _mean_host_s(steps, sel)))
    return tuple(out)


def _per_token(steps: StepTrace, w: Window, columns: tuple[str, ...]) -> float | None:
    rows = slice(w.first_step, w.last_step + 1)
    values = sum(steps.columns[c][rows] for c in columns)
    tokens = an.scheduled_tokens(steps, w)
    return None if np.isnan(values).any() or not tokens else float(values.sum() / tokens)


def anatomy_of(entry: DecodeEntry, capacity: Capacity) -> CellAnatomy | None:
    """The cell's anatomy: stored (a compact cell) or made from its trace (None: no window)."""
    if entry.trace is None:
        return entry.summary.anatomy if entry.summary is not None else None
    w = m.window(entry.trace)
    return cell_anatomy(entry, w, capacity) if w is not None and entry.figures is not None else None


def cell_anatomy(entry: DecodeEntry, w: Window, capacity: Capacity) -> CellAnatomy:
    """The window's anatomy: step and host time (overall and per batch size), graphs, padding, queues, telemetry."""
    steps, f = entry.trace.steps, entry.figures
    rows = np.arange(w.first_step, w.last_step + 1)
    a = f.anatomy
    tel = entry.telemetry.figures if entry.telemetry is not None else None
    return CellAnatomy(
        steps=int(rows.size), window_s=m.measured_for_s(w), output_tokens=f.output_tokens,
        step_s=an.step_time_s(steps, w) / rows.size, host_s=_mean_host_s(steps, rows),
        graph_step_share=dict(a.graph_step_share) if a else {}, padding_waste=a.padding_waste if a else None,
        batch_times=batch_times(steps, w),
        bytes_per_token=_per_token(steps, w, ("read_bytes", "write_bytes")),
        flops_per_token=_per_token(steps, w, ("flops",)),
        bandwidth_peak_fraction=a.bandwidth_peak_fraction if a else None,
        spec_acceptance_rate=f.spec_acceptance_rate, spec_mean_acceptance_length=f.spec_mean_acceptance_length,
        preemptions=f.preemptions, max_waiting=f.max_waiting,
        mean_waiting=float(steps.num_waiting[rows].clip(min=0).mean()), kv_blocks=capacity.num_blocks,
        sm_clock_mhz=tel.mean_sm_clock_mhz if tel else None, power_w=tel.mean_power_w if tel else None,
        throttle_fraction=dict(tel.throttle_fraction) if tel else {},
        cpu_freq_mhz=tel.mean_cpu_freq_mhz if tel else None, process_cpu_pct=tel.process_cpu_util_pct if tel else None,
        slow=f.slow, kernels=kernel_summary(entry))


def kernel_summary(entry: DecodeEntry) -> KernelSummary | None:
    """The cell's kernel pass, compact, its steps' own time read from the step trace (None: no pass)."""
    if entry.trace is None:
        return entry.summary.anatomy.kernels if entry.summary is not None and entry.summary.anatomy else None
    trace = entry.trace
    if trace.kernels is None:
        return None
    span = trace.kernel_pass
    rows = np.arange(span.first_step, span.last_step + 1) if span is not None and span.last_step >= span.first_step else None
    return summarize(trace.kernels, trace.steps.t_end_s - trace.steps.t_start_s, rows)
