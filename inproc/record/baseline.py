"""A baseline: several runs of one profile in one file, each kept compact.

A single night's within-window noise understates how much a run varies from night to
night; a baseline keeps each run's figures, its cells' sub-window samples (what compare's
tests draw on) and their step anatomy (what the diagnosis reads), so that a comparison can
use the spread between runs. Raw records stay in the run files
(``inproc.record.summary``: the compact form of one run).

File format (``baseline_version``):
  1 — 2026-12-01: ``{"kind": "inproc-baseline", "baseline_version": 1, "created", "tool",
      "sources": [the results files folded], "runs": [each a results-file object]}``;
      each run carries its own ``schema_version`` and is read like a results file.
  2 — 2026-12-01: the same, but "runs" holds each run's compact object
      (``inproc.record.summary``, kind "inproc-summary"). Version-1 files still load.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import inproc
from inproc.errors import UsageError
from inproc.record.io import BASELINE_KIND, RESULTS_HINT, load_results, read_json, record_from_json, write_text_atomic
from inproc.record.schema import RunRecord
from inproc.record.summarize import Cutting
from inproc.record.summary import is_summary, record_from_summary, summary_json

BASELINE_VERSION = 2


@dataclass(frozen=True, eq=False)
class RunSet:
    """One side of a comparison: the runs of one results file (one) or of a baseline (several)."""

    path: str
    runs: tuple[RunRecord, ...]
    baseline: bool  # read from a baseline file
    sources: tuple[str, ...]  # the results files the runs came from


def baseline_json(runs: Sequence[RunRecord], sources: Sequence[str], cutting: Cutting) -> dict[str, Any]:
    """The baseline file's JSON object (each run compact, its header in the current results schema)."""
    return {"kind": BASELINE_KIND, "baseline_version": BASELINE_VERSION,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "tool": {"name": "inproc", "version": inproc.__version__},
            "sources": list(sources), "runs": [summary_json(r, str(sources[i]) if i < len(sources) else "", cutting) for i, r in enumerate(runs)]}


def write_baseline(path: str | os.PathLike, runs: Sequence[RunRecord], sources: Sequence[str],
                   cutting: Cutting) -> None:
    """Write a baseline file atomically (temp file + ``os.replace``); sub-windows cut by ``cutting``."""
    write_text_atomic(path, json.dumps(baseline_json(runs, sources, cutting), separators=(",", ":")))


def load_runs(path: str | os.PathLike) -> RunSet:
    """A results file or a history entry as a set of one run, or a baseline's runs; one-line errors, newer formats refused."""
    data = read_json(Path(path), "results file", f"No results file at {str(path)!r}. {RESULTS_HINT}")
    where = str(path)
    if is_summary(data):  # one night's history entry
        return RunSet(where, (record_from_summary(data, where),), False, (where,))
    if not (isinstance(data, dict) and data.get("kind") == BASELINE_KIND):
        return RunSet(where, (load_results(path),), False, (where,))  # the public loader: its storage is its business
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
