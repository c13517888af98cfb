"""Raw records of a cell: every engine step (``steps.py``) and every token, as measured.

Times are seconds on ``time.perf_counter()`` relative to the cell's start (``t0``).
Every token is stamped with the end of the step that returned it, so a request keeps
the step indices at which tokens arrived and how many arrived; step rows are stored
once per cell. Figures (``inproc.measure.metrics``) are computed from these records only.

On disk, arrays go through the results file's one codec (``inproc.codec``).
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field

import numpy as np

from inproc.kernels.table import KernelTable
from inproc.measure.steps import StepTrace
from inproc.codec import decode_array, encode_array
from inproc.types import EngineCounters


def _int32s() -> array:
    return array("i")


@dataclass
class RequestTrace:
    """One request's life: submitted at ``submit_s``, tokens at steps ``token_steps``.

    ``submit_s`` is stamped just before the request is handed to ``Engine.add_request``.
    The token columns are int32 ``array``s, not lists: the garbage collector does not walk
    them, however many tokens a run keeps (a list is walked item by item at every full
    collection).
    """

    request_id: str
    prompt_tokens: int
    max_tokens: int
    submit_s: float
    initial: bool  # one of the first C requests of the cell (not a refill)
    token_steps: array = field(default_factory=_int32s)  # step index of each arrival
    token_counts: array = field(default_factory=_int32s)  # tokens in that arrival
    token_ids: array = field(default_factory=_int32s)
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
            d[k] = decode_array(d[k])  # a loaded trace holds numpy arrays, not lists (nothing appends to it)
        return cls(**d)


@dataclass(frozen=True)
class ProfiledSteps:
    """Steps a profiler covered, after the window: the profiler, the files it wrote, the step rows."""

    kind: str  # "torch" | "cuda"
    files: tuple[str, ...]
    first_step: int  # rows of the cell's step trace, inclusive
    last_step: int

    def to_dict(self) -> dict:
        return {"kind": self.kind, "files": list(self.files), "first_step": self.first_step, "last_step": self.last_step}

    @classmethod
    def from_dict(cls, d: dict) -> "ProfiledSteps":
        return cls(d["kind"], tuple(d.get("files", ())), int(d["first_step"]), int(d["last_step"]))


@dataclass(frozen=True)
class StepSpan:
    """Rows ``first_step..last_step`` (inclusive) of a cell's step trace."""

    first_step: int
    last_step: int

    def to_dict(self) -> dict:
        return {"first_step": self.first_step, "last_step": self.last_step}

    @classmethod
    def from_dict(cls, d: dict) -> "StepSpan":
        return cls(int(d["first_step"]), int(d["last_step"]))


@dataclass(frozen=True)
class KernelPass:
    """The kernel pass after the window (``inproc.run.kernelpass``): its step rows, the device its
    table timed, and why it has no table ("" when it has one)."""

    first_step: int  # rows of the cell's step trace, inclusive (last < first: no step ran)
    last_step: int
    device: str = "cpu"
    note: str = ""
    files: tuple[str, ...] = ()  # the profiler's trace, where --profile-dir asked to keep it
    # Device activities filed to a step, and not filed (launched outside every step mark, or their launcher
    # missing), with the unfiled ones' device ns (``inproc.kernels.filing``); None: recorded before they were
    # counted. 0 and 0 on a CPU pass (no device activity).
    filed: int | None = None
    unfiled: int | None = None
    unfiled_ns: int | None = None

    def to_dict(self) -> dict:
        return {"first_step": self.first_step, "last_step": self.last_step, "device": self.device, "note": self.note,
                "files": list(self.files), "filed": self.filed, "unfiled": self.unfiled, "unfiled_ns": self.unfiled_ns}

    @classmethod
    def from_dict(cls, d: dict) -> "KernelPass":
        count = lambda k: None if d.get(k) is None else int(d[k])  # noqa: E731
        return cls(int(d["first_step"]), int(d["last_step"]), str(d.get("device", "cpu")), str(d.get("note", "")),
                   tuple(d.get("files", ())), count("filed"), count("unfiled"), count("unfiled_ns"))


@dataclass
class CellTrace:
    """Everything measured in one cell, before any statistic."""

    steps: StepTrace
    requests: list[RequestTrace]
    window_open_s: float | None  # step end at which the decode window opened
    window_target_s: float  # the window length asked for
    window_open_reason: str = ""
    counters_start: EngineCounters | None = None  # engine counters at window open
    counters_end: EngineCounters | None = None  # ... and at window close
    clock_origin_s: float = 0.0  # absolute perf_counter() of the cell start (maps telemetry onto the trace)
    window_steps: int | None = None  # a window of exactly this many steps (None: window_target_s seconds)
    profiled: ProfiledSteps | None = None  # steps a profiler covered after the window
    # The anatomy's own pass after the window (inproc.run.decode); None: the anatomy's accounting
    # ran in the window itself (recorded before it had a pass of its own) or not at all.
    anatomy_pass: StepSpan | None = None
    # The kernel pass after the anatomy's (None: not asked for, or recorded before it existed) and
    # its table (None: no pass, or the pass could not run: kernel_pass.note says why).
    kernel_pass: KernelPass | None = None
    kernels: KernelTable | None = None
    # The mean acceptance length forced on the engine (--acceptance; inproc.plan.acceptance), which the
    # measured drafts are held against (inproc.measure.acceptance); None: the engine's own acceptance.
    forced_acceptance_length: float | None = None

    def to_dict(self) -> dict:
        out = {"steps": self.steps.to_dict(), "requests": [r.to_dict() for r in self.requests], **self.scalars_dict()}
        if self.kernels is not None:
            out["kernels"] = self.kernels.to_dict()
        return out

    def scalars_dict(self) -> dict:
        """The trace's JSON values: all of :meth:`to_dict` but its step rows and requests."""
        return {
            "window_open_s": self.window_open_s,
            "window_target_s": self.window_target_s,
            "window_open_reason": self.window_open_reason,
            "counters_start": self.counters_start.to_dict() if self.counters_start else {},
            "counters_end": self.counters_end.to_dict() if self.counters_end else {},
            "clock_origin_s": self.clock_origin_s,
            "window_steps": self.window_steps,
            "profiled": self.profiled.to_dict() if self.profiled else None,
            "anatomy_pass": self.anatomy_pass.to_dict() if self.anatomy_pass else None,
            "kernel_pass": self.kernel_pass.to_dict() if self.kernel_pass else None,
            "forced_acceptance_length": self.forced_acceptance_length,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "CellTrace":
        kernel_pass = KernelPass.from_dict(d["kernel_pass"]) if d.get("kernel_pass") else None
        return cls(
            steps=StepTrace.from_dict(d["steps"]),
            requests=[RequestTrace.from_dict(r) for r in d["requests"]],
            window_open_s=d["window_open_s"],
            window_target_s=d["window_target_s"],
            window_open_reason=d.get("window_open_reason", ""),
            counters_start=EngineCounters.from_dict(d["counters_start"]) if d.get("counters_start") else None,
            counters_end=EngineCounters.from_dict(d["counters_end"]) if d.get("counters_end") else None,
            clock_origin_s=d.get("clock_origin_s", 0.0),
            window_steps=d.get("window_steps"),
            profiled=ProfiledSteps.from_dict(d["profiled"]) if d.get("profiled") else None,
            anatomy_pass=StepSpan.from_dict(d["anatomy_pass"]) if d.get("anatomy_pass") else None,
            kernel_pass=kernel_pass,
            kernels=KernelTable.from_columns(d["kernels"], kernel_pass.device) if d.get("kernels") and kernel_pass else None,
            forced_acceptance_length=d.get("forced_acceptance_length"),
        )
