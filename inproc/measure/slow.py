"""Slow steps: the rare window step that takes many times what steps of its kind take, and its cause.

A step's time is its ``Engine.step()`` call, start to end (``t_end_s - t_start_s``).

The rule is :func:`threshold_s`'s docstring, the causes :func:`cause_of`'s (the report quotes both).

Online (``--break-at-slow-step``, ``--profile-slow``: ``inproc.measure.slow_online``), the same rule
judges each window step as it ends, against the window steps of the same kind seen *before*
it (so a step early in a window, or the first of its kind, can be judged differently than
from the whole window afterwards).

Causes read what the step's own row holds; under async scheduling a step waits on the
previous batch's forward, whose graph mode and padding sit on the row before.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from inproc.measure.metrics import Window
from inproc.measure.steps import StepTrace
from inproc.types import GRAPH_MODES

MIN_STEPS = 8  # a kind with fewer window steps is no reference: fall back
K_MAD = 8.0  # robust standard deviations beyond the median
FLOOR = 2.0  # ... and at least this many medians beyond it
MAD_SIGMA = 1.4826  # MAD → standard deviation of a normal distribution
GC_SHARE = 0.5  # GC inside the step explains it when it is at least this share of the excess
HOST_SHARE = 0.5  # the same for host time beyond the reference's median

CAUSES = ("gc", "prefill", "preemption", "graph", "kv", "host", "unexplained")
#: Which reference a step was judged against (the rule's fallbacks, in order).
REFERENCES = ("shape", "decode batch", "window")


def threshold_s(median_s: float, mad_s: float) -> float:
    """A window step is slow when its time exceeds median + max(K_MAD × 1.4826 × MAD, FLOOR × median) of its
    reference: the window's steps of the same kind, the batch's shape (decode requests, scheduled tokens,
    CUDA-graph mode); where fewer than MIN_STEPS window steps share it, the window's steps with the same number
    of decode requests; where those are fewer than MIN_STEPS too, every step of the window (a window of fewer
    than MIN_STEPS steps flags nothing). Median and MAD (median absolute deviation; ×1.4826 makes it a standard
    deviation for normal times) are over the reference, the step itself included. The floor keeps jitter from
    being flagged where the MAD is about 0 (identical batches): a slow step takes at least 1 + FLOOR times the
    median. MIN_STEPS = 8, K_MAD = 8, FLOOR = 2. Returns that limit, in the unit of its arguments.
    """
    return median_s + max(K_MAD * MAD_SIGMA * mad_s, FLOOR * median_s)


@dataclass(frozen=True)
class Reference:
    """What a step is judged against: which fallback, its rows, their median and MAD (s)."""

    kind: str  # one of REFERENCES
    rows: np.ndarray
    median_s: float
    mad_s: float

    @property
    def limit_s(self) -> float:
        return threshold_s(self.median_s, self.mad_s)


def reference_of(times: np.ndarray, rows: np.ndarray) -> tuple[float, float]:
    """Median and MAD of ``times[rows]``."""
    t = times[rows]
    med = float(np.median(t))
    return med, float(np.median(np.abs(t - med)))


def step_times_s(steps: StepTrace) -> np.ndarray:
    """Every row's ``Engine.step()`` time, end − start, in seconds."""
    return steps.t_end_s - steps.t_start_s


def _rows(w: Window) -> np.ndarray:
    return np.arange(w.first_step, w.last_step + 1)


def _groups(keys: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Rows alike in every key column: each row's group number, and each group's row count."""
    code = np.zeros(keys[0].size, dtype=np.int64)
    for k in keys:  # each column's values numbered densely, then combined: at most rows ** len(keys) groups
        values, dense = np.unique(k, return_inverse=True)
        code = code * values.size + dense.ravel()
    _, group, counts = np.unique(code, return_inverse=True, return_counts=True)
    return group.ravel(), counts


def reference_groups(steps: StepTrace, w: Window) -> list[tuple[Reference, np.ndarray]]:
    """Each reference of the window and the window steps judged against it (rows, ascending); empty when the
    window has fewer than MIN_STEPS steps. Every window step is in exactly one group."""
    rows = _rows(w)
    if rows.size < MIN_STEPS:
        return []
    times = step_times_s(steps)
    dec = steps.num_decode_reqs[rows]
    shape = (dec, steps.num_scheduled_tokens[rows], steps.graph_mode[rows])
    out: list[tuple[Reference, np.ndarray]] = []
    left = np.ones(rows.size, dtype=bool)  # rows whose reference is not chosen yet
    for kind, keys in (("shape", shape), ("decode batch", (dec,))):
        group, counts = _groups(keys)
        for g in np.unique(group[left & (counts[group] >= MIN_STEPS)]):
            members = group == g
            out.append((Reference(kind, rows[members], *reference_of(times, rows[members])), rows[members & left]))
            left &= ~members
    if left.any():
        out.append((Reference("window", rows, *reference_of(times, rows)), rows[left]))
    return out


@dataclass(frozen=True)
class SlowStep:
    """One slow window step: its row, its time, what it was judged against, and its cause."""

    row: int
    time_s: float
    median_s: float  # of its reference
    reference: str  # one of REFERENCES
    cause: str  # one of CAUSES
    detail: str  # the cause in words, with its numbers


def slow_steps(steps: StepTrace, w: Window) -> list[SlowStep]:
    """The window's slow steps, in row order, each with its cause (module docstring)."""
    times = step_times_s(steps)
    flagged = sorted(((int(row), ref) for ref, judged in reference_groups(steps, w)
                      for row in judged[times[judged] > ref.limit_s]), key=lambda found: found[0])
    return [SlowStep(row, float(times[row]), ref.median_s, ref.kind, *cause_of(steps, row, ref)) for row, ref in flagged]


def cause_of(steps: StepTrace, row: int, ref: Reference) -> tuple[str, str]:
    """A slow step's cause is the first that holds of, in order (excess: its time − its reference's median):
    gc, the collector ran inside the step for at least half the excess (its oldest generation and time);
    prefill, the batch held prefill tokens (a prompt, or a preempted request's recompute); preemption, the
    scheduler preempted requests forming it; graph, the batch ran in a lesser CUDA-graph mode than most window
    steps with the same decode requests and scheduled tokens (eager or piecewise where those were full), or was
    padded to more tokens than their median; kv, KV blocks in use grew by more than one per request of the batch
    since the step before; host, scheduler time (schedule + update + probe) beyond its reference's median is at
    least half the excess; otherwise unexplained (with how much of the excess was outside the scheduler: the
    forward and output processing). Returns (cause, detail in words).
    """
    excess = float(steps.t_end_s[row] - steps.t_start_s[row]) - ref.median_s
    c = steps.columns
    gc_ns = int(c["gc_ns"][row])
    if gc_ns > 0 and gc_ns / 1e9 >= GC_SHARE * excess:
        return "gc", f"GC generation {int(c['gc_generation'][row])}, {gc_ns / 1e6:.1f} ms ({int(c['gc_count'][row])} collections)"
    if c["num_prefill_reqs"][row] > 0:
        return "prefill", f"prefill of {int(c['num_prefill_tokens'][row])} tokens in {int(c['num_prefill_reqs'][row])} requests"
    if c["num_preempted"][row] > 0:
        return "preemption", f"{int(c['num_preempted'][row])} requests preempted"
    graph = _graph_change(steps, row, ref)
    if graph:
        return "graph", graph
    kv = _kv_jump(steps, row)
    if kv:
        return "kv", kv
    host = _host_excess(steps, row, ref)
    if host is not None and host >= HOST_SHARE * excess:
        return "host", f"scheduler time +{host * 1e3:.1f} ms of the +{excess * 1e3:.1f} ms"
    where = f": +{(excess - host) * 1e3:.1f} ms of the +{excess * 1e3:.1f} ms outside the scheduler" if host is not None else ""
    return "unexplained", f"no cause in the step's records{where}"


def _graph_change(steps: StepTrace, row: int, ref: Reference) -> str:
    """A fallback from the graph mode of like batches, or a padding jump; "" when neither."""
    c, rows = steps.columns, ref.rows
    like = rows[(c["num_decode_reqs"][rows] == c["num_decode_reqs"][row])
                & (c["num_scheduled_tokens"][rows] == c["num_scheduled_tokens"][row])]
    modes = c["graph_mode"][like]
    modes = modes[modes >= 0]
    mine = int(c["graph_mode"][row])
    if modes.size and mine >= 0:
        usual = int(np.bincount(modes).argmax())
        if mine < usual:  # GRAPH_MODES run from least to most captured
            return f"ran {GRAPH_MODES[mine]} where like batches ran {GRAPH_MODES[usual]}"
    padded = c["num_padded_tokens"][like]
    padded = padded[padded >= 0]
    if padded.size and c["num_padded_tokens"][row] > np.median(padded):
        return f"padded to {int(c['num_padded_tokens'][row])} tokens where like batches had {int(np.median(padded))}"
    return ""


def _kv_jump(steps: StepTrace, row: int) -> str:
    """KV blocks in use grew by more than one per request of the batch since the row before; "" if not."""
    kv = steps.kv_used_blocks
    if row == 0 or kv[row] < 0 or kv[row - 1] < 0:
        return ""
    grew = int(kv[row] - kv[row - 1])
    reqs = max(int(steps.num_prefill_reqs[row]) + int(steps.num_decode_reqs[row]), int(steps.num_running[row]), 1)
    return f"KV blocks in use grew by {grew} for {reqs} requests" if grew > reqs else ""


def _host_excess(steps: StepTrace, row: int, ref: Reference) -> float | None:
    """Host seconds (schedule + update + probe) of ``row`` beyond its reference's median; None where unknown."""
    c = steps.columns
    host = c["schedule_s"] + c["update_s"] + c["probe_s"]
    if np.isnan(host[row]):
        return None
    known = host[ref.rows]
    known = known[~np.isnan(known)]
    return float(host[row] - (np.median(known) if known.size else 0.0))


@dataclass(frozen=True)
class SlowFigures:
    """A decode window's slow steps and its tail; each field is the function or expression beside it."""

    count: int  # len(slow_steps)
    time_share: float  # Σ slow steps' time ÷ the window's length (Window.length_s)
    causes: Mapping[str, int] = field(default_factory=dict)  # slow steps by cause
    median_ms: float = 0.0  # median window step time
    p99_ms: float = 0.0  # 99th percentile window step time (linear interpolation)
    max_ms: float = 0.0  # longest window step
    gc_ms: float | None = None  # Σ gc_ns inside the window's steps; None: not recorded
    gc_between_ms: float | None = None  # Σ gc_between_ns of the window's steps (the gaps before them)
    excess_ms: float = 0.0  # slow_excess_s × 1e3: what the slow steps add to the mean step time


def slow_time_share(slow: list[SlowStep], w: Window) -> float:
    """Σ of the window's slow steps' times ÷ the window's length (open to close)."""
    return sum(s.time_s for s in slow) / w.length_s if w.length_s > 0 else 0.0


def slow_excess_s(slow: list[SlowStep], times_s: np.ndarray) -> float:
    """Σ over the window's slow steps of (its time − the window's median step time) ÷ the window's steps
    (``times_s``: every window step's time): how much the slow steps add to the mean step time beyond the
    typical step, in seconds per step. The mean step time is the median plus this plus how far the other
    steps sit from the median on average (``inproc.history.tail`` splits a change that way).
    """
    if not times_s.size:
        return 0.0
    median = float(np.median(times_s))
    return sum(s.time_s - median for s in slow) / times_s.size


def slow_figures(steps: StepTrace, w: Window) -> SlowFigures:
    """The window's slow steps summed up, and its step-time tail."""
    rows = _rows(w)
    times = step_times_s(steps)[rows]
    slow = slow_steps(steps, w)
    causes: dict[str, int] = {}
    for s in slow:
        causes[s.cause] = causes.get(s.cause, 0) + 1
    gc, between = steps.gc_ns[rows], steps.gc_between_ns[rows]
    return SlowFigures(
        count=len(slow),
        time_share=slow_time_share(slow, w),
        causes=causes,
        median_ms=float(np.median(times) * 1e3),
        p99_ms=float(np.percentile(times, 99) * 1e3),
        max_ms=float(times.max() * 1e3),
        gc_ms=float(gc.sum() / 1e6) if (gc >= 0).all() else None,
        gc_between_ms=float(between.sum() / 1e6) if (between >= 0).all() else None,
        excess_ms=slow_excess_s(slow, times) * 1e3,
    )
