"""Reading, stage 3 of 3: the typed run record from the document at today's schema (``inproc.record.document``).

Each row holds its raw records (the inline form), or the damage that kept them from being
read (``document.UNREADABLE``), which becomes an Error entry here. Figures cached under
today's definitions (``inproc.record.definitions.DEFINITIONS_VERSION``, a digest of their code)
are taken as written (``inproc.record.cached``); otherwise (or when asked) every entry is
derived again from its raw records by the derivation ``inproc run`` itself uses
(``inproc.record.derive``).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from inproc import types as st
from inproc.codec import known_fields
from inproc.measure.judge import Verdict
from inproc.measure.loops import LoopSettings
from inproc.measure.peaks import Peaks, run_peaks
from inproc.measure.trace import CellTrace
from inproc.plan.capacity import CapacityCheck
from inproc.plan.matrix import CellPlan
from inproc.plan.settings import MatrixSettings
from inproc.plan.text import TextSource
from inproc.record import cached, derive, scope
from inproc.record.damage import OUTSIDE
from inproc.record.definitions import DEFINITIONS_VERSION
from inproc.record.document import UNREADABLE, Document
from inproc.record.schema import (DecodeEntry, EarlierTry, EngineRecord, Machine, PrefillEntry, ProfileRef, RunPlan,
                                  RunRecord, UnreadableCell)
from inproc.telemetry.trace import TelemetryTrace
from inproc.types import Capacity, EngineSettings, KVCacheGroup


def from_json(doc: Document, rederive: bool = False) -> RunRecord:
    """A record from the document at today's schema, each row with its raw records or its damage.

    Each entry's figures, telemetry figures and verdict are taken from the file when it says
    they were derived by today's definitions (``definitions_version``) and ``rederive`` is
    False; otherwise they are derived again from the raw records. A row carrying its damage
    (a cell file that cannot be read, is another run's, or lies outside the cell folder) is an
    Error entry made from the row, listed in the record's ``unreadable``.
    """
    d = doc.header
    plan = _plan(d["plan"])
    capacity = _capacity(d["capacity"])
    engine = EngineRecord(**{**known_fields(EngineRecord, d["engine"]), "settings": _settings(d["engine"].get("settings"))})
    machine = Machine(**known_fields(Machine, d.get("machine") or {}))
    peaks = run_peaks(machine.gpu_devices, machine.cpu, engine.settings)
    use_cache = not rederive and d.get("definitions_version") == DEFINITIONS_VERSION
    entries: dict[str, list] = {"prefill": [], "decode": []}
    lost: dict[str, list[UnreadableCell]] = {"prefill": [], "decode": []}
    for kind, row in doc.rows:  # one at a time: a row's raw records are read as it is taken
        if UNREADABLE in row:
            lost[kind].append(row[UNREADABLE])
            entries[kind].append(_error_entry(row, plan))
        elif kind == "prefill":
            entries[kind].append(_prefill(row, use_cache))
        else:
            entries[kind].append(_decode(row, plan, capacity, peaks, use_cache))
    return RunRecord(
        tool=dict(d["tool"]),
        created=d["created"],
        command=d["command"],
        profile=_profile(d["profile"]),
        plan=plan,
        engine=engine,
        capacity=capacity,
        machine=machine,
        prefill=tuple(entries["prefill"]),
        decode=tuple(entries["decode"]),
        finished=bool(d.get("finished", False)),
        notes=tuple(d.get("notes", ())),
        measure_s=float((d.get("timing") or {}).get("measure_s", 0.0)),
        **scope.from_json(d),
        schema_version=int(d["schema_version"]),
        unreadable=tuple(lost["prefill"] + lost["decode"]),
    )


def _error_entry(row: dict[str, Any], plan: RunPlan) -> PrefillEntry | DecodeEntry:
    """The Error entry standing for ``row`` (a manifest row) whose cell file could not be read (its ``UnreadableCell``)."""
    cell: UnreadableCell = row[UNREADABLE]
    path = Path(cell.path)
    what = cell.reason.removeprefix(f"{path}: ")
    # A path outside the folder says so first (its reason names the path as the manifest gave it).
    error = what if what.startswith(OUTSIDE) else f"cell file {path.parent.name}/{path.name} unreadable: {what}"
    verdict = Verdict(st.ERROR, f"{error} ({_recorded(row)})", ())
    if "concurrency" not in row:
        figures = cached.prefill_figures(row) if row.get("ttft_ms") is not None else None
        return PrefillEntry(row["context"], verdict, (), figures, error=error)
    cellplan = CellPlan(row["context"], row["concurrency"], row.get("max_tokens", 0), None)
    entry = derive.unmeasured_entry(cellplan, row.get("prompt_mode", plan.settings.prompt_mode), "", verdict, error)
    return dataclasses.replace(entry, figures=cached.decode_figures(row))


def _recorded(row: dict[str, Any]) -> str:
    """What the manifest said of the entry: its status, reason and headline figures."""
    if not row.get("status"):
        return "not yet in the manifest"
    shown = [f"{row[k]:.1f} {unit}" for k, unit in _HEADLINE if isinstance(row.get(k), (int, float))]
    said = f"the manifest recorded {row['status']}" + (f": {row['reason']}" if row.get("reason") else "")
    return said + (f"; {', '.join(shown)}" if shown else "")


#: The figures an Error entry's reason repeats from its manifest row (the matrix shows no figure of an Error cell).
_HEADLINE = (("total_tok_s", "tok/s"), ("prompt_tok_s", "prompt tok/s"), ("ttft_ms", "ms TTFT"))


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
    text = d.get("prompts")
    prompts = TextSource(**{**known_fields(TextSource, text), "used": tuple(text.get("used") or ())}) if text else None
    return RunPlan(settings, int(d["seed"]), loops, d.get("telemetry_hz"), prompts)


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
    entry = _decode_entry(d, plan, capacity, peaks, use_cache)
    tries = tuple(EarlierTry.from_dict(t) for t in d.get("tries") or ())
    return dataclasses.replace(entry, tries=tries) if tries else entry


def _decode_entry(d: dict[str, Any], plan: RunPlan, capacity: Capacity, peaks: Peaks, use_cache: bool) -> DecodeEntry:
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
