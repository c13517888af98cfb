"""The matrix on a terminal: prefill row, then total tok/s by context x concurrency."""
from __future__ import annotations

from inproc.measure.metrics import wall_per_window
from inproc.record.schema import RunRecord
from inproc.render.fmt import ms, tok_s
from inproc.render.matrix import cell_parts, decode_grid
from inproc.render.measurements import PREFILL, measurements
from inproc.units import format_tokens


def render_matrix(rec: RunRecord) -> str:
    """The run as a few lines of text: header line, prefill row, decode grid, notes."""
    s = rec.settings
    lines = [f"{rec.engine.name} {rec.engine.version} · {rec.profile.name} · "
             f"window {s.window_s:g} s · max output {s.max_output} · prompts {s.prompt_mode}"]
    rows = measurements(rec)
    prefill = [m for m in rows if m.phase == PREFILL]
    if prefill:
        lines += ["", "Prefill (cold): prompt tok/s, TTFT"]
        for m in prefill:
            val = f"{tok_s(m.total_tok_s)} / {ms(m.ttft_ms)}" if m.ttft_ms is not None else m.status
            lines.append(f"  {format_tokens(m.context):>10}  {val}")
    grid = decode_grid(s, rows, rec.shard.cells if rec.shard else None)
    if grid.contexts and grid.concurrency:
        lines += ["", "Sustained decode: total tok/s · TTFT (rows: context, columns: concurrency)"]
        cells = [[" · ".join(cell_parts(grid.cell(L, C))) for C in grid.concurrency] for L in grid.contexts]
        width = max([len(c) for row in cells for c in row] + [6])
        lines.append(f"  {'Context':>10}  " + "  ".join(f"{C:>{width}}" for C in grid.concurrency))
        for L, row in zip(grid.contexts, cells):
            lines.append(f"  {format_tokens(L):>10}  " + "  ".join(f"{c:>{width}}" for c in row))
    windows = [e.figures.window_s for e in rec.decode if e.figures is not None]
    ratio = wall_per_window(rec.measure_s, windows)
    if ratio is not None:
        lines += ["", f"time: {rec.measure_s:,.1f} s measuring, {sum(windows):,.1f} s of it in decode windows "
                      f"(wall ÷ windows {ratio:.2f})"]
    for note in rec.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)
