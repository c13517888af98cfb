"""A baseline: several runs of one profile in one file, each run kept whole (raw records and all).

A single night's within-window noise understates how much a run varies from night to
night; a baseline keeps each run (and so each run's samples) so that a comparison can
use the spread between runs. Nothing is summarised on the way in: loading a baseline
derives every run's figures again from its raw records, as loading a results file does.

File format (``baseline_version``):
  1 — 2026-12-01: ``{"kind": "inproc-baseline", "baseline_version": 1, "created", "tool",
      "sources": [the results files folded], "runs": [each a results-file object]}``;
      each run carries its own ``schema_version`` and is read like a results file.
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
from inproc.record.io import BASELINE_KIND, RESULTS_HINT, read_json, record_from_json, to_json, write_text_atomic
from inproc.record.schema import RunRecord

BASELINE_VERSION = 1


@dataclass(frozen=True, eq=False)
class RunSet:
    """One side of a comparison: the runs of one results file (one) or of a baseline (several)."""

    path: str
    runs: tuple[RunRecord, ...]
    baseline: bool  # read from a baseline file
    sources: tuple[str, ...]  # the results files the runs came from


def baseline_json(runs: Sequence[RunRecord], sources: Sequence[str]) -> dict[str, Any]:
    """The baseline file's JSON object (each run in the current results schema)."""
    return {"kind": BASELINE_KIND, "baseline_version": BASELINE_VERSION,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "tool": {"name": "inproc", "version": inproc.__version__},
            "sources": list(sources), "runs": [to_json(r) for r in runs]}


def write_baseline(path: str | os.PathLike, runs: Sequence[RunRecord], sources: Sequence[str]) -> None:
    """Write a baseline file atomically (temp file + ``os.replace``)."""
    write_text_atomic(path, json.dumps(baseline_json(runs, sources), separators=(",", ":")))


def load_runs(path: str | os.PathLike) -> RunSet:
    """A results file as a set of one run, or a baseline's runs; one-line errors, newer formats refused."""
    data = read_json(Path(path), "results file", f"No results file at {str(path)!r}. {RESULTS_HINT}")
    where = str(path)
    if not (isinstance(data, dict) and data.get("kind") == BASELINE_KIND):
        return RunSet(where, (record_from_json(data, where, Path(path).parent),), False, (where,))
    version = data.get("baseline_version")
    if not isinstance(version, int) or version < 1:
        raise UsageError(f"{where}: baseline_version {version!r} is not an inproc baseline format.")
    if version > BASELINE_VERSION:
        raise UsageError(f"{where}: baseline_version {version} is newer than this inproc reads (up to "
                         f"{BASELINE_VERSION}). Upgrade inproc to read it (pip install -U inproc).")
    raw_runs = data.get("runs")
    if not isinstance(raw_runs, list) or not raw_runs:
        raise UsageError(f"{where}: a baseline without runs. Make one with 'inproc baseline RUN... -o {where}'.")
    runs = tuple(record_from_json(r, f"{where} (run {i + 1})") for i, r in enumerate(raw_runs))
    sources = tuple(str(s) for s in data.get("sources") or ())
    return RunSet(where, runs, True, sources)
