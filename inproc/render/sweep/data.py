"""The sweep's figures unrounded, for scripts and spreadsheets, which no other format shows: the report as CSV (one
row per cell and variant, ``inproc report DIR --format csv``), and where speculation pays as ``break-even.json``
and ``break-even.csv`` (the section's rows, ``inproc.render.sweep.breakeven``)."""
from __future__ import annotations

import csv
import io
from typing import Any

from inproc.render.measurements import graph_text
from inproc.render.sweep.breakeven import cell_points
from inproc.sweep import breakeven as be
from inproc.sweep.pays import CellPays
from inproc.sweep.summary import SweepSummary

CSV_HEAD = ["Context", "Requests at once", "Variant", "Status", "Best", "Total tok/s", "Time between tokens (ms)",
            "TTFT (ms)", "CUDA graphs (share of window steps)", "Padding waste (fraction)", "Reason", "Results file"]
BREAK_EVEN_JSON, BREAK_EVEN_CSV = "break-even.json", "break-even.csv"
BREAK_EVEN_VERSION = 1  # 1 — 2026-12-06: first format (see :func:`break_even_json`)
BREAK_EVEN_CSV_HEAD = ["Context", "Requests at once", "Variant", "Speculative", "Acceptance length", "Total tok/s",
                       "Total tok/s std. error", "Time per output token (ms)", "Verdict", "Break-even length",
                       "Break-even low", "Break-even high", "Speedup at", "Speedup", "Speedup low", "Speedup high"]


def render_sweep_csv(s: SweepSummary) -> str:
    """One row per cell and variant, numbers unformatted."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_HEAD)
    files = {v.index: v.file for v in s.variants}
    for c in s.cells:
        for r in c.rows:
            writer.writerow([c.context, c.concurrency, r.name, r.status, "yes" if r.best else "",
                             *["" if x is None else x for x in (r.total_tok_s, r.tbt_ms, r.ttft_ms)],
                             graph_text(r.graph_step_share) if r.graph_step_share else "",
                             "" if r.padding_waste is None else r.padding_waste,
                             "; ".join(x for x in (r.reason, r.disturbed) if x), files[r.index]])
    return out.getvalue()


def _cell_json(p: CellPays) -> dict[str, Any]:
    b, s = p.break_even, p.speedup
    return {"context": p.context, "concurrency": p.concurrency,
            "verdict": b.verdict, "reason": b.reason, "break_even": b.length, "low": b.low, "high": b.high,
            "measured_range": [b.lowest, b.highest] if b.lowest is not None else None,
            "speedup": None if s is None else {"at": s.at, "ratio": s.ratio, "low": s.low, "high": s.high,
                                               "inside_measured_range": s.inside},
            "points": [{"variant": q.index, "name": q.name, "speculative": q is not p.base, "acceptance": q.acceptance,
                        "total_tok_s": q.tok_s, "total_tok_s_se": q.tok_s_se, "subwindows": q.subwindows,
                        "tpot_ms": q.tpot_ms} for q in cell_points(p)],
            "left_out": list(p.left_out)}


def break_even_json(pays: tuple[CellPays, ...]) -> dict[str, Any]:
    """``break-even.json``: {break_even_version, level, cells: [{context, concurrency, verdict, reason, break_even,
    low, high, measured_range, speedup {at, ratio, low, high, inside_measured_range} | null, points [{variant, name,
    speculative, acceptance, total_tok_s, total_tok_s_se, subwindows, tpot_ms}], left_out}]}."""
    return {"break_even_version": BREAK_EVEN_VERSION, "level": be.LEVEL, "cells": [_cell_json(p) for p in pays]}


def break_even_csv(pays: tuple[CellPays, ...]) -> str:
    """One row per cell and point, the cell's break-even and speedup repeated on each; numbers unformatted."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(BREAK_EVEN_CSV_HEAD)
    blank = lambda v: "" if v is None else v  # noqa: E731
    for p in pays:
        b, s = p.break_even, p.speedup
        tail = [b.verdict, blank(b.length), blank(b.low), blank(b.high)]
        tail += [s.at, s.ratio, s.low, s.high] if s else ["", "", "", ""]
        for q in cell_points(p):
            w.writerow([p.context, p.concurrency, q.name, "no" if q is p.base else "yes", blank(q.acceptance), q.tok_s,
                        q.tok_s_se, blank(q.tpot_ms), *tail])
    return out.getvalue()
