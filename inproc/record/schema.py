"""The run record: a frozen, typed picture of one results file.

Each entry keeps its raw records (step and token traces, telemetry samples) and the
inputs of its verdict; its figures and verdict are derived from those by
``inproc.record.derive``, both when the entry is measured and when a file is loaded, so
a report of an old file applies today's definitions to its raw data. The JSON form and
its version history are in ``inproc.record.migrate``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from inproc.measure.figures import DecodeFigures, PrefillFigures
from inproc.measure.judge import Verdict
from inproc.measure.loops import LoopSettings
from inproc.measure.peaks import Peaks, run_peaks
from inproc.measure.trace import CellTrace
from inproc.plan.capacity import CapacityCheck
from inproc.plan.settings import MatrixSettings
from inproc.plan.text import TextSource
from inproc.record.compact import CellSummary
from inproc.telemetry.window import WindowTelemetry
from inproc.types import Capacity, EngineSettings, Placement
from inproc.units import cell_key


@dataclass(frozen=True)
class ProfileRef:
    """The profile a run was made from, as it was then (overrides applied)."""

    name: str
    path: str
    engine: str
    model: str
    engine_args: Mapping[str, object] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    hardware: str = ""
    notes: str = ""
    gpus: int = 0
    overrides: tuple[str, ...] = ()
    # The draft acceptance forced (``inproc.plan.acceptance.Acceptance.to_dict``); None: the engine's own.
    acceptance: Mapping[str, object] | None = None


@dataclass(frozen=True)
class RunPlan:
    """What the run set out to measure: the matrix settings, the prompt seed, the detectors."""

    settings: MatrixSettings
    seed: int
    loops: LoopSettings = LoopSettings()
    telemetry_hz: float | None = None
    prompts: TextSource | None = None  # --prompts: the text the prompts were cut from (None: synthetic ids)


@dataclass(frozen=True)
class EngineRecord:
    """The built engine's identity and what building and warming it up took."""

    name: str
    version: str
    model: str
    dummy_weights: bool
    vocab_size: int
    settings: EngineSettings = EngineSettings()  # resolved engine settings
    forward_source: str = ""  # where the per-step bytes and FLOPs come from (engine accounting or estimate)
    build_s: float | None = None  # engine construction, wall seconds
    warmup_s: float | None = None  # the warm-up pass before the first measurement


@dataclass(frozen=True)
class Machine:
    """The machine and software, as the metadata collectors recorded them (one dict each).

    Collectors tolerate missing sources (pyperf's way), so the dicts stay as written;
    the properties below are the typed views the reports and comparisons read.
    """

    gpu: Mapping[str, Any] = field(default_factory=dict)
    cpu: Mapping[str, Any] = field(default_factory=dict)
    system: Mapping[str, Any] = field(default_factory=dict)
    software: Mapping[str, Any] = field(default_factory=dict)

    @property
    def gpu_devices(self) -> tuple[Mapping[str, Any], ...]:
        return tuple(self.gpu.get("devices") or ())

    @property
    def gpu_names(self) -> tuple[str, ...]:
        return tuple(str(d.get("name", "GPU")) for d in self.gpu_devices)

    @property
    def gpu_absent(self) -> str:
        """Why no GPU was recorded ("" when one was)."""
        return str(self.gpu.get("absent") or self.gpu.get("error") or ("" if self.gpu_devices else "not recorded"))

    @property
    def driver_version(self) -> str | None:
        return self.gpu.get("driver_version")

    @property
    def cpu_model(self) -> str | None:
        return self.cpu.get("model")


@dataclass(frozen=True)
class ShardRef:
    """The part of a plan one ``inproc run --shard I/N`` measured (``inproc.plan.shard`` makes the split)."""

    index: int  # 1-based
    count: int
    plan_id: str  # the whole plan's fingerprint (inproc.plan.shard.plan_id): equal for every shard of it
    prefill: tuple[int, ...] = ()  # the cold-prefill contexts this shard measures
    cells: tuple[tuple[int, int], ...] = ()  # the decode cells (context, concurrency) it measures

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True)
class MergedShard:
    """One shard a merged results file was made from, as its own file said."""

    index: int
    count: int
    path: str
    created: str
    command: str
    measure_s: float
    machine: Machine = field(default_factory=Machine)


class _Judged:
    """What every entry answers from its verdict and telemetry."""

    verdict: Verdict
    telemetry: WindowTelemetry | None

    @property
    def status(self) -> str:
        return self.verdict.status

    @property
    def reason(self) -> str:
        return self.verdict.reason

    @property
    def throttled(self) -> str:
        """The throttle check's reason when it failed ("" when it passed or was not judged)."""
        return self.telemetry.throttled if self.telemetry else ""

    @property
    def disturbed(self) -> str:
        """The disturbance rule's cause (``disturbed: ...``) when the machine was busy, else ""."""
        return self.telemetry.disturbed if self.telemetry else ""


@dataclass(frozen=True, eq=False)
class PrefillEntry(_Judged):
    """Cold prefill at one context: its samples (raw), and what was derived from them."""

    context: int
    verdict: Verdict
    samples: tuple[CellTrace, ...] = ()
    figures: PrefillFigures | None = None
    telemetry: WindowTelemetry | None = None
    error: str | None = None


@dataclass(frozen=True)
class EarlierTry:
    """A try of a decode cell that was disturbed and measured again (``--retry-disturbed``): its headline
    figure and the cause; its raw records are not kept, the cell's figures come from a later try."""

    number: int  # 1 for the first try
    total_tok_s: float | None
    disturbed: str

    def to_dict(self) -> dict[str, Any]:
        return {"try": self.number, "total_tok_s": self.total_tok_s, "disturbed": self.disturbed}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "EarlierTry":
        return cls(int(d["try"]), d.get("total_tok_s"), str(d.get("disturbed") or ""))


@dataclass(frozen=True, eq=False)
class DecodeEntry(_Judged):
    """One sustained-decode cell: its trace (raw), its verdict inputs, and what was derived."""

    context: int
    concurrency: int
    verdict: Verdict
    max_tokens: int = 0
    prompt_mode: str = "shared"
    trace: CellTrace | None = None  # None: not run (decided beforehand) or failed before a trace
    figures: DecodeFigures | None = None
    capacity_check: CapacityCheck | None = None
    telemetry: WindowTelemetry | None = None
    error: str | None = None
    reproduce: str = ""  # the `inproc cell` command that measures this cell again
    summary: CellSummary | None = None  # compact form, read from a baseline or history entry (then trace is None)
    tries: tuple[EarlierTry, ...] = ()  # the disturbed tries before this one (--retry-disturbed)

    @property
    def try_number(self) -> int:
        """The try the cell's figures come from (1: measured once)."""
        return len(self.tries) + 1

    @property
    def throttled(self) -> str:
        """The throttle check's reason when it failed; a compact cell keeps it in its summary."""
        if self.telemetry is None and self.summary is not None:
            return self.summary.throttled
        return self.telemetry.throttled if self.telemetry else ""

    @property
    def disturbed(self) -> str:
        """The disturbance rule's cause when the machine was busy; a compact cell keeps it in its summary."""
        if self.telemetry is None and self.summary is not None:
            return self.summary.disturbed
        return self.telemetry.disturbed if self.telemetry else ""

    @property
    def key(self) -> str:
        return cell_key(self.context, self.concurrency)

    @property
    def ttft_kind(self) -> str:
        return "cache-warm" if self.prompt_mode == "shared" else "cold"


@dataclass(frozen=True)
class UnreadableCell:
    """An entry whose cell file could not be read (damaged, missing, or another run's): the record
    holds it as an Error entry made from its manifest row, without raw records."""

    entry: str  # the entry's id, its cell file's stem: prefill-8192, decode-8192x16
    path: str  # the cell file
    reason: str  # the reader's one-line message, starting with the path


@dataclass(frozen=True, eq=False)
class RunRecord:
    """Everything one ``inproc run`` (or ``inproc cell``) measured, plus what reproduces it."""

    tool: Mapping[str, str]  # name, version
    created: str
    command: str
    profile: ProfileRef
    plan: RunPlan
    engine: EngineRecord
    capacity: Capacity
    machine: Machine
    prefill: tuple[PrefillEntry, ...] = ()
    decode: tuple[DecodeEntry, ...] = ()
    finished: bool = False
    notes: tuple[str, ...] = ()  # engine rebuilds, interruptions, resumption
    # Wall seconds spent measuring: first entry's start to last entry's end, summed over the
    # sessions that wrote this file (a resumed run adds its own); build and warm-up excluded.
    measure_s: float = 0.0
    placement: Placement | None = None  # nodes and ranks the engine ran on (None: not recorded)
    shard: ShardRef | None = None  # the part of the plan this file measured (None: all of it)
    merged_from: tuple[MergedShard, ...] = ()  # the shards `inproc merge` made this file from
    schema_version: int = 0  # the version the file was written in, before migration (0: not read from a file)
    unreadable: tuple[UnreadableCell, ...] = ()  # entries read from their manifest row alone (inproc.record.damage)

    @property
    def settings(self) -> MatrixSettings:
        return self.plan.settings

    @property
    def peaks(self) -> Peaks:
        """The device limits this run's step anatomy is read against (from its machine record)."""
        return run_peaks(self.machine.gpu_devices, self.machine.cpu, self.engine.settings)
