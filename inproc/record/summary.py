"""A run in compact form: what a baseline (version 2) keeps of each run, and a night's history entry.

The object is ``{"kind": "inproc-summary", "summary_version": 1, "source": the run file,
"run": the results-file object of the run without raw records, "cells": {cell key: compact
cell}}``. "run" is written and read by the results file's own public codec
(``inproc.record.io.to_json`` / ``record_from_json``) on a record whose entries hold no
traces, so the header (profile, plan, engine, machine, capacity, statuses) follows the
results schema; the cells are ``inproc.record.compact``.

Versions (``summary_version``):
  1 — 2026-12-01: as above. From 2026-12-02 a cell's anatomy also holds "slow" (its slow-step
      figures); a summary without it loads with none (no tail split in the diagnosis). From 2026-12-03 it
      also holds "kernels" (``inproc.kernels.summary.KernelSummary``, null without a kernel pass).
"""
from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from inproc.errors import UsageError
from inproc.record.compact import CellSummary
from inproc.record.io import check_version, record_from_json, to_json, write_text_atomic
from inproc.record.schema import RunRecord
from inproc.record.summarize import Cutting, cell_summary

SUMMARY_KIND = "inproc-summary"
SUMMARY_VERSION = 1
SUMMARY_HINT = "Give a results file, or a summary from 'inproc history --store'."


def summary_json(rec: RunRecord, source: str, cutting: Cutting) -> dict[str, Any]:
    """The compact object of one run (see the module docstring); sub-windows cut by ``cutting``."""
    cells = {e.key: cell_summary(e, rec.capacity, cutting).to_dict() for e in rec.decode}
    bare = dataclasses.replace(
        rec, prefill=tuple(dataclasses.replace(p, samples=(), telemetry=None) for p in rec.prefill),
        decode=tuple(dataclasses.replace(e, trace=None, telemetry=None, figures=None, summary=None) for e in rec.decode))
    return {"kind": SUMMARY_KIND, "summary_version": SUMMARY_VERSION, "source": source,
            "run": to_json(bare), "cells": cells}


def write_summary(path: str | os.PathLike, rec: RunRecord, source: str, cutting: Cutting) -> None:
    """Write one run's compact object atomically."""
    write_text_atomic(path, json.dumps(summary_json(rec, source, cutting), separators=(",", ":")))


def is_summary(data: Any) -> bool:
    return isinstance(data, dict) and data.get("kind") == SUMMARY_KIND


def record_from_summary(data: Any, where: str) -> RunRecord:
    """The run of a compact object: its header and statuses, each decode cell with its summary (no trace)."""
    check_version(data, "summary_version", SUMMARY_VERSION, "summary", SUMMARY_HINT, where)
    rec = record_from_json(data.get("run"), where)
    try:
        cells = {k: CellSummary.from_dict(v) for k, v in (data.get("cells") or {}).items()}
    except (KeyError, TypeError, ValueError) as e:
        raise UsageError(f"{where}: not an inproc summary ({type(e).__name__}: {e}). {SUMMARY_HINT}") from None
    decode = tuple(dataclasses.replace(e, summary=cells.get(e.key)) for e in rec.decode)
    return dataclasses.replace(rec, decode=decode)


def source_of(data: Any) -> str:
    """The run file a compact object was made from ("" when not recorded)."""
    return str(data.get("source") or "") if isinstance(data, dict) else ""
