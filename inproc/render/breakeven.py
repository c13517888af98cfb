"""Where speculation pays, as text: the sweep report's section, ``break-even.json`` and ``break-even.csv``.

The three carry the same rows, built here once from :class:`~inproc.sweep.pays.CellPays`.
"""
from __future__ import annotations

import csv
import io
import math
from typing import Any

from inproc.render import fmt
from inproc.render.definitions import Definition, doc
from inproc.sweep import breakeven as be
from inproc.sweep import pays as sp
from inproc.sweep.pays import CellPays
from inproc.units import format_tokens

BREAK_EVEN_JSON, BREAK_EVEN_CSV = "break-even.json", "break-even.csv"
BREAK_EVEN_VERSION = 1  # 1 — 2026-12-06: first format (see :func:`to_json`)
SUMMARY_HEAD = ["Context", "Requests at once", "Verdict", "Break-even length", "95 % interval", "Measured range",
                "Speedup", "Left out"]
POINT_HEAD = ["Variant", "Acceptance length", "Total tok/s", "± (std. error)", "Time per output token"]
CSV_HEAD = ["Context", "Requests at once", "Variant", "Speculative", "Acceptance length", "Total tok/s",
            "Total tok/s std. error", "Time per output token (ms)", "Verdict", "Break-even length",
            "Break-even low", "Break-even high", "Speedup at", "Speedup", "Speedup low", "Speedup high"]


def _num(v: float | None, digits: int = 2) -> str:
    return fmt.DASH if v is None or not math.isfinite(v) else f"{v:.{digits}f}"


def speedup_text(p: CellPays) -> str:
    s = p.speedup
    if s is None:
        return fmt.DASH
    where = "" if s.inside else ", extrapolated"
    return f"{s.ratio:.2f}× at {s.at:g} [{s.low:.2f}, {s.high:.2f}]{where}"


def verdict_text(p: CellPays) -> str:
    """``pays above 2.71 [2.55, 2.90]``, ``never pays (2.00-3.50)``, ``undetermined: why``."""
    b = p.break_even
    if b.verdict in (be.PAYS_ABOVE, be.PAYS_BELOW):
        return f"{b.verdict} {b.length:.2f} [{b.low:.2f}, {b.high:.2f}]"
    if b.verdict in (be.ALWAYS, be.NEVER):
        return f"{b.verdict} over {b.lowest:.2f}-{b.highest:.2f}"
    return f"{b.verdict}: {b.reason}"


def summary_values(p: CellPays) -> list[str]:
    b = p.break_even
    measured = f"{b.lowest:.2f}-{b.highest:.2f}" if b.lowest is not None else fmt.DASH
    interval = f"[{b.low:.2f}, {b.high:.2f}]" if b.low is not None else fmt.DASH
    return [format_tokens(p.context), str(p.concurrency), b.verdict if b.verdict != be.UNDETERMINED else verdict_text(p),
            _num(b.length), interval, measured, speedup_text(p), "; ".join(p.left_out)]


def point_values(q: sp.SpecPoint) -> list[str]:
    return [q.name, _num(q.acceptance), fmt.tok_s(q.tok_s), fmt.tok_s(q.tok_s_se), fmt.ms(q.tpot_ms, 1)]


def cell_points(p: CellPays) -> list[sp.SpecPoint]:
    """The base first, then the speculative points by acceptance length."""
    return ([p.base] if p.base else []) + list(p.points)


def markdown_lines(pays: tuple[CellPays, ...], table) -> list[str]:
    """The report's section (empty without the analysis); ``table`` renders a Markdown table."""
    if not pays:
        return []
    lines = ["", "## Where speculation pays", "",
             "x: each variant's measured mean acceptance length; the break-even is where the fitted speculative "
             "tok/s meets the variant without speculation.", "",
             table(SUMMARY_HEAD, [summary_values(p) for p in pays])]
    for p in pays:
        points = cell_points(p)
        lines += ["", f"### {format_tokens(p.context)} × {p.concurrency}: {verdict_text(p)}", "",
                  table(POINT_HEAD, [point_values(q) for q in points]) if points else "No variant on the curve."]
    return lines


def definitions() -> list[Definition]:
    return [Definition("Break-even length", doc(be, full=True)),
            Definition("Total tok/s std. error", doc(sp.tok_s_error)),
            Definition("Time per output token", doc(sp.tpot_ms))]


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


def to_json(pays: tuple[CellPays, ...]) -> dict[str, Any]:
    """``break-even.json``: {break_even_version, level, cells: [{context, concurrency, verdict, reason, break_even,
    low, high, measured_range, speedup {at, ratio, low, high, inside_measured_range} | null, points [{variant, name,
    speculative, acceptance, total_tok_s, total_tok_s_se, subwindows, tpot_ms}], left_out}]}."""
    return {"break_even_version": BREAK_EVEN_VERSION, "level": be.LEVEL, "cells": [_cell_json(p) for p in pays]}


def to_csv(pays: tuple[CellPays, ...]) -> str:
    """One row per cell and point, the cell's break-even and speedup repeated on each; numbers unformatted."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CSV_HEAD)
    blank = lambda v: "" if v is None else v  # noqa: E731
    for p in pays:
        b, s = p.break_even, p.speedup
        tail = [b.verdict, blank(b.length), blank(b.low), blank(b.high)]
        tail += [s.at, s.ratio, s.low, s.high] if s else ["", "", "", ""]
        for q in cell_points(p):
            w.writerow([p.context, p.concurrency, q.name, "no" if q is p.base else "yes", blank(q.acceptance), q.tok_s,
                        q.tok_s_se, blank(q.tpot_ms), *tail])
    return out.getvalue()
