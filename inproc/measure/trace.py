"""Raw records of a cell: every engine step and every token, as measured.

Times are seconds on ``time.perf_counter()`` relative to the cell's start (``t0``).
Every token is stamped with the end of the step that produced it, so a request keeps
the step indices at which tokens arrived and how many arrived; step times are stored
once per cell. Figures (``inproc.measure.metrics``) are computed from these records only.

On disk, arrays go through the results file's one codec (``inproc.record.codec``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from inproc.record.codec import decode_array, encode_array


@dataclass
class StepTrace:
    """One row per engine step: when it ran and what the scheduler held."""

    t_start_s: np.ndarray
    t_end_s: np.ndarray
    num_running: np.ndarray
    num_waiting: np.ndarray
    num_scheduled_tokens: np.ndarray
    num_preempted: np.ndarray

    FIELDS = ("t_start_s", "t_end_s", "num_running", "num_waiting", "num_scheduled_tokens", "num_preempted")

    def __len__(self) -> int:
        return len(self.t_end_s)

    def to_dict(self) -> dict:
        return {f: encode_array(getattr(self, f)) for f in self.FIELDS}

    @classmethod
    def from_dict(cls, d: dict) -> "StepTrace":
        return cls(**{f: decode_array(d[f]) for f in cls.FIELDS})


class StepRecorder:
    """Appends step rows into preallocated arrays (grown by doubling) during a cell."""

    def __init__(self, capacity: int = 4096) -> None:
        self._n = 0
        self._times = np.empty((capacity, 2), dtype=np.float64)
        self._counts = np.empty((capacity, 4), dtype=np.int32)

    def append(self, t_start: float, t_end: float, running: int, waiting: int, sched: int, preempted: int) -> int:
        """Record one step; returns its index."""
        i = self._n
        if i == len(self._times):
            self._times = np.concatenate([self._times, np.empty_like(self._times)])
            self._counts = np.concatenate([self._counts, np.empty_like(self._counts)])
        self._times[i] = (t_start, t_end)
        self._counts[i] = (running, waiting, sched, preempted)
        self._n = i + 1
        return i

    def __len__(self) -> int:
        return self._n

    def last_end(self) -> float:
        return float(self._times[self._n - 1, 1]) if self._n else 0.0

    def freeze(self) -> StepTrace:
        n = self._n
        return StepTrace(
            t_start_s=self._times[:n, 0].copy(),
            t_end_s=self._times[:n, 1].copy(),
            num_running=self._counts[:n, 0].copy(),
            num_waiting=self._counts[:n, 1].copy(),
            num_scheduled_tokens=self._counts[:n, 2].copy(),
            num_preempted=self._counts[:n, 3].copy(),
        )


@dataclass
class RequestTrace:
    """One request's life: submitted at ``submit_s``, tokens at steps ``token_steps``."""

    request_id: str
    prompt_tokens: int
    max_tokens: int
    submit_s: float
    initial: bool  # one of the first C requests of the cell (not a refill)
    token_steps: list[int] = field(default_factory=list)  # step index of each arrival
    token_counts: list[int] = field(default_factory=list)  # tokens in that arrival
    token_ids: list[int] = field(default_factory=list)
    finished_step: int | None = None
    finish_reason: str | None = None
    num_cached_tokens: int | None = None

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)

    def to_dict(self) -> dict:
        return {
            "request_id": self.request_id,
            "prompt_tokens": self.prompt_tokens,
            "max_tokens": self.max_tokens,
            "submit_s": self.submit_s,
            "initial": self.initial,
            "token_steps": encode_array(np.asarray(self.token_steps, dtype=np.int32)),
            "token_counts": encode_array(np.asarray(self.token_counts, dtype=np.int32)),
            "token_ids": encode_array(np.asarray(self.token_ids, dtype=np.int32)),
            "finished_step": self.finished_step,
            "finish_reason": self.finish_reason,
            "num_cached_tokens": self.num_cached_tokens,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "RequestTrace":
        d = dict(d)
        for k in ("token_steps", "token_counts", "token_ids"):
            d[k] = decode_array(d[k]).tolist()
        return cls(**d)


@dataclass
class CellTrace:
    """Everything measured in one cell, before any statistic."""

    steps: StepTrace
    requests: list[RequestTrace]
    window_open_s: float | None  # step end at which the decode window opened
    window_target_s: float  # the window length asked for
    window_open_reason: str = ""
    counters_start: dict[str, int] = field(default_factory=dict)  # engine counters at window open
    counters_end: dict[str, int] = field(default_factory=dict)  # ... and at window close
    clock_origin_s: float = 0.0  # absolute perf_counter() of the cell start (maps telemetry onto the trace)

    def to_dict(self) -> dict:
        return {
            "steps": self.steps.to_dict(),
            "requests": [r.to_dict() for r in self.requests],
            "window_open_s": self.window_open_s,
            "window_target_s": self.window_target_s,
            "window_open_reason": self.window_open_reason,
            "counters_start": self.counters_start,
            "counters_end": self.counters_end,
            "clock_origin_s": self.clock_origin_s,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "CellTrace":
        return cls(
            steps=StepTrace.from_dict(d["steps"]),
            requests=[RequestTrace.from_dict(r) for r in d["requests"]],
            window_open_s=d["window_open_s"],
            window_target_s=d["window_target_s"],
            window_open_reason=d.get("window_open_reason", ""),
            counters_start=d.get("counters_start", {}),
            counters_end=d.get("counters_end", {}),
            clock_origin_s=d.get("clock_origin_s", 0.0),
        )
