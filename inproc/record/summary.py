"""Writing runs in compact form: what a baseline (version 2) keeps of each run, a night's history
entry, and the baseline file of several such runs (read by ``inproc.record.baseline``).

The object is ``{"kind": "inproc-summary", "summary_version": 1, "source": the run file,
"run": the results-file object of the run without raw records, "cells": {cell key: compact
cell}}``. "run" is written and read by the results file's own codec
(``inproc.record.tojson.to_json`` / ``inproc.record.load.record_from_json``) on a record whose entries hold no
traces, so the header (profile, plan, engine, machine, capacity, statuses) follows the
results schema; the cells are ``inproc.record.compact``.

Its versions, and the reader of both forms: ``inproc.record.baseline``.
"""
from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Any, Sequence

import inproc
from inproc.record.layout import BASELINE_KIND, BASELINE_VERSION, SUMMARY_KIND, SUMMARY_VERSION
from inproc.record.schema import RunRecord
from inproc.record.summarize import Cutting, cell_summary
from inproc.record.tojson import to_json
from inproc.record.write import write_text_atomic


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


def baseline_json(runs: Sequence[RunRecord], sources: Sequence[str], cutting: Cutting) -> dict[str, Any]:
    """The baseline file's JSON object (each run compact, its header in the current results schema)."""
    return {"kind": BASELINE_KIND, "baseline_version": BASELINE_VERSION,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "tool": {"name": "inproc", "version": inproc.__version__},
            "sources": list(sources), "runs": [summary_json(r, str(sources[i]) if i < len(sources) else "", cutting) for i, r in enumerate(runs)]}


def write_baseline(path: str | os.PathLike, runs: Sequence[RunRecord], sources: Sequence[str],
                   cutting: Cutting) -> None:
    """Write a baseline file atomically (temp file + ``os.replace``); sub-windows cut by ``cutting``."""
    write_text_atomic(path, json.dumps(baseline_json(runs, sources, cutting), separators=(",", ":")))
