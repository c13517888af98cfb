"""Reading runs: a results file, a night's history entry (one run in compact form), or a baseline
(several runs of one profile in one file, each kept compact). Written by ``inproc.record.summary``.

A single night's within-window noise understates how much a run varies from night to
night; a baseline keeps each run's figures, its cells' sub-window samples (what compare's
tests draw on) and their step anatomy (what the diagnosis reads), so that a comparison can
use the spread between runs. Raw records stay in the run files
(``inproc.record.summary``: the compact form of one run).

A summary's versions (``summary_version``):
  1 — 2026-12-01: ``{"kind": "inproc-summary", "summary_version": 1, "source": the run file,
      "run": the results-file object of the run without raw records, "cells": {cell key: compact
      cell}}`` (``inproc.record.compact``). From 2026-12-02 a cell's anatomy also holds "slow" (its
      slow-step figures); a summary without it loads with none (no tail split in the diagnosis). From
      2026-12-03 it also holds "kernels" (``inproc.kernels.summary.KernelSummary``, null without a kernel pass).

File format (``baseline_version``):
  1 — 2026-12-01: ``{"kind": "inproc-baseline", "baseline_version": 1, "created", "tool",
      "sources": [the results files folded], "runs": [each a results-file object]}``;
      each run carries its own ``schema_version`` and is read like a results file.
  2 — 2026-12-01: the same, but "runs" holds each run's compact object
      (``inproc.record.summary``, kind "inproc-summary"). Version-1 files still load.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inproc.errors import UsageError
from inproc.record.compact import CellSummary
from inproc.record.files import check_version, read_json
from inproc.record.layout import BASELINE_KIND, BASELINE_VERSION, RESULTS_HINT, SUMMARY_KIND, SUMMARY_VERSION
from inproc.record.load import record_from_json
from inproc.record.schema import RunRecord

SUMMARY_HINT = "Give a results file, or a summary from 'inproc history --store'."


@dataclass(frozen=True, eq=False)
class RunSet:
    """One side of a comparison: the runs of one results file (one) or of a baseline (several)."""

    path: str
    runs: tuple[RunRecord, ...]
    baseline: bool  # read from a baseline file
    sources: tuple[str, ...]  # the results files the runs came from


def load_runs(path: str | os.PathLike) -> RunSet:
    """A results file or a history entry as a set of one run, or a baseline's runs; one-line errors, newer formats refused."""
    data = read_json(Path(path), "results file", f"No results file at {str(path)!r}. {RESULTS_HINT}")
    where = str(path)
    if is_summary(data):  # one night's history entry
        return RunSet(where, (record_from_summary(data, where),), False, (where,))
    if not (isinstance(data, dict) and data.get("kind") == BASELINE_KIND):
        # The loader's stages on the JSON read above (as load_results would, which reads it again).
        return RunSet(where, (record_from_json(data, str(Path(path)), Path(path).parent),), False, (where,))
    version = data.get("baseline_version")
    if not isinstance(version, int) or version < 1:
        raise UsageError(f"{where}: baseline_version {version!r} is not an inproc baseline format.")
    if version > BASELINE_VERSION:
        raise UsageError(f"{where}: baseline_version {version} is newer than this inproc reads (up to "
                         f"{BASELINE_VERSION}). Upgrade inproc to read it (pip install -U inproc).")
    raw_runs = data.get("runs")
    if not isinstance(raw_runs, list) or not raw_runs:
        raise UsageError(f"{where}: a baseline without runs. Make one with 'inproc baseline RUN... -o {where}'.")
    runs = tuple((record_from_summary if is_summary(r) else record_from_json)(r, f"{where} (run {i + 1})")
                 for i, r in enumerate(raw_runs))
    sources = tuple(str(s) for s in data.get("sources") or ())
    return RunSet(where, runs, True, sources)


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
