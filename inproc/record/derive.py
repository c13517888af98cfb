"""Entries from raw records: figures, telemetry and verdict derived by today's definitions.

The runner calls these right after measuring; the loader calls the same functions on
the raw records of a file, so stored figures are never trusted and an old file is
judged as a new one would be.
"""
from __future__ import annotations

from typing import Sequence

from inproc import types as st
from inproc.measure import metrics as m
from inproc.measure.figures import decode_figures, prefill_figures
from inproc.measure.judge import Verdict, judge_decode, judge_prefill
from inproc.measure.loops import LoopSettings, judge_cell_loops
from inproc.measure.peaks import Peaks
from inproc.measure.trace import CellTrace
from inproc.plan.matrix import CellPlan
from inproc.record.schema import DecodeEntry, PrefillEntry
from inproc.telemetry.trace import TelemetryTrace
from inproc.telemetry.window import over_window
from inproc.types import Capacity


def error_verdict(error: BaseException) -> Verdict:
    """An entry whose measurement raised: Error, with the exception as the reason."""
    return Verdict(st.ERROR, f"{type(error).__name__}: {error}", ())


def prefill_entry(context: int, samples: Sequence[CellTrace], telemetry: TelemetryTrace | None) -> PrefillEntry:
    """A measured cold-prefill entry: figures over its samples, the cold-cache check, telemetry."""
    samples = tuple(samples)
    figs = prefill_figures(list(samples))
    tel = None
    if telemetry is not None and samples:
        tel = over_window(telemetry, *m.prefill_span(samples), None)
    return PrefillEntry(context, judge_prefill(figs), samples, figs, tel)


def decode_entry(cell: CellPlan, prompt_mode: str, reproduce: str, trace: CellTrace,
                 telemetry: TelemetryTrace | None, capacity: Capacity, loops: LoopSettings,
                 peaks: Peaks | None = None, anatomy: bool = True) -> DecodeEntry:
    """A measured decode cell: figures over its window, the loop and throttle checks, the verdict.

    ``anatomy``: the plan's setting (``MatrixSettings.anatomy``); off, the cell has no step anatomy.
    """
    figs = decode_figures(trace, peaks, anatomy, capacity.allocatable_blocks)
    w = m.window(trace)
    tel = None
    if telemetry is not None and w is not None and figs is not None:
        ends = trace.steps.t_end_s[w.first_step:w.last_step + 1]
        tel = over_window(telemetry, trace.clock_origin_s + w.open_s, trace.clock_origin_s + w.close_s,
                          figs.output_tokens, ends - trace.steps.t_start_s[w.first_step:w.last_step + 1], ends)
    looped = judge_cell_loops(trace.requests, loops)
    verdict = judge_decode(figs, cell.concurrency, capacity, looped, tel.throttle_passed if tel else None,
                           estimate=cell.capacity)
    return DecodeEntry(cell.context, cell.concurrency, verdict, cell.max_tokens, prompt_mode, trace, figs,
                       cell.capacity, tel, None, reproduce)


def unmeasured_entry(cell: CellPlan, prompt_mode: str, reproduce: str, verdict: Verdict,
                     error: str | None = None) -> DecodeEntry:
    """A decode cell without a trace: not run (its verdict made beforehand), or failed (Error)."""
    return DecodeEntry(cell.context, cell.concurrency, verdict, cell.max_tokens, prompt_mode,
                       capacity_check=cell.capacity, error=error, reproduce=reproduce)
