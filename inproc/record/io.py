"""The results file: versioned JSON, written atomically, loaded by re-deriving every figure.

The schema's history and the migration of older files are in :mod:`inproc.record.migrate`.
Files of versions 1–5 are migrated on load; a newer file than this inproc reads is refused
with the fix. Writing is temp file + fsync + ``os.replace``: a reader never sees half
a file, and an interrupted run loses at most the entry in progress.
"""
from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from inproc.errors import UsageError
from inproc.measure.judge import Verdict
from inproc.measure.loops import LoopSettings
from inproc.measure.peaks import Peaks, run_peaks
from inproc.measure.trace import CellTrace
from inproc.plan.capacity import CapacityCheck
from inproc.plan.matrix import CellPlan
from inproc.plan.settings import MatrixSettings
from inproc.record import derive, scope
from inproc.record.codec import known_fields
from inproc.record.migrate import SCHEMA_VERSION, migrate
from inproc.record.schema import (
    DecodeEntry,
    EngineRecord,
    Machine,
    PrefillEntry,
    ProfileRef,
    RunPlan,
    RunRecord,
)
from inproc.telemetry.trace import TelemetryTrace
from inproc.telemetry.window import WindowTelemetry
from inproc.types import Capacity, KVCacheGroup

RESULTS_HINT = "Give the JSON written by 'inproc run --out'."
BASELINE_KIND = "inproc-baseline"  # the "kind" of a baseline file (inproc.record.baseline), which holds runs


# -- writing -------------------------------------------------------------------------
def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Temp file in the same folder, fsync, then ``os.replace``: a reader never sees half a file."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; results and reports are ordinary files
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_results(path: str | os.PathLike, record: RunRecord) -> None:
    """Write a results file atomically (see :func:`write_text_atomic`)."""
    write_text_atomic(path, json.dumps(to_json(record), separators=(",", ":")))


def to_json(rec: RunRecord) -> dict[str, Any]:
    """The record as the results file's JSON object (current schema)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": dict(rec.tool),
        "created": rec.created,
        "command": rec.command,
        "finished": rec.finished,
        "notes": list(rec.notes),
        "timing": {"measure_s": rec.measure_s},
        "profile": dataclasses.asdict(rec.profile),
        "plan": plan_json(rec.plan),
        "engine": dataclasses.asdict(rec.engine),
        "capacity": dataclasses.asdict(rec.capacity),
        "machine": dataclasses.asdict(rec.machine),
        **scope.to_json(rec),
        "prefill": [_prefill_json(e) for e in rec.prefill],
        "decode": [_decode_json(e) for e in rec.decode],
    }


def plan_json(plan: RunPlan) -> dict[str, Any]:
    d = dataclasses.asdict(plan.settings)
    d.update(seed=plan.seed, prefill_list=list(plan.settings.prefill_list), loop_check=dataclasses.asdict(plan.loops),
             telemetry_hz=plan.telemetry_hz)
    return d


def _verdict_json(v: Verdict) -> dict[str, Any]:
    return {"status": v.status, "reason": v.reason, "checks_passed": list(v.checks_passed)}


def _telemetry_json(t: WindowTelemetry | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {"figures": t.figures.to_dict(), "throttle": {"passed": t.throttle_passed, "reason": t.throttle_reason},
            "trace": t.trace.to_dict()}


def _prefill_json(e: PrefillEntry) -> dict[str, Any]:
    f = dataclasses.asdict(e.figures) if e.figures else {}
    return {
        "context": e.context, **_verdict_json(e.verdict),
        "ttft_ms": f.get("ttft_ms"), "prompt_tok_s": f.get("prompt_tok_s"), "samples": f.get("samples", 0),
        "steps": f.get("steps"), "cached_tokens": f.get("cached_tokens"), "prefix_hits": f.get("prefix_hits"),
        "error": e.error, "telemetry": _telemetry_json(e.telemetry), "raw": [s.to_dict() for s in e.samples],
    }


def _decode_json(e: DecodeEntry) -> dict[str, Any]:
    figures = e.figures.to_dict() if e.figures else {}
    return {
        "context": e.context, "concurrency": e.concurrency, **_verdict_json(e.verdict),
        "max_tokens": e.max_tokens, "prompt_mode": e.prompt_mode, "ttft_kind": e.ttft_kind, **figures,
        "capacity_check": dataclasses.asdict(e.capacity_check) if e.capacity_check else None,
        "error": e.error, "reproduce": e.reproduce,
        "window_open_reason": e.trace.window_open_reason if e.trace else None,
        "telemetry": _telemetry_json(e.telemetry), "trace": e.trace.to_dict() if e.trace else None,
    }


# -- loading -------------------------------------------------------------------------
def load_results(path: str | os.PathLike) -> RunRecord:
    """Read a results file, migrate it to the current schema and derive every entry again.

    A missing, foreign or newer file is a one-line :class:`UsageError`.
    """
    p = Path(path)
    return record_from_json(read_json(p, "results file", f"No results file at {str(path)!r}. {RESULTS_HINT}"), str(p))


def record_from_json(data: Any, where: str) -> RunRecord:
    """A results JSON object of any known version (read from ``where``) as a record; one-line errors."""
    if isinstance(data, dict) and data.get("kind") == BASELINE_KIND:
        raise UsageError(f"{where}: a baseline of several runs, not one results file. "
                         "Give it to 'inproc compare', or give one of the runs it was made from.")
    version = check_version(data, "schema_version", SCHEMA_VERSION, "results file", RESULTS_HINT, where)
    try:
        return dataclasses.replace(from_json(migrate(data)), schema_version=version)
    except (KeyError, TypeError, ValueError, AttributeError) as e:  # right version, wrong content
        raise UsageError(f"{where}: not a results file ({type(e).__name__}: {e}). {RESULTS_HINT}") from None


def read_json(p: Path, what: str, missing: str) -> Any:
    """The JSON in ``p``; a missing file (``missing``: the message) or bad JSON is a one-line :class:`UsageError`."""
    if not p.is_file():
        raise UsageError(missing)
    try:
        return json.loads(p.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UsageError(f"{p}: not a {what} (invalid JSON: {e}).") from None


def check_version(data: Any, key: str, current: int, what: str, hint: str, where: str) -> int:
    """The format version an inproc JSON object holds in ``key``.

    An object without the key, or with a version newer than ``current``, is a one-line
    :class:`UsageError` naming ``where``, with the fix.
    """
    if not isinstance(data, dict) or key not in data:
        raise UsageError(f"{where}: not an inproc {what} (no {key}). {hint}".rstrip())
    version = data[key]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise UsageError(f"{where}: {key} {version!r} is not an inproc schema. {hint}".rstrip())
    if version > current:
        raise UsageError(f"{where}: {key} {version} is newer than this inproc reads (up to {current}). "
                         "Upgrade inproc to read it (pip install -U inproc, or pull the checkout that wrote it).")
    return version


def from_json(d: dict[str, Any]) -> RunRecord:
    """A record from current-schema JSON; every measured entry derived again from its raw records."""
    plan = _plan(d["plan"])
    capacity = _capacity(d["capacity"])
    engine = EngineRecord(**known_fields(EngineRecord, d["engine"]))
    machine = Machine(**known_fields(Machine, d.get("machine") or {}))
    peaks = run_peaks(machine.gpu_devices, machine.cpu, engine.settings)
    return RunRecord(
        tool=dict(d["tool"]),
        created=d["created"],
        command=d["command"],
        profile=_profile(d["profile"]),
        plan=plan,
        engine=engine,
        capacity=capacity,
        machine=machine,
        prefill=tuple(_prefill(e) for e in d.get("prefill", [])),
        decode=tuple(_decode(e, plan, capacity, peaks) for e in d.get("decode", [])),
        finished=bool(d.get("finished", False)),
        notes=tuple(d.get("notes", ())),
        measure_s=float((d.get("timing") or {}).get("measure_s", 0.0)),
        **scope.from_json(d),
        schema_version=int(d["schema_version"]),
    )



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


def _prefill(d: dict[str, Any]) -> PrefillEntry:
    samples = tuple(CellTrace.from_dict(s) for s in d.get("raw", []))
    if d.get("error") or not samples:
        return PrefillEntry(d["context"], _verdict(d), samples, error=d.get("error"))
    return derive.prefill_entry(d["context"], samples, _telemetry_trace(d))


def _decode(d: dict[str, Any], plan: RunPlan, capacity: Capacity, peaks: Peaks) -> DecodeEntry:
    check = d.get("capacity_check")
    cell = CellPlan(d["context"], d["concurrency"], d.get("max_tokens", 0), CapacityCheck(**check) if check else None)
    mode, reproduce = d.get("prompt_mode", plan.settings.prompt_mode), d.get("reproduce", "")
    if d.get("error") or not d.get("trace"):
        return derive.unmeasured_entry(cell, mode, reproduce, _verdict(d), d.get("error"))
    trace = CellTrace.from_dict(d["trace"])
    return derive.decode_entry(cell, mode, reproduce, trace, _telemetry_trace(d), capacity, plan.loops, peaks,
                               plan.settings.anatomy)
