"""Two engines on one grid, the compare subject's other view: one row per cell and figure, each engine's value and
their ratio (:class:`SideBySideView`), built once for text, Markdown and HTML.

No mark, no verdict: the ratio is information (new ÷ baseline, the second engine over the first).
"""
from __future__ import annotations

from dataclasses import dataclass

from inproc.compare.side_by_side import Pair, SideBySide
from inproc.render.compare.lines import runs_text
from inproc.render.fmt import DASH
from inproc.render.writers import Table
from inproc.units import format_tokens

TITLE = "two engines side by side"
FOLDED = ("profile.engine_args", "profile.env")  # counted in the header, each key in the JSON


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
    lines = [f"Two engines side by side: {c.base_label} ({runs_text(c.base_runs)}, {c.base_engine}) and "
             f"{c.new_label} ({runs_text(c.new_runs)}, {c.new_engine}); ratio = {c.new_engine} ÷ {c.base_engine}",
             "No regression verdict between two engines (exit 0). Figures of several runs are their means."]
    named = [d.describe() for d in c.differences if not d.key.startswith(FOLDED)]
    folded = {f: sum(1 for d in c.differences if d.key.startswith(f + ".")) for f in FOLDED}
    named += [f"{n} {f.removeprefix('profile.')} keys" for f, n in folded.items() if n]
    if named:
        lines.append("Differ: " + "; ".join(named) + (" (--format json names each)" if any(folded.values()) else ""))
    return lines


@dataclass(frozen=True)
class SideBySideView:
    """What every format of two engines side by side shows, built once (:func:`side_by_side_view`)."""

    title: str
    header: tuple[str, ...]  # the sides, the no-verdict note, the keys that differ
    table: Table  # a status row per cell, then its figures


def side_by_side_view(c: SideBySide) -> SideBySideView:
    return SideBySideView(TITLE, tuple(header_lines(c)),
                          Table(tuple(columns(c)), tuple(tuple(r) for r in table_rows(c))))
