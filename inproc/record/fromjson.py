"""A run record from the results file's JSON (current schema), its raw records read from cell
files where the manifest names them. Figures cached under today's definitions
(``inproc.record.definitions.DEFINITIONS_VERSION``, a digest of their code) are taken as
written; otherwise (or when asked) every entry is derived again from its raw records.
"""
from __future__ import annotations

from typing import Any

from inproc.codec import known_fields
from inproc.measure.judge import Verdict
from inproc.measure.loops import LoopSettings
from inproc.measure.peaks import Peaks, run_peaks
from inproc.measure.trace import CellTrace
from inproc.plan.capacity import CapacityCheck
from inproc.plan.matrix import CellPlan
from inproc.plan.settings import MatrixSettings
from inproc.errors import UsageError
from inproc.record import cached, damage, derive, scope
from inproc.record.cells import read_cell
from inproc.record.contain import CellFolder
from inproc.record.definitions import DEFINITIONS_VERSION
from inproc.record.schema import DecodeEntry, EngineRecord, Machine, PrefillEntry, ProfileRef, RunPlan, RunRecord
from inproc.telemetry.trace import TelemetryTrace
from inproc.types import Capacity, EngineSettings, KVCacheGroup


def from_json(d: dict[str, Any], cells: CellFolder | None, rederive: bool = False) -> RunRecord:
    """A record from current-schema JSON; cell files are read from ``cells`` (the manifest's cell folder) alone.

    Each entry's figures, telemetry figures and verdict are taken from the file when it says
    they were derived by today's definitions (``definitions_version``) and ``rederive`` is
    False; otherwise they are derived again from the raw records. An entry whose cell file
    cannot be read, is another run's, or lies outside ``cells`` (``inproc.record.contain``), is an
    Error entry made from its row
    (``inproc.record.damage``), listed in the record's ``unreadable``.
    """
    plan = _plan(d["plan"])
    capacity = _capacity(d["capacity"])
    engine = EngineRecord(**{**known_fields(EngineRecord, d["engine"]), "settings": _settings(d["engine"].get("settings"))})
    machine = Machine(**known_fields(Machine, d.get("machine") or {}))
    peaks = run_peaks(machine.gpu_devices, machine.cpu, engine.settings)
    use_cache = not rederive and d.get("definitions_version") == DEFINITIONS_VERSION
    lost: list = []
    prefill = tuple(_entry(e, d, cells, lost, plan, lambda r: _prefill(r, use_cache)) for e in d.get("prefill", []))
    decode = tuple(_entry(e, d, cells, lost, plan, lambda r: _decode(r, plan, capacity, peaks, use_cache))
                   for e in d.get("decode", []))
    return RunRecord(
        tool=dict(d["tool"]),
        created=d["created"],
        command=d["command"],
        profile=_profile(d["profile"]),
        plan=plan,
        engine=engine,
        capacity=capacity,
        machine=machine,
        prefill=prefill,
        decode=decode,
        finished=bool(d.get("finished", False)),
        notes=tuple(d.get("notes", ())),
        measure_s=float((d.get("timing") or {}).get("measure_s", 0.0)),
        **scope.from_json(d),
        schema_version=int(d["schema_version"]),
        unreadable=tuple(lost),
    )


def _entry(row: dict[str, Any], d: dict[str, Any], cells: CellFolder | None, lost: list, plan: RunPlan, make):
    """``make`` of a manifest row with its cell file's raw records, or its Error entry when that file
    cannot be read, is another run's or lies outside the cell folder (appended to ``lost``)."""
    try:
        full = _with_cell(row, cells, d.get("created"))
    except UsageError as e:
        cell = damage.unreadable(cells.path / row["cell_file"], e, damage.entry_of_row(row))
        lost.append(cell)
        return damage.unreadable_entry(row, cell, plan)
    return make(full)


def _with_cell(d: dict[str, Any], cells: CellFolder | None, created: Any) -> dict[str, Any]:
    """An entry's JSON with its raw records put back from its cell file (inline entries as they are).

    A cell file that is missing, damaged, written by another run than ``created``, or outside
    ``cells`` is a one-line :class:`UsageError` naming it."""
    name = d.get("cell_file")
    if not name:
        return d
    if cells is None:
        raise ValueError(f"entry names cell file {name!r} but the record was not read from a file")
    raw = read_cell(cells, name)
    if raw.get("created") != created:
        raise damage.another_run(cells.path / name, raw.get("created"), created)
    d = {**d, **raw.get("entry", {}), "raw": raw.get("samples"), "trace": raw.get("trace")}
    if d.get("telemetry") is not None:
        d["telemetry"] = {**d["telemetry"], "trace": raw.get("telemetry")}
    return d


def _settings(d: dict[str, Any] | None) -> EngineSettings:
    d = d or {}
    known = known_fields(EngineSettings, d)
    if known.get("graph_capture_sizes") is not None:
        known["graph_capture_sizes"] = tuple(int(s) for s in known["graph_capture_sizes"])
    return EngineSettings(**{**known, "shown": dict(d.get("shown") or {})})


def _tuples(d: dict[str, Any]) -> dict[str, Any]:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}


def _profile(d: dict[str, Any]) -> ProfileRef:
    return ProfileRef(**{**known_fields(ProfileRef, d), "overrides": tuple(d.get("overrides") or ())})


def _plan(d: dict[str, Any]) -> RunPlan:
    settings = MatrixSettings(**_tuples(known_fields(MatrixSettings, d)))
    loops = LoopSettings(**(d.get("loop_check") or {}))
    return RunPlan(settings, int(d["seed"]), loops, d.get("telemetry_hz"))


def _capacity(d: dict[str, Any]) -> Capacity:
    groups = tuple(KVCacheGroup(**g) for g in d.get("groups") or ())
    return Capacity(**{**known_fields(Capacity, d), "groups": groups, "extra": dict(d.get("extra") or {})})


def _verdict(d: dict[str, Any]) -> Verdict:
    return Verdict(d["status"], d.get("reason", ""), tuple(d.get("checks_passed", ())))


def _telemetry_trace(d: dict[str, Any]) -> TelemetryTrace | None:
    raw = (d.get("telemetry") or {}).get("trace")
    return TelemetryTrace.from_dict(raw) if raw else None


def _prefill(d: dict[str, Any], use_cache: bool) -> PrefillEntry:
    samples = tuple(CellTrace.from_dict(s) for s in d.get("raw") or [])
    if d.get("error") or not samples:
        return PrefillEntry(d["context"], _verdict(d), samples, error=d.get("error"))
    if use_cache and "status" in d:  # no status: found in its cell file alone, derived again
        return cached.prefill_entry(d, _verdict(d), samples, _telemetry_trace(d))
    return derive.prefill_entry(d["context"], samples, _telemetry_trace(d))


def _decode(d: dict[str, Any], plan: RunPlan, capacity: Capacity, peaks: Peaks, use_cache: bool) -> DecodeEntry:
    check = d.get("capacity_check")
    cell = CellPlan(d["context"], d["concurrency"], d.get("max_tokens", 0), CapacityCheck.from_dict(check) if check else None)
    mode, reproduce = d.get("prompt_mode", plan.settings.prompt_mode), d.get("reproduce", "")
    if d.get("error") or not d.get("trace"):
        return derive.unmeasured_entry(cell, mode, reproduce, _verdict(d), d.get("error"))
    trace = CellTrace.from_dict(d["trace"])
    if use_cache and "status" in d:  # no status: found in its cell file alone, derived again
        return cached.decode_entry(d, cell, mode, reproduce, _verdict(d), trace, _telemetry_trace(d))
    return derive.decode_entry(cell, mode, reproduce, trace, _telemetry_trace(d), capacity, plan.loops, peaks,
                               plan.settings.anatomy)
