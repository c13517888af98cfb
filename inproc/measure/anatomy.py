"""Step anatomy of a decode cell: what the window's batches were and how close they came to the device.

Every figure is over the batches *formed* by the anatomy's own pass (the steps right after
the decode window, with the same requests in flight; rows ``first_step`` to ``last_step``
of the step trace, see ``inproc.measure.steps``), whatever step returned their outputs.
The accounting these figures need (vLLM's per-step FLOP and byte counts, the batch shapes)
is switched on for that pass only, so the headline's window runs without its cost; a
record made before the pass existed is read over its window. A step's time is its
``Engine.step()`` call, start to end. A column the engine did not report makes its figure
None (a dash in the report).

A run made with ``--anatomy off`` has no anatomy at all: its engine was built without the
per-step accounting, so the figures are absent (the report says :data:`OFF`), never zero.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from inproc.measure.metrics import Window
from inproc.measure.steps import StepTrace
from inproc.types import GRAPH_MODES


#: What the report says in place of the step anatomy of a run made with ``--anatomy off``.
OFF = ("off (--anatomy off): the engine was built without its per-step accounting, so CUDA-graph shares, "
       "padding, bandwidth, FLOP/s and host share are absent")


def _rows(w: Window) -> slice:
    return slice(w.first_step, w.last_step + 1)


def step_time_s(steps: StepTrace, w: Window) -> float:
    """Σ over the window's steps of (end − start) of their ``Engine.step()`` call."""
    r = _rows(w)
    return float((steps.t_end_s[r] - steps.t_start_s[r]).sum())


def graph_step_share(steps: StepTrace, w: Window) -> dict[str, float]:
    """Share of the window's batches that ran in each CUDA-graph mode (FULL, PIECEWISE, NONE).

    Over the batches whose mode the engine reported; empty when it reported none.
    """
    modes = steps.graph_mode[_rows(w)]
    modes = modes[modes >= 0]
    return {GRAPH_MODES[m]: float((modes == m).sum() / modes.size) for m in np.unique(modes)} if modes.size else {}


def graph_token_share(steps: StepTrace, w: Window) -> dict[str, float]:
    """Share of the window's unpadded (scheduled) tokens that ran in each CUDA-graph mode."""
    r = _rows(w)
    modes, tokens = steps.graph_mode[r], steps.num_unpadded_tokens[r]
    keep = (modes >= 0) & (tokens >= 0)
    total = tokens[keep].sum()
    if not total:
        return {}
    return {GRAPH_MODES[m]: float(tokens[keep & (modes == m)].sum() / total) for m in np.unique(modes[keep])}


def padding_waste(steps: StepTrace, w: Window) -> float | None:
    """(Σ padded − Σ unpadded tokens) ÷ Σ padded tokens over the window's batches.

    Padded tokens are what the captured CUDA graph ran (the batch rounded up to a capture
    size); on batches run without a graph both are equal.
    """
    r = _rows(w)
    padded, unpadded = steps.num_padded_tokens[r], steps.num_unpadded_tokens[r]
    keep = (padded >= 0) & (unpadded >= 0)
    total = padded[keep].sum()
    return float((total - unpadded[keep].sum()) / total) if total else None


def batch_size_histogram(steps: StepTrace, w: Window) -> dict[int, int]:
    """Window batches by size: requests in the batch (prefill + decode) → number of batches.

    Where the engine did not report a batch's shape, its running count stands in.
    """
    r = _rows(w)
    shaped = steps.num_prefill_reqs[r] + steps.num_decode_reqs[r]
    sizes = np.where(steps.num_prefill_reqs[r] >= 0, shaped, steps.num_running[r])
    values, counts = np.unique(sizes, return_counts=True)
    return {int(v): int(c) for v, c in zip(values, counts)}


def _per_step_time(steps: StepTrace, w: Window, columns: tuple[str, ...]) -> float | None:
    r = _rows(w)
    values = sum(steps.columns[c][r] for c in columns)
    if np.isnan(values).any() or values.size == 0:
        return None
    t = step_time_s(steps, w)
    return float(values.sum() / t) if t > 0 else None


def achieved_bandwidth(steps: StepTrace, w: Window) -> float | None:
    """Σ (read + write bytes per GPU) of the window's batches ÷ :func:`step_time_s`, in bytes/s."""
    return _per_step_time(steps, w, ("read_bytes", "write_bytes"))


def achieved_flops(steps: StepTrace, w: Window) -> float | None:
    """Σ FLOPs per GPU of the window's batches ÷ :func:`step_time_s`, in FLOP/s."""
    return _per_step_time(steps, w, ("flops",))


def host_overhead_fraction(steps: StepTrace, w: Window) -> float | None:
    """Σ (time inside the scheduler's batch forming + output processing) ÷ :func:`step_time_s`.

    The rest of a step is the model's forward and sampling, waited on (and, under async
    scheduling, the previous batch's).
    """
    return _per_step_time(steps, w, ("schedule_s", "update_s"))


def adapter_fraction(steps: StepTrace, w: Window) -> float | None:
    """Σ (the adapter's instrumentation + its conversion of the engine's outputs) ÷ :func:`step_time_s`.

    Both run inside ``Engine.step()`` (``probe_s``: batch shape, tags, stats in the
    scheduler wrappers; ``convert_s``: outputs turned into deltas), so the harness
    overhead, which is the time between steps, does not see them. None for files written
    before ``convert_s`` was recorded.
    """
    return _per_step_time(steps, w, ("probe_s", "convert_s"))


def preemptions(steps: StepTrace, w: Window) -> int:
    """Requests the scheduler preempted while forming the window's batches (from each step's batch)."""
    return int(steps.num_preempted[_rows(w)].sum())


def scheduled_tokens(steps: StepTrace, w: Window) -> int:
    """Tokens the scheduler scheduled in the window's batches."""
    return int(steps.num_scheduled_tokens[_rows(w)].clip(min=0).sum())


@dataclass(frozen=True)
class AnatomyFigures:
    """What a decode cell's window was made of; each field is the function named beside it."""

    graph_step_share: Mapping[str, float] = field(default_factory=dict)  # graph_step_share
    graph_token_share: Mapping[str, float] = field(default_factory=dict)  # graph_token_share
    padding_waste: float | None = None  # padding_waste
    batch_sizes: Mapping[int, int] = field(default_factory=dict)  # batch_size_histogram
    bandwidth_bytes_s: float | None = None  # achieved_bandwidth
    flops_per_s: float | None = None  # achieved_flops
    bandwidth_peak_fraction: float | None = None  # achieved_bandwidth ÷ the device's peak
    flops_peak_fraction: float | None = None  # achieved_flops ÷ the device's peak
    host_overhead: float | None = None  # host_overhead_fraction
    adapter_overhead: float | None = None  # adapter_fraction
    scheduled_tokens: int = 0  # scheduled_tokens
    # Steps of the anatomy's own pass after the window that these figures were read from
    # (inproc.measure.metrics.anatomy_window); None: read from the window itself.
    pass_steps: int | None = None


def anatomy_figures(steps: StepTrace, w: Window, peak_bandwidth: float | None,
                    peak_flops: float | None, own_pass: bool = False) -> AnatomyFigures:
    """The anatomy of the steps ``w`` (the window, or the anatomy's own pass after it when
    ``own_pass``); fractions against the given peaks (None where a peak is unknown)."""
    bw, fl = achieved_bandwidth(steps, w), achieved_flops(steps, w)
    return AnatomyFigures(
        graph_step_share=graph_step_share(steps, w),
        graph_token_share=graph_token_share(steps, w),
        padding_waste=padding_waste(steps, w),
        batch_sizes=batch_size_histogram(steps, w),
        bandwidth_bytes_s=bw,
        flops_per_s=fl,
        bandwidth_peak_fraction=bw / peak_bandwidth if bw is not None and peak_bandwidth else None,
        flops_peak_fraction=fl / peak_flops if fl is not None and peak_flops else None,
        host_overhead=host_overhead_fraction(steps, w),
        adapter_overhead=adapter_fraction(steps, w),
        scheduled_tokens=scheduled_tokens(steps, w),
        pass_steps=w.last_step - w.first_step + 1 if own_pass else None,
    )
