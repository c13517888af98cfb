"""``inproc compare --format json``: every figure of a comparison (or of two engines side by side), unrounded,
for scripts and for ``inproc bisect``, which no other format shows. Each document carries its version."""
from __future__ import annotations

import json
from dataclasses import asdict
from typing import Sequence

from inproc.compare.samples import BETWEEN_RUNS, METRICS
from inproc.compare.side_by_side import CellPair, SideBySide
from inproc.compare.spread import NIGHT_ALPHA
from inproc.compare.verdicts import SLOWER, Comparison, Row
from inproc.history.explain import Explained
from inproc.render.compare import kernels
from inproc.render.compare.lines import summary_line, undecided_cause

# history: 1 — 2026-12-01, first format; 2 — 2026-12-01, tests "block bootstrap" (one run each side,
# indicative, with "within" and "run_spread") and "between-run t"; Mann-Whitney and "p" gone;
# 3 — 2026-12-02, verdict "insufficient data"; rows carry "p_change", "at_least" and "spread_source"; settings carry
# "alarm_rate" and "threshold_confidence"; "run_spread" holds only a stated --run-spread; 4 — 2026-12-02, each
# diagnosis carries "step_change" ("tail", "typical", "unchanged" or null: inproc.history.tail) and "tail_share";
# 5 — 2026-12-03, "kernels": per cell with a kernel pass on both sides, each category's change per step
# (inproc.compare.kernels; inproc.render.compare.kernels.to_json); 6 — 2026-12-04, exit code 3 (rows not judged,
# listed under "undecided" with their cause); rows carry "needed_spread" (one run each side, inproc.compare.bound);
# settings carry "max_spread"; 7 — 2026-12-06, verdict "not run in either" (Over capacity or Exceeds max model length in
# both runs: judged, never undecided)
COMPARE_JSON_VERSION = 7
SIDE_BY_SIDE_JSON_VERSION = 1  # history: 1 — 2026-12-01, first format


def _row_json(r: Row) -> dict:
    e = r.estimate
    return {"cell": r.key, "context": r.context, "concurrency": r.concurrency, "metric": r.metric,
            "verdict": r.verdict, "reason": r.reason, "base_status": r.base_status, "new_status": r.new_status,
            "base": e.base_figure if e else None, "new": e.new_figure if e else None, "unit": METRICS[r.metric].unit,
            "ratio": e.ratio if e else None, "low": e.interval.low if e else None, "high": e.interval.high if e else None,
            "test": e.test if e else None, "significant": e.significant if e else None,
            "n_base": e.n_base if e else None, "n_new": e.n_new if e else None,
            "indicative": e.indicative if e else None, "run_spread": e.run_spread if e else None,
            "within": [e.within.low, e.within.high] if e and e.within else None,
            "spread_source": e.spread_source if e else None, "p_change": e.p_change if e else None,
            "at_least": e.at_least if e else None, "needed_spread": e.needed_spread if e else None}


def diagnoses_json(explained: Sequence[Explained]) -> dict:
    """``{"diagnoses": [{"cell", "metric", "diagnosis", "step_change", "tail_share"}]}`` ("step_change": where the
    step time moved, ``inproc.history.tail``; null without slow-step figures on both sides)."""
    return {"diagnoses": [{"cell": e.row.key, "metric": e.row.metric, "diagnosis": e.diagnosis,
                           "step_change": e.tail.where if e.tail else None,
                           "tail_share": e.tail.tail_share if e.tail else None} for e in explained]}


def compare_json(c: Comparison) -> dict:
    """The comparison as one JSON object: sides, settings, allowed differences, rows, geometric means, exit code."""
    s = c.settings
    return {"kind": "inproc-compare", "version": COMPARE_JSON_VERSION, "baseline": asdict(c.base), "new": asdict(c.new),
            "settings": {"threshold": s.threshold, "metrics": list(s.metrics), "allow_different": list(s.allow_different),
                         "confidence": s.tests.confidence, "resamples": s.tests.resamples, "seed": s.tests.seed,
                         "sub_window": s.tests.cutting.describe(c.new.window_s), "between_runs_test": BETWEEN_RUNS,
                         "run_spread": {k: asdict(v) for k, v in s.tests.run_spread.items()},
                         "alarm_rate": NIGHT_ALPHA, "threshold_confidence": s.tests.threshold_confidence,
                         "max_spread": s.tests.max_spread},
            "allowed": [asdict(d) for d in c.allowed], "rows": [_row_json(r) for r in c.rows],
            "geomeans": [asdict(g) for g in c.geomeans], "kernels": kernels.to_json(c),
            "regressions": [f"{r.key} {r.metric}" if r.verdict == SLOWER else r.key for r in c.regressions],
            "undecided": [{"cell": r.key, "metric": r.metric, "verdict": r.verdict, "cause": undecided_cause(r)}
                          for r in c.undecided],
            "summary": summary_line(c), "exit_code": c.exit_code}


def render_compare_json(c: Comparison, explained: Sequence[Explained] | None = None) -> str:
    """The comparison's document; ``explained`` (what ``inproc compare`` always gives) adds its "diagnoses" last."""
    doc = compare_json(c) | (diagnoses_json(explained) if explained is not None else {})
    return json.dumps(doc, indent=1) + "\n"


def _cell_json(cell: CellPair) -> dict:
    return {"cell": cell.key, "context": cell.context, "concurrency": cell.concurrency,
            "base_status": cell.base_status, "new_status": cell.new_status,
            "figures": [{**asdict(p), "ratio": p.ratio} for p in cell.figures]}


def render_side_by_side_json(c: SideBySide) -> str:
    """Every figure of every cell, both engines, and the exit code (0)."""
    doc = {"kind": "inproc-side-by-side", "version": SIDE_BY_SIDE_JSON_VERSION,
           "baseline": {"label": c.base_label, "engine": c.base_engine, "runs": c.base_runs},
           "new": {"label": c.new_label, "engine": c.new_engine, "runs": c.new_runs},
           "differences": [asdict(d) for d in c.differences], "cells": [_cell_json(x) for x in c.cells],
           "exit_code": c.exit_code}
    return json.dumps(doc, indent=1) + "\n"
