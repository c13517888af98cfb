"""What a baseline or a night's history entry keeps of a decode cell instead of its raw records.

A run file keeps every step and token; a compact cell keeps:

- :class:`CellSamples` — the samples compare's tests draw on: the tokens and seconds of each
  sub-window (Total tok/s is Σ tokens ÷ Σ seconds of them, exactly), the window's per-token
  gaps as distinct values with their counts per sub-window of arrival (a decode step gives
  the same gap to each request it served, so this is exact and about one value per step),
  and every request's TTFT;
- :class:`CellAnatomy` — the step anatomy the diagnosis reads (``inproc.history.diagnose``):
  step time and host time per step, per batch size, graph modes, padding, bytes and FLOPs
  per token, queues, KV blocks, telemetry, the slow steps (``inproc.measure.slow.SlowFigures``),
  and the kernel pass's compact form (``inproc.kernels.summary.KernelSummary``).

Raw records stay in the run files. ``inproc.record.summarize`` makes these from a loaded run,
``inproc.record.summary`` writes and reads a whole run in this form.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from inproc.codec import decode_array, encode_array, known_fields
from inproc.kernels.summary import KernelSummary
from inproc.measure.slow import SlowFigures


@dataclass(frozen=True, eq=False)
class CellSamples:
    """The window's samples, cut once when the summary was made (``sub_s`` seconds or ``sub_steps`` steps)."""

    sub_s: float | None
    sub_steps: int | None
    sub_tokens: np.ndarray  # output tokens of each sub-window
    sub_seconds: np.ndarray  # its length (measured_for_s)
    gap_values_s: np.ndarray  # distinct per-token gaps in the window (tbt_intervals_s), per sub-window
    gap_counts: np.ndarray  # how many gaps had that value in that sub-window
    gap_units: np.ndarray  # the sub-window (index) the gap's arrival fell in
    ttft_s: np.ndarray  # every request's TTFT (ttft_s), in order of submission

    def gaps_s(self) -> np.ndarray:
        """The window's per-token gaps, every one (the multiset tbt_intervals_s gave)."""
        return np.repeat(self.gap_values_s, self.gap_counts)

    def gaps_by_unit(self) -> list[np.ndarray]:
        """The gaps of each sub-window, by the sub-window of their arrival (one array per sub-window)."""
        return [np.repeat(self.gap_values_s[self.gap_units == k], self.gap_counts[self.gap_units == k])
                for k in range(self.sub_tokens.size)]

    def to_dict(self) -> dict[str, Any]:
        return {"sub_s": self.sub_s, "sub_steps": self.sub_steps,
                **{k: encode_array(np.asarray(getattr(self, k))) for k in _ARRAYS}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CellSamples":
        return cls(d.get("sub_s"), d.get("sub_steps"), **{k: decode_array(d[k]) for k in _ARRAYS})


_ARRAYS = ("sub_tokens", "sub_seconds", "gap_values_s", "gap_counts", "gap_units", "ttft_s")


@dataclass(frozen=True)
class BatchTimes:
    """The window's steps whose batch held ``size`` requests: how many, and their mean times."""

    size: int
    steps: int
    step_s: float  # mean Engine.step() time, start to end
    host_s: float | None  # mean schedule_s + update_s (None: the engine did not report them)

    @property
    def forward_s(self) -> float | None:
        """Mean step time less host time: the forward and sampling, waited on."""
        return None if self.host_s is None else self.step_s - self.host_s


@dataclass(frozen=True)
class CellAnatomy:
    """A decode window's make-up, each field over the window's steps (see ``inproc.measure.anatomy``)."""

    steps: int
    window_s: float  # measured_for_s
    output_tokens: int
    step_s: float  # mean Engine.step() time
    host_s: float | None  # mean schedule_s + update_s per step
    graph_step_share: Mapping[str, float] = field(default_factory=dict)
    padding_waste: float | None = None
    batch_times: tuple[BatchTimes, ...] = ()
    bytes_per_token: float | None = None  # Σ read + write bytes ÷ scheduled tokens
    flops_per_token: float | None = None  # Σ FLOPs ÷ scheduled tokens
    bandwidth_peak_fraction: float | None = None
    spec_acceptance_rate: float | None = None
    spec_mean_acceptance_length: float | None = None  # 1 + accepted draft tokens per draft (None: no drafts)
    preemptions: int | None = None
    max_waiting: int = 0
    mean_waiting: float = 0.0  # requests waiting, mean over the window's steps
    kv_blocks: int = 0  # the engine's KV pool (Capacity.num_blocks)
    sm_clock_mhz: float | None = None
    power_w: float | None = None
    throttle_fraction: Mapping[str, float] = field(default_factory=dict)
    cpu_freq_mhz: float | None = None
    process_cpu_pct: float | None = None
    slow: SlowFigures | None = None  # the window's slow steps and step-time tail (None: kept before they were)
    kernels: KernelSummary | None = None  # the kernel pass after the window, compact (None: no pass)

    @property
    def tokens_per_step(self) -> float:
        return self.output_tokens / self.steps if self.steps else 0.0

    @property
    def busy_share(self) -> float:
        """Σ step time ÷ window length: the share of the window spent inside Engine.step()."""
        return self.steps * self.step_s / self.window_s if self.window_s > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(dataclasses.replace(self, kernels=None))
        out["kernels"] = self.kernels.to_dict() if self.kernels is not None else None
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CellAnatomy":
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in d.items() if k in known}
        values["batch_times"] = tuple(BatchTimes(**b) for b in d.get("batch_times") or ())
        values["slow"] = SlowFigures(**known_fields(SlowFigures, d["slow"])) if d.get("slow") else None
        values["kernels"] = KernelSummary.from_dict(d["kernels"]) if d.get("kernels") else None
        return cls(**values)


@dataclass(frozen=True, eq=False)
class CellSummary:
    """One decode cell, compact: its figures, samples, anatomy, the throttle check's and the disturbance rule's reasons."""

    total_tok_s: float | None
    tbt_ms: float | None
    ttft_ms: float | None
    samples: CellSamples | None  # None: the cell had no window
    anatomy: CellAnatomy | None
    throttled: str = ""
    disturbed: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"total_tok_s": self.total_tok_s, "tbt_ms": self.tbt_ms, "ttft_ms": self.ttft_ms,
                "throttled": self.throttled, "disturbed": self.disturbed, "samples": self.samples.to_dict() if self.samples else None,
                "anatomy": self.anatomy.to_dict() if self.anatomy else None}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CellSummary":
        s, a = d.get("samples"), d.get("anatomy")
        return cls(d.get("total_tok_s"), d.get("tbt_ms"), d.get("ttft_ms"),
                   CellSamples.from_dict(s) if s else None, CellAnatomy.from_dict(a) if a else None,
                   d.get("throttled") or "", d.get("disturbed") or "")
