"""A run record as the results file's JSON: the manifest form (raw records left to cell files)
or the inline form (raw records in the JSON, as a baseline holds each run). History: ``migrate``."""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from inproc.measure.figures import DecodeFigures, PrefillFigures
from inproc.measure.judge import Verdict
from inproc.record import scope
from inproc.record.definitions import DEFINITIONS_VERSION
from inproc.record.layout import entry_name
from inproc.record.migrate import SCHEMA_VERSION
from inproc.record.schema import DecodeEntry, PrefillEntry, RunPlan, RunRecord
from inproc.telemetry.window import WindowTelemetry


def to_json(rec: RunRecord, cell_files: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The record as the results file's JSON object (current schema).

    ``cell_files``: the manifest form, each entry reduced to its headline, the rest in its cell file
    (entry id -> file name, ``inproc.record.write``); None: the inline form, every row whole with its raw records
    (what a baseline holds for each run).
    """
    return {
        "schema_version": SCHEMA_VERSION,
        "definitions_version": DEFINITIONS_VERSION,
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
        "prefill": [_row(e, cell_files) for e in rec.prefill],
        "decode": [_row(e, cell_files) for e in rec.decode],
    }


def header_json(rec: RunRecord) -> dict[str, Any]:
    """The record's JSON without its entries."""
    return {k: v for k, v in to_json(dataclasses.replace(rec, prefill=(), decode=()), {}).items()
            if k not in ("prefill", "decode")}


#: What a manifest row keeps of an entry (the rest is in its cell file): its key, status and
#: reason, and its figures but the step anatomy and the slow steps (``DecodeFigures`` / ``PrefillFigures`` fields).
HEADLINE = ("context", "concurrency", "status", "reason", "cell_file") + tuple(
    f.name for cls in (DecodeFigures, PrefillFigures) for f in dataclasses.fields(cls) if f.name not in ("anatomy", "slow"))
#: The disturbance flag a manifest row repeats from the entry's row (a decode row all three, a prefill row
#: ``disturbed``), so a reader of the manifest alone sees which figures were measured on a busy machine and
#: which try they come from. Its cell file keeps them too: an entry found there alone (a killed run's) has them.
FLAGS = ("disturbed", "try", "tries")


def entry_json(e: PrefillEntry | DecodeEntry) -> dict[str, Any]:
    """An entry's whole JSON row (verdict, every figure, telemetry figures), without its raw records."""
    return _prefill_json(e) if isinstance(e, PrefillEntry) else _decode_json(e)


def cell_row(e: PrefillEntry | DecodeEntry) -> dict[str, Any]:
    """What an entry's cell file keeps of its row: all but what the manifest row holds (status, reason,
    headline figures) when the entry is derived from raw records, which give those again; its whole
    row otherwise (an Error or unmeasured entry's verdict comes from no record).

    The plan's cell (max_tokens, prompt mode, capacity check), the reproduce command, the checks
    passed and the figures the manifest leaves out stay, so a listed entry's manifest row and cell
    row together are its whole row. An entry found in its cell file alone (a killed run's, not yet
    in the manifest) has no status: the loader derives it from its raw records (``inproc.record.derive``).
    """
    d = entry_json(e)
    measured = e.samples if isinstance(e, PrefillEntry) else e.trace is not None
    if e.error or not measured:
        return d
    return {k: v for k, v in d.items() if k not in HEADLINE or k in ("context", "concurrency")}


def _row(e: PrefillEntry | DecodeEntry, cell_files: Mapping[str, str] | None) -> dict[str, Any]:
    """An entry's row: its headline and the cell file holding the rest, or all of it with raw records inline."""
    d = entry_json(e)
    if cell_files is not None:
        name = cell_files.get(entry_id(e))
        return {**{k: d[k] for k in HEADLINE + FLAGS if k in d}, "cell_file": name} if name else d
    raw = raw_json(e)
    if isinstance(e, PrefillEntry):
        d["raw"] = raw["samples"]
    else:
        d["trace"] = raw["trace"]
    if d["telemetry"] is not None:
        d["telemetry"]["trace"] = raw["telemetry"]
    return d


def entry_id(e: PrefillEntry | DecodeEntry) -> str:
    """``prefill-8192`` or ``decode-8192x16``: an entry's name in the record and its cell file's stem."""
    return entry_name(e.context, None if isinstance(e, PrefillEntry) else e.concurrency)


def raw_json(e: PrefillEntry | DecodeEntry) -> dict[str, Any]:
    """An entry's raw records: its trace (or samples) and its telemetry samples."""
    tel = e.telemetry.trace.to_dict() if e.telemetry is not None else None
    if isinstance(e, PrefillEntry):
        return {"samples": [s.to_dict() for s in e.samples], "telemetry": tel}
    return {"trace": e.trace.to_dict() if e.trace else None, "telemetry": tel}


def plan_json(plan: RunPlan) -> dict[str, Any]:
    d = dataclasses.asdict(plan.settings)
    d.update(seed=plan.seed, prefill_list=list(plan.settings.prefill_list), loop_check=dataclasses.asdict(plan.loops),
             telemetry_hz=plan.telemetry_hz)
    if plan.prompts is not None:  # --prompts; absent: synthetic ids (the key was added 2026-12-06, same version)
        d["prompts"] = {**dataclasses.asdict(plan.prompts), "used": list(plan.prompts.used)}
    return d


def _verdict_json(v: Verdict) -> dict[str, Any]:
    return {"status": v.status, "reason": v.reason, "checks_passed": list(v.checks_passed)}


def _telemetry_json(t: WindowTelemetry | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {"figures": t.figures.to_dict(), "throttle": {"passed": t.throttle_passed, "reason": t.throttle_reason},
            "disturbance": t.disturbance.to_dict() if t.disturbance is not None else None}


def _prefill_json(e: PrefillEntry) -> dict[str, Any]:
    f = dataclasses.asdict(e.figures) if e.figures else {}
    return {
        "context": e.context, **_verdict_json(e.verdict),
        "ttft_ms": f.get("ttft_ms"), "prompt_tok_s": f.get("prompt_tok_s"), "samples": f.get("samples", 0),
        "steps": f.get("steps"), "cached_tokens": f.get("cached_tokens"), "prefix_hits": f.get("prefix_hits"),
        "error": e.error, "disturbed": e.disturbed, "telemetry": _telemetry_json(e.telemetry),
    }


def _decode_json(e: DecodeEntry) -> dict[str, Any]:
    figures = e.figures.to_dict() if e.figures else {}
    return {
        "context": e.context, "concurrency": e.concurrency, **_verdict_json(e.verdict),
        "max_tokens": e.max_tokens, "prompt_mode": e.prompt_mode, "ttft_kind": e.ttft_kind, **figures,
        "capacity_check": dataclasses.asdict(e.capacity_check) if e.capacity_check else None,
        "error": e.error, "reproduce": e.reproduce,
        "window_open_reason": e.trace.window_open_reason if e.trace else None,
        "disturbed": e.disturbed, "try": e.try_number, "tries": [t.to_dict() for t in e.tries],
        "telemetry": _telemetry_json(e.telemetry),
    }
