"""Two engines on one grid as text, Markdown and JSON: one row per cell and figure, each engine's value and their ratio.

No mark, no verdict: the ratio is information (new ÷ baseline, the second engine over the first).
"""
from __future__ import annotations

import json
from dataclasses import asdict

from inproc.compare.side_by_side import CellPair, Pair, SideBySide
from inproc.render.fmt import DASH
from inproc.units import format_tokens

FOLDED = ("profile.engine_args", "profile.env")  # counted in the header, each key in the JSON
SIDE_BY_SIDE_JSON_VERSION = 1  # history: 1 — 2026-12-01, first format


def _value(p: Pair, v: float | None) -> str:
    if v is None:
        return DASH
    if p.unit == "%":
        return f"{v * 100:.1f} %"
    text = f"{v:,.1f}" if v >= 10 else f"{v:.2f}"
    return f"{text} {p.unit}" if p.unit else text


def table_rows(c: SideBySide) -> list[list[str]]:
    """A status row per cell, then a row per figure either engine has, as text under :func:`columns`."""
    rows = []
    for cell in c.cells:
        name = f"{format_tokens(cell.context)} x {cell.concurrency}"
        rows.append([name, "Status", cell.base_status or "(not run)", cell.new_status or "(not run)", ""])
        for p in cell.figures:
            if p.base is None and p.new is None:
                continue
            ratio = p.ratio
            rows.append(["", p.label, _value(p, p.base), _value(p, p.new), f"{ratio:.3f}" if ratio is not None else DASH])
    return rows


def columns(c: SideBySide) -> list[str]:
    """The table's column names (the engines' names in the middle)."""
    return ["Cell", "Figure", c.base_engine, c.new_engine, "Ratio"]


def header_lines(c: SideBySide) -> list[str]:
    """The two sides, the no-verdict note and the keys that differ, a line each."""
    runs = lambda n: f"{n} runs" if n > 1 else "1 run"
    lines = [f"Two engines side by side: {c.base_label} ({runs(c.base_runs)}, {c.base_engine}) and "
             f"{c.new_label} ({runs(c.new_runs)}, {c.new_engine}); ratio = {c.new_engine} ÷ {c.base_engine}",
             "No regression verdict between two engines (exit 0). Figures of several runs are their means."]
    named = [d.describe() for d in c.differences if not d.key.startswith(FOLDED)]
    folded = {f: sum(1 for d in c.differences if d.key.startswith(f + ".")) for f in FOLDED}
    named += [f"{n} {f.removeprefix('profile.')} keys" for f, n in folded.items() if n]
    if named:
        lines.append("Differ: " + "; ".join(named) + (" (--format json names each)" if any(folded.values()) else ""))
    return lines


def render_side_by_side_text(c: SideBySide) -> str:
    """For a terminal: the header, then aligned rows (a status row per cell, then its figures)."""
    table = [columns(c)] + table_rows(c)
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    lines = header_lines(c) + [""] + ["  ".join(f"{v:<{w}}" for v, w in zip(r, widths)).rstrip() for r in table]
    return "\n".join(lines) + "\n"


def render_side_by_side_markdown(c: SideBySide) -> str:
    """As GitHub Markdown (for ``$GITHUB_STEP_SUMMARY``)."""
    esc = lambda t: t.replace("|", "\\|")
    cols = columns(c)
    lines = ["## inproc compare: two engines side by side", ""] + [f"- {esc(h)}" for h in header_lines(c)] + [""]
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(esc(v) for v in r) + " |" for r in table_rows(c)]
    return "\n".join(lines) + "\n"


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
