"""The matrix on a terminal: prefill row, then total tok/s and TTFT by context x concurrency.

Every line fits in :data:`WIDTH` columns: an 8 x 8 matrix (contexts 8K..1019K x
concurrency 1..128) prints a cell as its figure and a short mark, with a legend of the
marks that appear under it, and TTFT in a grid of its own.
"""
from __future__ import annotations

import textwrap
from typing import Callable

from inproc import types as st
from inproc.measure.metrics import wall_per_window
from inproc.record.schema import RunRecord
from inproc.render import kernels
from inproc.render.fmt import DASH, ms, num, tok_s
from inproc.render.matrix import Grid, decode_grid, disturbed_warnings, headline
from inproc.render.measurements import PREFILL, Measurement, measurements
from inproc.units import format_tokens

WIDTH = 120  # columns: every line of the terminal matrix fits
MAX_WARNINGS = 8  # disturbed cells named under the terminal matrix; the report names them all

#: A cell's short mark, and what the legend says it means.
MARKS = {
    st.QUEUED: ("q", "Requests queued (figures kept, flagged)"),
    st.OVER_CAPACITY: ("cap", "Over capacity (not run)"),
    st.EXCEEDS_MAX_LEN: ("len", "Exceeds max model length (not run)"),
    st.LOOPED: ("loop", "Looped (figures not shown)"),
    st.ERROR: ("err", "Error (the reason is in the report)"),
    st.PENDING: ("…", "Pending (not measured yet)"),
}
THROTTLED = ("!", "throttled (figures kept, the machine slowed down)")
DISTURBED = ("~", "disturbed (figures kept, other work on the machine; left out of verdicts)")
OFF_PLAN = (DASH, "not a cell of this run (its cell list, or another shard)")


def render_matrix(rec: RunRecord) -> str:
    """The run as a few lines of text: header line, prefill row, decode grids, legend, notes."""
    s = rec.settings
    lines = _wrap(f"{rec.engine.name} {rec.engine.version} · {rec.profile.name} · "
                  f"window {s.window_s:g} s · max output {s.max_output} · prompts {s.prompt_mode}")
    rows = measurements(rec)
    prefill = [m for m in rows if m.phase == PREFILL]
    if prefill:
        lines += ["", "Prefill (cold): prompt tok/s, TTFT"]
        for m in prefill:
            val = f"{tok_s(m.total_tok_s)} / {ms(m.ttft_ms)}" if m.ttft_ms is not None else m.status
            lines.append(f"  {format_tokens(m.context):>10}  {val}")
    grid = decode_grid(s, rows, rec.shard.cells if rec.shard else None)
    if grid.contexts and grid.concurrency:
        lines += ["", "Sustained decode: total tok/s (rows: context, columns: concurrency)"]
        lines += grid_lines(grid, lambda m: tok_s(m.total_tok_s))
        lines += ["", "TTFT, ms (median)"]
        lines += grid_lines(grid, lambda m: num(m.ttft_ms))
        lines += legend(grid)
        warned = disturbed_warnings(rows)
        lines += [w for x in warned[:MAX_WARNINGS] for w in _wrap(x)]
        lines += [f"  … {len(warned) - MAX_WARNINGS} more in the report"] if len(warned) > MAX_WARNINGS else []
    lines += [w for x in kernels.text_lines(rec) for w in (_wrap(x) if x.strip() else [""])]
    windows = [e.figures.window_s for e in rec.decode if e.figures is not None]
    ratio = wall_per_window(rec.measure_s, windows)
    if ratio is not None:
        lines += [""] + _wrap(f"time: {rec.measure_s:,.1f} s measuring, {sum(windows):,.1f} s of it in decode windows "
                              f"(wall ÷ windows {ratio:.2f})")
    for note in rec.notes:
        lines += _wrap(f"note: {note}")
    return "\n".join(lines)


def mark(m: Measurement) -> str:
    """The cell's short mark: ``q``, ``!``, ``~`` or several after a figure; the status's mark where no figure is shown."""
    if not headline(m):
        return MARKS[m.status][0] if m.status in MARKS else OFF_PLAN[0] if m.status == DASH else m.status
    return ((MARKS[st.QUEUED][0] if m.status == st.QUEUED else "") + (THROTTLED[0] if m.throttled else "")
            + (DISTURBED[0] if m.disturbed else ""))


def grid_lines(grid: Grid, figure: Callable[[Measurement], str]) -> list[str]:
    """One line per context: ``figure`` of each cell with its mark, right-aligned under the concurrency."""
    def cell(m: Measurement) -> str:
        return " ".join(p for p in (figure(m), mark(m)) if p) if headline(m) else mark(m)

    labels = [format_tokens(L) for L in grid.contexts]
    cells = [[cell(grid.cell(L, C)) for C in grid.concurrency] for L in grid.contexts]
    lw = max(len(x) for x in [*labels, "Context"])
    w = max([len(c) for row in cells for c in row] + [len(str(C)) for C in grid.concurrency])
    out = [f"  {'Context':>{lw}} " + "".join(f" {C:>{w}}" for C in grid.concurrency)]
    out += [f"  {label:>{lw}} " + "".join(f" {c:>{w}}" for c in row) for label, row in zip(labels, cells)]
    return out


def legend(grid: Grid) -> list[str]:
    """What each mark in the grid means, for the marks that appear (none for an all-Valid matrix)."""
    shown = [grid.cell(L, C) for L in grid.contexts for C in grid.concurrency]
    statuses = {m.status for m in shown}
    used = [MARKS[s] for s in st.STATUSES if s in statuses and s in MARKS]
    used += [THROTTLED] if any(m.throttled and headline(m) for m in shown) else []
    used += [DISTURBED] if any(m.disturbed and headline(m) for m in shown) else []
    used += [OFF_PLAN] if DASH in statuses else []
    lines = ["marks:"]
    for item in (f"{m} {meaning}" for m, meaning in used):  # an item is never split over two lines
        if len(lines[-1]) + 3 + len(item) > WIDTH:
            lines.append(" ")
        lines[-1] += f"{' ·' if lines[-1].strip() not in ('', 'marks:') else ''} {item}"
    return ["", *lines] if used else []


def _wrap(text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, subsequent_indent="  ", break_on_hyphens=False) or [""]
