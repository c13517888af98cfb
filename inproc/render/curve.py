"""The throughput–interactivity curve: per context, tok/s per GPU against tok/s per request.

As InferenceX and vLLM's dashboards plot it: x is interactivity (a request's own decode rate,
:func:`inproc.measure.metrics.per_request_tok_s`), y is throughput per GPU
(:func:`inproc.measure.metrics.tok_s_per_gpu`), one point per concurrency, a line per context
(and per run when several are drawn on one chart). Only Valid cells are points; the chart's
note says how many cells were left out and why.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from inproc import types as st
from inproc.measure.metrics import tok_s_per_gpu
from inproc.record.schema import RunRecord
from inproc.render.measurements import DECODE, Measurement
from inproc.render.svg import Chart, Series
from inproc.units import format_tokens

TITLE = "Throughput vs interactivity"
X_LABEL, Y_LABEL = "tok/s per request (interactivity)", "total tok/s per GPU"


@dataclass(frozen=True)
class Curve:
    """The chart, and the note naming the cells it leaves out."""

    chart: Chart
    note: str


def gpus(rec: RunRecord) -> int:
    """The ranks the engine ran on: the placement's world size, else its tensor-parallel size, else 1."""
    placement = rec.placement
    if placement is not None and placement.world_size:
        return int(placement.world_size)
    return int(rec.engine.settings.tensor_parallel_size or 1)


def curve_series(rows: list[Measurement], n_gpus: int, label: str = "") -> tuple[list[Series], Counter]:
    """A series per context of the Valid decode rows (by concurrency), and the statuses of the rows left out."""
    left: Counter = Counter()
    by_context: dict[int, list[Measurement]] = {}
    for r in rows:
        if r.phase != DECODE:
            continue
        if r.status != st.VALID or r.total_tok_s is None or r.per_request_tok_s is None:
            left[r.status if r.status != st.VALID else "Valid without a per-request figure"] += 1
            continue
        by_context.setdefault(r.context, []).append(r)
    series = []
    for context in sorted(by_context):
        cells = sorted(by_context[context], key=lambda r: r.concurrency)
        name = f"{label}{format_tokens(context)} context"
        series.append(Series(name, [r.per_request_tok_s for r in cells],
                             [tok_s_per_gpu(r.total_tok_s, n_gpus) for r in cells]))
    return series, left


def left_out_note(left: Counter) -> str:
    """``3 cells left out (not Valid): 2 Requests queued, 1 Over capacity``, or "" when none."""
    if not left:
        return ""
    total = sum(left.values())
    parts = ", ".join(f"{n} {status}" for status, n in sorted(left.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{total} cell{'s' if total != 1 else ''} left out (only Valid cells are points): {parts}"


def curve(runs: list[tuple[str, RunRecord, list[Measurement]]]) -> Curve | None:
    """One chart over ``runs`` ((label, record, rows); a label prefixes each line); None without decode rows."""
    series, left = [], Counter()
    for label, rec, rows in runs:
        s, l = curve_series(rows, gpus(rec), f"{label}: " if label else "")
        series += s
        left.update(l)
    if not series and not left:
        return None
    chart = Chart(TITLE, X_LABEL, Y_LABEL, tuple(series), markers=True, width=520)
    return Curve(chart, left_out_note(left))
