"""The HTML report's charts, built from a run record's rows and raw telemetry traces."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inproc.measure import metrics as m
from inproc.record.schema import DecodeEntry, RunRecord
from inproc.render.matrix import Grid, headline
from inproc.render.measurements import PREFILL, Measurement
from inproc.render.svg import Chart, Series, downsample
from inproc.telemetry.series import SampleSeries
from inproc.telemetry.trace import TelemetryTrace
from inproc.types import GRAPH_MODES
from inproc.units import format_tokens

SMALL_WIDTH, SMALL_HEIGHT = 300, 180  # one small multiple of the telemetry panel


def prefill_chart(rows: list[Measurement]) -> Chart | None:
    """Prompt tok/s against context (log scale), one point per Valid prefill row."""
    pts = sorted((r.context, r.total_tok_s) for r in rows if r.phase == PREFILL and headline(r))
    if not pts:
        return None
    ticks = tuple((x, format_tokens(x)) for x, _ in pts)
    return Chart("Cold prefill: prompt tok/s by context", "context (tokens)", "prompt tok/s",
                 (Series("prompt tok/s", [x for x, _ in pts], [y for _, y in pts]),), log_x=True, x_ticks=ticks, markers=True)


def decode_chart(grid: Grid, field: str, title: str, y_label: str) -> Chart | None:
    """One line per context: ``field`` of each headline cell against concurrency (log scale)."""
    series = []
    for L in grid.contexts:
        cells = [grid.cell(L, C) for C in grid.concurrency]
        ys = [getattr(c, field) if headline(c) else None for c in cells]
        if any(y is not None for y in ys):
            series.append(Series(f"{format_tokens(L)} context", list(grid.concurrency), ys))
    if not series:
        return None
    ticks = tuple((C, str(C)) for C in grid.concurrency)
    return Chart(title, "simultaneous requests", y_label, tuple(series), log_x=True, x_ticks=ticks, markers=True)


@dataclass(frozen=True)
class Panel:
    """The telemetry small multiples of one decode cell."""

    title: str
    charts: tuple[Chart, ...]
    note: str = ""


def telemetry_panels(rec: RunRecord) -> tuple[list[Panel], str]:
    """A panel per decode cell with a telemetry trace, and why there are none when so."""
    panels = [_panel(e, e.telemetry.trace) for e in rec.decode if e.telemetry is not None]
    return panels, ("" if panels else "no cell carries a telemetry trace")


MAX_STEP_DOTS = 400  # per series in one step chart: a long window is thinned evenly


def step_panels(rec: RunRecord) -> list[Panel]:
    """Per measured decode cell: each window step's time against its batch size, coloured by CUDA-graph mode."""
    panels = []
    for e in rec.decode:
        w = m.window(e.trace) if e.trace is not None else None
        if w is None:
            continue
        s = e.trace.steps
        rows = np.arange(w.first_step, w.last_step + 1)
        size = np.where(s.num_prefill_reqs[rows] >= 0, s.num_prefill_reqs[rows] + s.num_decode_reqs[rows],
                        s.num_running[rows])
        ms = (s.t_end_s[rows] - s.t_start_s[rows]) * 1000
        modes = s.graph_mode[rows]
        series = []
        for code, name in [(-1, "mode not reported"), *enumerate(GRAPH_MODES)]:
            keep = np.flatnonzero(modes == code)
            if keep.size:
                keep = keep[np.linspace(0, keep.size - 1, min(keep.size, MAX_STEP_DOTS)).astype(int)]
                series.append(Series(name, size[keep].tolist(), ms[keep].tolist()))
        chart = Chart("Window steps: step time by batch size", "requests in the batch", "step time (ms)",
                      tuple(series), scatter=True, width=SMALL_WIDTH, height=SMALL_HEIGHT)
        panels.append(Panel(f"decode {format_tokens(e.context)} × {e.concurrency} · {e.status}", (chart,)))
    return panels


def _panel(e: DecodeEntry, trace: TelemetryTrace) -> Panel:
    name = f"decode {format_tokens(e.context)} × {e.concurrency}"
    bands = _window_band(e, trace)
    if trace.gpus:
        charts = (_gpu_chart(trace, "power_w", "Power (W)", bands), _gpu_chart(trace, "sm_clock_mhz", "SM clock (MHz)", bands))
        return Panel(f"{name} · {e.status}", charts)
    if trace.host is not None:
        note = f"GPU telemetry absent: {trace.gpu_absent_reason}" if trace.gpu_absent_reason else ""
        return Panel(f"{name} · {e.status}", (_host_chart(trace, trace.host, bands),), note)
    return Panel(f"{name} · {e.status}", (), f"absent: {trace.gpu_absent_reason}; {trace.host_absent_reason}")


def _window_band(e: DecodeEntry, trace: TelemetryTrace) -> tuple[tuple[float, float], ...]:
    """The decode window in the trace's time (seconds since sampling started), shaded."""
    w = m.window(e.trace) if e.trace else None
    if e.trace is None or w is None:
        return ()
    origin = e.trace.clock_origin_s - trace.started_s
    return ((origin + w.open_s, origin + w.close_s),)


def _gpu_chart(trace: TelemetryTrace, column: str, title: str, bands) -> Chart:
    series = []
    for g in trace.gpus:
        ts, vs = g.series.valid(column)
        xs, ys = downsample(ts - trace.started_s, vs.astype(float))
        series.append(Series(f"GPU {g.index}", xs.tolist(), ys.tolist()))
    return Chart(title, "seconds (shaded: decode window)", title, tuple(series), bands=bands, width=SMALL_WIDTH,
                 height=SMALL_HEIGHT)


def _host_chart(trace: TelemetryTrace, host: SampleSeries, bands) -> Chart:
    """Host CPU % (all CPUs) and this process's CPU % (of one core) between samples."""
    series = []
    for name, (xs, ys) in (("host CPU % (all CPUs)", _host_pct(host)), ("process CPU % of one core", _process_pct(host))):
        if xs.size:
            xs, ys = downsample(xs - trace.started_s, ys)
            series.append(Series(name, xs.tolist(), ys.tolist()))
    return Chart("CPU use", "seconds (shaded: decode window)", "CPU %", tuple(series), bands=bands, width=SMALL_WIDTH,
                 height=SMALL_HEIGHT)


def _rates(s: SampleSeries, num: str, den: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Between consecutive samples where every column read: Δnum ÷ Δden (Δtime without den)."""
    cols = [num] + ([den] if den else [])
    if any(c not in s.values for c in cols):
        return np.empty(0), np.empty(0)
    ok = np.logical_and.reduce([s.ok[c] for c in cols])
    t = s.t_s[ok]
    d_num = np.diff(s.values[num][ok])
    d_den = np.diff(s.values[den][ok]) if den else np.diff(t)
    keep = d_den > 0
    return ((t[1:] + t[:-1]) / 2)[keep], 100.0 * d_num[keep] / d_den[keep]


def _host_pct(s: SampleSeries) -> tuple[np.ndarray, np.ndarray]:
    return _rates(s, "host_busy_s", "host_total_s")


def _process_pct(s: SampleSeries) -> tuple[np.ndarray, np.ndarray]:
    return _rates(s, "process_cpu_s", None)
