"""The run report's view: the tables and notes its Markdown and HTML pages share (:class:`ReportView`: the
prefill rows, the sustained-decode grid with its legend, TTFT note and warnings, the KV-cache usage matrix, all
measurements and their definitions), built once from a run record; ``markdown`` and ``html`` place these (HTML
as a heatmap, with its charts), so a column added here shows in both. The terminal's matrix (``text``) shows
figures with short marks instead, and the CSV (``csv``) every column unformatted.
"""
from __future__ import annotations

from dataclasses import dataclass

from inproc.record.schema import RunRecord
from inproc.render import fmt
from inproc.render.definitions import shown_definitions
from inproc.render.header import Header, build_header
from inproc.render.kv_matrix import kv_grid
from inproc.render.matrix import Grid, decode_grid, disturbed_warnings, legend_lines, throttle_warnings, ttft_note
from inproc.render.measurements import PREFILL, Measurement, measurements, shown_columns
from inproc.render.writers import Table
from inproc.units import format_tokens

PREFILL_HEAD = ("Context", "Prompt tok/s", "TTFT", "Status", "Samples")
PREFILL_NOTE = "prompt tok/s by context length (cold: nothing served from the prefix cache)"
DECODE_NOTE = "total tok/s · rows are context length, columns are simultaneous requests"


@dataclass(frozen=True)
class DecodeView:
    """The sustained-decode matrix: its grid (each format draws a cell its own way), and the notes under it."""

    grid: Grid
    legend: tuple[str, ...]  # a line per non-Valid status shown, then the disturbed flag's
    ttft: str  # how TTFT was measured (the prompt mode)
    warnings: tuple[str, ...]  # throttled and disturbed entries, cells measured again


@dataclass(frozen=True)
class ReportView:
    """What the run report's Markdown and HTML show, built once (:func:`report_view`)."""

    rows: tuple[Measurement, ...]  # every entry, prefill first (the charts read them)
    header: Header
    prefill: Table | None  # None: no prefill row
    decode: DecodeView | None  # None: no decode cell planned
    kv: Table | None  # None: no cell has a KV figure or an estimate
    measurements: Table | None  # None: nothing measured yet
    reason_column: int | None  # the measurements' Reason column (HTML lets it wrap)
    definitions: tuple[tuple[str, str], ...]  # the columns shown, and the window and prefill terms


def _prefill(rows: list[Measurement]) -> Table | None:
    prefill = [m for m in rows if m.phase == PREFILL]
    if not prefill:
        return None
    return Table(PREFILL_HEAD, tuple((format_tokens(m.context), fmt.tok_s(m.total_tok_s), fmt.ms(m.ttft_ms), m.status,
                                      fmt.num(m.completed)) for m in prefill))


def _decode(rec: RunRecord, rows: list[Measurement]) -> DecodeView | None:
    grid = decode_grid(rec.settings, rows, rec.shard.cells if rec.shard else None)
    if not (grid.contexts and grid.concurrency):
        return None
    return DecodeView(grid, tuple(legend_lines(rows, grid)), ttft_note(rec.settings.prompt_mode),
                      tuple(throttle_warnings(rows) + disturbed_warnings(rows)))


def _kv(rec: RunRecord) -> Table | None:
    g = kv_grid(rec)
    if g is None:
        return None
    return Table(("Context", *map(str, g.concurrency)),
                 tuple((format_tokens(L), *(g.cells.get((L, C), "") or "–" for C in g.concurrency)) for L in g.contexts))


def report_view(rec: RunRecord) -> ReportView:
    rows = measurements(rec)
    cols = shown_columns(rows) if rows else []
    names = [c.name for c in cols]
    table = Table(tuple(names), tuple(tuple(c.text(c.value(m)) for c in cols) for m in rows)) if rows else None
    return ReportView(tuple(rows), build_header(rec), _prefill(rows), _decode(rec, rows), _kv(rec), table,
                      names.index("Reason") if "Reason" in names else None,
                      tuple((d.label, d.text) for d in shown_definitions(names)) if rows else ())
